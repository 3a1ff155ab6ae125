"""The one home of date tokens (width, digits, rendering) and the LIKE pattern of a scope's values."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autonumber.format import TokenKind, parse_format
from autonumber.format.dates import DATE_PARTS, fiscal_month
from autonumber.format.render import reference_render
from autonumber.format.value_patterns import LIKE_ESCAPE, like_pattern

AT = datetime(2026, 4, 7, 23, 30, tzinfo=UTC)
_ZONES = st.integers(-14 * 60, 14 * 60).map(lambda m: timezone(timedelta(minutes=m)))


def test_every_date_kind_has_one_part() -> None:
    assert set(DATE_PARTS) == {k for k in TokenKind if k.is_date}
    assert {k.value: p.render(AT) for k, p in DATE_PARTS.items()} == {
        "YYYY": "2026",
        "YY": "26",
        "MM": "04",
        "DD": "07",
        "HH": "23",
        "mm": "30",
        "ss": "00",
        "FYYYY": "2026",
        "FYY": "26",
    }


@given(
    at=st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9998, 12, 31)), start=st.integers(1, 12)
)
def test_template_digits_and_render_agree(at: datetime, start: int) -> None:
    for part in DATE_PARTS.values():
        shown = part.render(at, start)
        ns = {"at": at, "fy": fiscal_month(start)}
        assert eval("f'" + part.template + "'", ns) == shown  # as the compiled renderer
        assert re.fullmatch(part.digits, shown)
        assert len(shown) == part.width
        assert part.readable(int(shown))


@pytest.mark.parametrize(
    ("day", "start", "fyyyy", "fyy"),
    [
        (datetime(2026, 3, 31, 23, 59, 59), 4, "2026", "26"),
        (datetime(2026, 4, 1), 4, "2027", "27"),
        (datetime(2026, 12, 31), 1, "2026", "26"),
        (datetime(2026, 1, 1), 1, "2026", "26"),
        (datetime(2026, 6, 30), 7, "2026", "26"),
        (datetime(2026, 7, 1), 7, "2027", "27"),
        (datetime(2099, 12, 1), 12, "2100", "00"),
    ],
)
def test_fiscal_year_is_named_by_the_year_it_ends(day: datetime, start: int, fyyyy: str, fyy: str) -> None:
    f = parse_format("INV/{FYYYY}/{FYY}/{00000}")
    assert f.render(1, day, fiscal_year_start=start) == f"INV/{fyyyy}/{fyy}/00001"
    assert f.scope_key("per_prefix", day, fiscal_year_start=start) == f"INV/{fyyyy}/{fyy}/"
    assert reference_render(f.tokens, 1, day, {}, start) == f"INV/{fyyyy}/{fyy}/00001"


def test_time_of_day_tokens_on_the_fields_clock() -> None:
    f = parse_format("T-{YYYY}{MM}{DD}{HH}{mm}{ss}-{000}")
    at = datetime(2026, 4, 17, 20, 5, 9, tzinfo=UTC)
    assert f.render(1, at) == "T-20260417200509-001"
    assert f.render(1, at, zone=timezone(timedelta(hours=9))) == "T-20260418050509-001"
    assert f.scope_key("per_prefix", at) == "T-20260417200509-"
    assert f.scope_key("per_day", at) == "20260417"  # per_day keys on the day alone
    m = f.scan_pattern().match("T-20260417200509-001")
    assert m is not None and m.scope_key("per_day") == "20260417"
    assert f.scan_pattern().match("T-20260417240509-001") is None  # hour 24
    assert f.scan_pattern().match("T-20260417206009-001") is None  # minute 60


def test_like_pattern_leaves_the_time_of_day_open() -> None:
    f = parse_format("T-{YYYY}{MM}{DD}{HH}{mm}{ss}-{FYY}-{000}")
    assert like_pattern(f.tokens, AT, {}, fiscal_year_start=4) == "T-20260407______-27-%"


def _like_regex(pattern: str) -> re.Pattern[str]:
    """What SQL LIKE with ESCAPE LIKE_ESCAPE matches, as a regex."""
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == LIKE_ESCAPE:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def test_like_pattern_fixes_literals_dates_and_cross_values() -> None:
    f = parse_format("A_%\\{Account.Code}-{YY}{MM}{DD}-{0000}/{RecordType.Code}")
    assert like_pattern(f.tokens, AT, {"Account.Code": "S_G"}) == ("A\\_\\%\\\\S\\_G-260407-%/%")
    assert like_pattern(f.tokens, AT, {}, timezone(timedelta(hours=8))) == "A\\_\\%\\\\%-260408-%/%"


@given(
    at=st.datetimes(timezones=_ZONES),
    counter=st.integers(0, 9999),
    code=st.text(st.sampled_from("ab_%\\-"), min_size=1, max_size=5),
)
def test_rendered_values_match_their_like_pattern(at: datetime, counter: int, code: str) -> None:
    f = parse_format("{YYYY}%_{Account.Code}{MM}-{0000}{DD}\\")
    cross = {"Account.Code": code}
    value = f.render(counter, at, cross)
    assert _like_regex(like_pattern(f.tokens, at, cross)).fullmatch(value)
