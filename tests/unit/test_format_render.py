"""Renderer: the pass examples, cases 1, 2 and 6, time zones, null cross values, the compiled path."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autonumber.errors import CounterOverflow, TokenResolveError
from autonumber.format import parse_format
from autonumber.format.render import reference_render

AT = datetime(2026, 4, 17, 9, 30, tzinfo=UTC)
SG = {"Account.BillingCountryCode": "SG", "RecordType.RecordTypeCode": "CSA"}


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [  # the pass examples, counter=1, assignedAt=2026-04-17 UTC
        ("{0000}", "0001"),
        ("{00000000}", "00000001"),
        ("IBG-B-{YYYY}{MM}{DD}-{000000}", "IBG-B-20260417-000001"),
        ("{Account.BillingCountryCode}-CSA-{YY}{MM}{DD}-{00}", "SG-CSA-260417-01"),
        ("{Account.BillingCountryCode}-QT-{YY}{MM}{DD}-{00}", "SG-QT-260417-01"),
        ("{Account.BillingCountryCode}-ORD-{YY}{MM}{DD}-{00}", "SG-ORD-260417-01"),
        ("{RecordType.RecordTypeCode}-{YY}{MM}{DD}-{00}", "CSA-260417-01"),
    ],
)
def test_pass_examples_render_exactly(fmt: str, expected: str) -> None:
    assert parse_format(fmt).render(1, AT, SG) == expected


def test_case_1_basic_render() -> None:
    f = parse_format("{0000}")
    for n in range(1, 1000):
        assert f.render(n, AT) == str(n).zfill(4)
    assert f.render(999, AT) == "0999"


def test_case_2_date_render() -> None:
    f = parse_format("IBG-B-{YYYY}{MM}{DD}-{000000}")
    assert f.render(3968, datetime(2026, 4, 18, tzinfo=UTC)) == "IBG-B-20260418-003968"


@pytest.mark.parametrize("width", [1, 2, 6, 18])
def test_case_6_overflow_never_truncates(width: int) -> None:
    f = parse_format("X-{" + "0" * width + "}")
    assert f.render(10**width - 1, AT) == "X-" + "9" * width
    with pytest.raises(CounterOverflow) as info:
        f.render(10**width, AT, field_id="fld_1", scope_key="20260417")
    err = info.value
    assert (err.field_id, err.scope_key, err.value, err.width) == (
        "fld_1",
        "20260417",
        10**width,
        width,
    )
    with pytest.raises(CounterOverflow):
        f.render(-1, AT)


def test_instants_are_rendered_in_utc() -> None:
    f = parse_format("{YYYY}{MM}{DD}-{0}")
    tokyo = timezone(timedelta(hours=9))
    assert f.render(1, datetime(2026, 4, 18, 8, 0, tzinfo=tokyo)) == "20260417-1"
    assert f.render(1, datetime(2026, 4, 17, 23, 59)) == "20260417-1"  # naive = UTC
    assert f.render(1, datetime(2099, 12, 31, 23, tzinfo=UTC)) == "20991231-1"
    assert parse_format("{YY}-{0}").render(1, datetime(2005, 1, 1, tzinfo=UTC)) == "05-1"


@pytest.mark.parametrize("cross", [None, {}, {"Account.BillingCountryCode": ""}])
def test_missing_cross_value_fails_closed(cross: dict[str, str] | None) -> None:
    f = parse_format("{Account.BillingCountryCode}-{00}")
    with pytest.raises(TokenResolveError) as info:
        f.render(1, AT, cross, field_id="fld_c")
    assert info.value.cause == "target null"
    assert info.value.token == "{Account.BillingCountryCode}"
    assert info.value.field_id == "fld_c"


def test_literals_that_look_like_code_render_verbatim() -> None:
    tricky = "a'b\"c\\d %s%%f'{x}' €-"  # control characters such as \n are refused (rule 11)
    tricky = tricky.replace("{", "(").replace("}", ")")
    f = parse_format(tricky + "{00}" + tricky)
    assert f.render(7, AT) == tricky + "07" + tricky


def test_format_pickles_by_source() -> None:
    f = parse_format("P-{YYYY}-{000}")
    g = pickle.loads(pickle.dumps(f))
    assert g == f and g.render(5, AT) == "P-2026-005"


_LIT = st.text(  # rule 11 refuses control characters, surrogates and line breaks
    st.characters(blacklist_characters="{}", blacklist_categories=("Cc", "Cs", "Zl", "Zp")),
    min_size=1,
    max_size=6,
)
_TOK = st.sampled_from(
    [
        "{YYYY}",
        "{YY}",
        "{MM}",
        "{DD}",
        "{HH}",
        "{mm}",
        "{ss}",
        "{FYYYY}",
        "{FYY}",
        "{A.X}",
        "{RecordType.Code}",
    ]
)


@given(
    pieces=st.lists(st.one_of(_LIT, _TOK), max_size=6),
    width=st.integers(1, 18),
    where=st.integers(0, 6),
    data=st.data(),
    at=st.datetimes(max_value=datetime(9998, 12, 31), timezones=st.just(UTC)),
    fiscal=st.integers(1, 12),
)
def test_compiled_renderer_equals_reference(
    pieces: list[str], width: int, where: int, data: st.DataObject, at: datetime, fiscal: int
) -> None:
    pieces.insert(min(where, len(pieces)), "{" + "0" * width + "}")
    f = parse_format("".join(pieces))
    counter = data.draw(st.integers(0, 10**width - 1))
    cross = {"A.X": data.draw(_LIT), "RecordType.Code": data.draw(_LIT)}
    shown = f.render(counter, at, cross, fiscal_year_start=fiscal)
    assert shown == reference_render(f.tokens, counter, at, cross, fiscal)
    assert len(f.render(10**width - 1, at, cross)) == f.max_length({k: len(v) for k, v in cross.items()})


def test_null_default_renders_when_the_value_is_missing_or_empty() -> None:
    f = parse_format("{Account.BillingCountryCode|XX}-{0000}")
    assert f.render(1, AT, {}) == "XX-0001"
    assert f.render(1, AT, {"Account.BillingCountryCode": ""}) == "XX-0001"
    assert f.render(1, AT, {"Account.BillingCountryCode": "SG"}) == "SG-0001"
    assert f.scope_key("per_prefix", AT, {}) == "XX-"
    assert f.max_length({"Account.BillingCountryCode": 1}) == len("XX-0001")
    assert f.cross_refs[0].literal == "{Account.BillingCountryCode}"
    with pytest.raises(TokenResolveError):
        parse_format("{Account.BillingCountryCode}-{0000}").render(1, AT, {})


@given(
    before=st.text(alphabet="AZ-_ %'\\é\"º", max_size=6),
    after=st.text(alphabet="AZ-_ %'\\é\"º", max_size=6),
    width=st.integers(1, 12),
    first=st.integers(0, 10**7),
    count=st.integers(0, 40),
)
def test_a_fixed_run_is_what_render_makes_of_each_number(
    before: str, after: str, width: int, first: int, count: int
) -> None:
    """The batch path of a format that is fixed text around its counter: the same values as
    `render`, one by one; None once the last number does not fit (render raises for it)."""
    escaped = before.replace("{", "").replace("}", ""), after.replace("{", "").replace("}", "")
    fmt = parse_format(f"{escaped[0]}{{{'0' * width}}}{escaped[1]}")
    run = fmt.fixed_run(first, count)
    if first + count > 10**width:
        assert run is None
        with pytest.raises(CounterOverflow):
            fmt.render(first + count - 1, AT)
        return
    assert run == [fmt.render(n, AT) for n in range(first, first + count)]


def test_a_format_with_anything_but_text_and_counter_has_no_fixed_run() -> None:
    assert parse_format("IBG-B-{YYYY}{MM}{DD}-{000000}").fixed_run(1, 3) is None
    assert parse_format("{Account.BillingCountryCode}-{00}").fixed_run(1, 3) is None
