"""The one home of date tokens (width, digits, rendering) and the LIKE pattern of a scope's values."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from autonumber.format import TokenKind, parse_format
from autonumber.format.dates import DATE_PARTS
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
    }


@given(at=st.datetimes(min_value=datetime(1, 1, 1)))
def test_template_digits_and_render_agree(at: datetime) -> None:
    for part in DATE_PARTS.values():
        shown = part.render(at)
        assert eval("f'" + part.template + "'", {"at": at}) == shown  # as the compiled renderer
        assert re.fullmatch(part.digits, shown)
        assert len(shown) == part.width


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
