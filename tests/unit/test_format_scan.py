"""Scope keys and scan patterns: 5a, the render/scan round trip, per_prefix keys, metacharacters."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from autonumber.errors import FormatError, TokenResolveError
from autonumber.format import SCOPES, parse_format
from autonumber.format.render import reference_render

AT = datetime(2026, 4, 17, 9, 30, tzinfo=UTC)
CROSS = {"Account.BillingCountryCode": "SG", "RecordType.RecordTypeCode": "CSA"}

_ZONES = st.integers(-14 * 60, 14 * 60).map(lambda m: timezone(timedelta(minutes=m)))


@given(at=st.datetimes(timezones=_ZONES), prefix=st.sampled_from(["", "IBG-B-", "X.", "9"]))
def test_5a_per_day_key_equals_rendered_date(at: datetime, prefix: str) -> None:
    f = parse_format(prefix + "{YYYY}{MM}{DD}-{000000}")
    rendered = f.render(1, at)
    assert f.scope_key("per_day", at) == rendered[len(prefix) : len(prefix) + 8]
    assert f.scan_pattern().match(rendered) is not None


def test_scope_keys_examples() -> None:
    f = parse_format("{Account.BillingCountryCode}-{RecordType.RecordTypeCode}-{YY}{MM}{DD}-{00}")
    assert f.scope_key("global", AT, CROSS) == ""
    assert f.scope_key("per_day", AT, CROSS) == "20260417"
    assert f.scope_key("per_prefix", AT, CROSS) == "SG-CSA-260417-"
    # the key is the text around the counter: a different literal is a different counter
    g = parse_format("{Account.BillingCountryCode}/{RecordType.RecordTypeCode}/{YY}{MM}{DD}/{00}")
    assert g.scope_key("per_prefix", AT, CROSS) == "SG/CSA/260417/"


@pytest.mark.parametrize(
    ("fmt", "key"),
    [
        ("{YYYY}-{0000}", "2026-"),
        ("INV-{YYYY}-{0000}", "INV-2026-"),
        ("{YY}{MM}-{0000}", "2604-"),
        ("{DD}{MM}{YYYY}-{0000}", "17042026-"),
        ("{MM}{DD}-{0000}", "0417-"),  # no year shown: values repeat yearly, so does the key
        ("{0000}", ""),
        ("{0000}-{YYYY}", "{#}-2026"),
        ("Q{0000}/{Account.BillingCountryCode}", "Q{#}/SG"),
        ("{YYYY}-{Account.BillingCountryCode}-{MM}-{Account.BillingCountryCode}{0}", "2026-SG-04-SG"),
        ("{Account.BillingCountryCode}{YYYY}{RecordType.RecordTypeCode}{0}", "SG2026CSA"),
    ],
)
def test_per_prefix_key_precision_and_order(fmt: str, key: str) -> None:
    f = parse_format(fmt)
    assert f.scope_key("per_prefix", AT, CROSS) == key
    rendered = f.render(3, AT, CROSS)
    m = f.scan_pattern().match(rendered)
    assert m is not None and m.counter == 3
    assert m.scope_key("per_prefix") == key


def test_per_prefix_values_rendering_the_same_text_share_a_key() -> None:
    """SG + TCSA and SGT + CSA render SGTCSA-01: one counter, not two."""
    f = parse_format("{Account.BillingCountryCode}{RecordType.RecordTypeCode}-{00}")
    bcc, rtc = "Account.BillingCountryCode", "RecordType.RecordTypeCode"
    k1 = f.scope_key("per_prefix", AT, {bcc: "SG", rtc: "TCSA"})
    k2 = f.scope_key("per_prefix", AT, {bcc: "SGT", rtc: "CSA"})
    assert k1 == k2 == "SGTCSA-"
    g = parse_format("{A.X}-{B.Y}-{0}")
    assert g.scope_key("per_prefix", AT, {"A.X": "SG-X", "B.Y": "Y"}) == g.scope_key(
        "per_prefix", AT, {"A.X": "SG", "B.Y": "X-Y"}
    )
    with pytest.raises(TokenResolveError):
        g.scope_key("per_prefix", AT, {"A.X": "a"})


def test_long_per_prefix_key_becomes_a_digest() -> None:
    f = parse_format("{A.X}-{0}")
    short = f.scope_key("per_prefix", AT, {"A.X": "x" * 61})
    assert short == "x" * 61 + "-" and len(short) == 62
    long1 = f.scope_key("per_prefix", AT, {"A.X": "y" * 62})  # 63 characters: still kept
    assert long1 == "y" * 62 + "-"
    k1 = f.scope_key("per_prefix", AT, {"A.X": "z" * 63})
    k2 = f.scope_key("per_prefix", AT, {"A.X": "z" * 64})
    assert len(k1) == len(k2) == 64 and k1 != k2
    assert k1[:48] == "z" * 47 + "#"
    value = f.render(5, AT, {"A.X": "z" * 63})
    m = f.scan_pattern().match(value)
    assert m is not None and m.scope_key("per_prefix") == k1


def test_counter_between_cross_values_is_ambiguous() -> None:
    assert parse_format("{A.X}-{0}-{B.Y}").counter_position_varies
    assert parse_format("{A.X}{0}{B.Y}").counter_position_varies
    assert not parse_format("{A.X}-{0}-{A.X}").counter_position_varies
    assert not parse_format("{A.X}{B.Y}-{0}-{YYYY}").counter_position_varies
    assert not parse_format("{0}-{A.X}{B.Y}").counter_position_varies


def test_unknown_scope_is_rule_9() -> None:
    f = parse_format("{0}")
    with pytest.raises(FormatError) as info:
        f.scope_key("per_month", AT)
    assert info.value.rule == 9 and "per_day" in str(info.value)


def test_metacharacters_are_literal() -> None:
    f = parse_format("CAT.{0000}")
    sp = f.scan_pattern()
    assert sp.match("CATX0001") is None
    assert sp.match("CAT.0001") is not None
    for fmt, wrong, right in [
        ("a+b{0}", "aab1", "a+b1"),
        ("(x)?{0}", "1", "(x)?1"),
        ("[1]{0}", "11", "[1]1"),
        ("$^{0}", "1", "$^1"),
        ("a|b{0}", "b1", "a|b1"),
    ]:
        assert parse_format(fmt).scan_pattern().match(wrong) is None
        assert parse_format(fmt).scan_pattern().match(right) is not None


def test_counter_is_exactly_the_width() -> None:
    sp = parse_format("ALL-{00}").scan_pattern()
    assert sp.match("ALL-01") is not None
    assert sp.match("ALL-1") is None
    assert sp.match("ALL-100") is None  # beyond the width: not a value this format renders
    assert sp.match("ALL-01\n") is None
    assert sp.match("ALL-٠١") is None  # non-ASCII digits
    assert sp.pattern == "^ALL\\-(?P<counter>[0-9]{2})$"
    assert parse_format("ALL-{00}").scan_pattern() is sp  # cached


def test_scan_rejects_impossible_or_inconsistent_dates() -> None:
    sp = parse_format("{YYYY}{MM}{DD}-{0}").scan_pattern()
    assert sp.match("20260230-1") is None
    assert sp.match("20261301-1") is None
    assert sp.match("20240229-1") is not None
    twice = parse_format("{YYYY}-{0}-{YY}").scan_pattern()
    assert twice.match("2026-1-26") is not None
    assert twice.match("2026-1-25") is None
    same = parse_format("{A.X}-{0}-{A.X}").scan_pattern()
    m = same.match("SG-1-SG")
    assert m is not None and m.cross == {"A.X": "SG"}
    assert same.match("SG-1-MY") is None


def test_scan_match_per_day_needs_a_full_date() -> None:
    m = parse_format("{YYYY}{MM}-{0}").scan_pattern().match("202604-1")
    assert m is not None and m.date == "202604"
    with pytest.raises(FormatError) as info:
        m.scope_key("per_day")
    assert info.value.rule == 9
    full = parse_format("{YY}{MM}{DD}-{0}").scan_pattern().match("260417-1")
    assert full is not None and full.scope_key("per_day") == "20260417"
    assert full.scope_key("global") == ""


# ---- round trip over random valid formats ---------------------------------------------------

_LITERAL = st.text(alphabet="ABCXYZ019 .-_^$*+?()[]|\\/#", min_size=1, max_size=5)
_DATE = st.sampled_from(["{YYYY}", "{YY}", "{MM}", "{DD}", "{HH}", "{mm}", "{ss}", "{FYYYY}", "{FYY}"])
_CROSS = st.sampled_from(["{Account.Code}", "{RecordType.RecordTypeCode}", "{Opp.Stage}", "{Opp.Kind|none}"])


@st.composite
def formats(draw: st.DrawFn) -> str:
    """A valid format; cross tokens are never adjacent, so their values cannot blur together."""
    parts: list[str] = draw(st.lists(st.one_of(_LITERAL, _DATE, _CROSS), max_size=7))
    parts.insert(draw(st.integers(0, len(parts))), "{" + "0" * draw(st.integers(1, 18)) + "}")
    out: list[str] = []
    for p in parts:
        if out and "." in out[-1] and out[-1].startswith("{") and "." in p and p.startswith("{"):
            out.append("~")
        out.append(p)
    return "".join(out)


# cross values use letters no literal uses, and never digits: every value reads back one way
_VALUE = st.text(alphabet="abcdefg", min_size=1, max_size=6)


@given(
    fmt=formats(),
    data=st.data(),
    at=st.datetimes(datetime(2000, 1, 1), datetime(2099, 12, 31, 23), timezones=st.just(UTC)),
)
def test_round_trip_render_then_scan(fmt: str, data: st.DataObject, at: datetime) -> None:
    f = parse_format(fmt)
    counter = data.draw(st.integers(0, 10**f.counter_width - 1))
    fiscal = data.draw(st.integers(1, 12))
    cross = {r.key: data.draw(_VALUE) for r in f.cross_refs if r.default is None or data.draw(st.booleans())}
    value = f.render(counter, at, cross, fiscal_year_start=fiscal)
    assert value == reference_render(f.tokens, counter, at, cross, fiscal)
    m = f.scan_pattern().match(value)
    assert m is not None, (f.scan_pattern().pattern, value)
    assert m.counter == counter
    assert m.cross == {r.key: cross.get(r.key) or str(r.default) for r in f.cross_refs}
    assert m.scope_key("per_prefix") == f.scope_key("per_prefix", at, cross, fiscal_year_start=fiscal)
    assert m.scope_key("global") == f.scope_key("global", at, cross) == ""
    if f.key_plan.full_date:
        assert m.scope_key("per_day") == f.scope_key("per_day", at, cross)
    else:
        with pytest.raises(FormatError):
            m.scope_key("per_day")


@given(fmt=formats(), junk=st.text(alphabet="abc0123456789-.", min_size=1, max_size=3))
def test_scan_rejects_a_value_with_extra_text(fmt: str, junk: str) -> None:
    f = parse_format(fmt)
    assume(not f.cross_refs)
    value = f.render(1, datetime(2026, 4, 17, tzinfo=UTC))
    assert f.scan_pattern().match(value + junk) is None


def test_scopes_constant() -> None:
    assert SCOPES == ("global", "per_day", "per_prefix")
