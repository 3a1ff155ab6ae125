"""Parser: the grammar (docs/formats.md), rules 0-2, positions, hints, robustness and linear time."""

from __future__ import annotations

import contextlib
import random
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autonumber.errors import FormatError
from autonumber.format import MAX_WIDTH, CrossRef, TokenKind, parse_format


@pytest.mark.parametrize(
    ("fmt", "rule", "position"),
    [
        ("AUTO-", 1, None),  # no counter token
        ("{0000}-{0000}", 1, 7),  # two counter tokens
        ("{YYYY}", 1, None),  # no counter token
        ("{hh}-{0000}", 0, 0),  # unknown date token
        ("{0000000000000000000}", 2, 0),  # width 19 > 18
        ("{}", 0, 0),  # empty
        ("{", 0, 0),  # unclosed
        ("", 0, None),
        ("AB}{0000}", 0, 2),
        ("{00{00}}", 0, 0),
        ("{proj-0000}", 0, 0),  # prefix inside braces (in the wild, negative)
        ("PE-(00000000)", 1, None),  # doc shorthand: parentheses are literal text, no counter
        ("QL-XXXXX", 1, None),
        ("########", 1, None),
        ("{A.B.C.D.E}-{0000}", 8, 0),  # four hops: deeper than chains go (rule 8)
        ("{Opp.RecordType.Code}-{0000}", 8, 0),  # a record-type token has no path
        ("{Opp.Account.Code}{Account.Code}-{0000}", 8, 18),  # one field, two paths
        ("{ 0000 }", 0, 0),
        ("{yyyy}{0000}", 0, 0),
        ("{Account.}{0000}", 0, 0),
        ("{1Account.Name}{0000}", 0, 0),
        ("X-{0000}-{hh}", 0, 9),
        ("Q-\x00{00000000}", 11, 2),  # NUL (PostgreSQL cannot store it)
        ("Q-{0000}\n", 11, 8),  # newline
        ("\tQ-{0000}", 11, 0),
        ("Q\x7f-{0000}", 11, 1),  # DEL
        ("Q\x85-{0000}", 11, 1),  # C1 next line
        ("Q-{0000}\ud800", 11, 8),  # lone surrogate
        ("Q\u2028{0000}", 11, 1),  # line separator
        ("{Account.Code|}-{0000}", 0, 0),  # empty default
        ("{Account.Code|" + "X" * 33 + "}-{0000}", 0, 0),  # default too long
        ("{Account.Code| X}-{0000}", 0, 0),  # default with an edge space
        ("{Account.Code|X|Y}-{0000}", 0, 0),  # '|' inside the default
        ("{Account.Code|X}{Account.Code|Y}-{0000}", 0, 16),  # two defaults for one field
        ("{YYYY|X}-{0000}", 0, 0),  # a default on a date token
        ("{Account.Code|X\tY}-{0000}", 11, 15),  # control character in the default
        ("{fyyyy}-{0000}", 0, 0),
        ("{MI}-{0000}", 0, 0),
    ],
)
def test_rejects_with_rule_and_position(fmt: str, rule: int, position: int | None) -> None:
    with pytest.raises(FormatError) as info:
        parse_format(fmt)
    assert info.value.rule == rule
    assert info.value.position == position
    assert info.value.format == fmt
    assert str(info.value).startswith(f"rule {rule}: format ")
    assert "\n" not in str(info.value)


def test_control_character_message_names_the_code_point_and_encodes() -> None:
    with pytest.raises(FormatError) as info:
        parse_format("Q-\ud800{0000}")
    message = str(info.value)
    assert "U+D800" in message and "position 2" in message
    message.encode("utf-8")  # a lone surrogate is escaped in the message, so it can be written out


def test_messages_are_actionable() -> None:
    def msg(fmt: str) -> str:
        with pytest.raises(FormatError) as info:
            parse_format(fmt)
        return str(info.value)

    assert msg("AUTO-") == 'rule 1: format "AUTO-" has no counter token; add one such as {0000}'
    assert "valid tokens are" in msg("{hh}-{0000}") and "{YYYY}" in msg("{hh}-{0000}")
    assert "proj-{0000}" in msg("{proj-0000}")
    assert "did you mean {YYYY}" in msg("{yyyy}{0000}")
    assert "1..18" in msg("{" + "0" * 19 + "}")
    long_msg = msg("x" * 5000 + "{hh}")
    assert len(long_msg) < 400 and "position 5000" in long_msg


@pytest.mark.parametrize(
    ("fmt", "width"),
    [  # custom formats seen in the wild (Salesforce orgs)
        ("Account SC-{0000}", 4),
        ("ALL-{0}", 1),
        ("RD-Schedule-{0000000000}", 10),
        ("RDCH-{0000000}", 7),
        ("GS{0000}", 4),
        ("{000000}", 6),
        ("DI-{000000}", 6),
        ("AF-{000000}", 6),
        ("INV-{YYYY}-{000000}", 6),
        ("{YYYY}-{000000}", 6),
        ("{MM}{DD}-{0000}", 4),
        ("MSJ-{00000000}", 8),
        ("N-{0000}", 4),
        ("{" + "0" * MAX_WIDTH + "}", MAX_WIDTH),
    ],
)
def test_accepts_formats_from_the_wild(fmt: str, width: int) -> None:
    f = parse_format(fmt)
    assert f.counter_width == width
    assert "".join(t.text for t in f.tokens) == fmt  # tokens tile the source exactly


def test_tokens_and_cross_refs() -> None:
    f = parse_format(
        "{Account.BillingCountryCode}-{RecordType.RecordTypeCode}-{YY}{MM}{DD}-{00}"
        "/{Account.BillingCountryCode}"
    )
    kinds = [t.kind for t in f.tokens]
    assert kinds[:3] == [TokenKind.CROSS, TokenKind.LITERAL, TokenKind.TAXONOMY]
    assert f.date_kinds == ("YY", "MM", "DD")
    assert f.has_date
    assert f.counter_width == 2
    assert f.cross_refs == (
        CrossRef("{Account.BillingCountryCode}", "Account", "BillingCountryCode", False),
        CrossRef("{RecordType.RecordTypeCode}", "RecordType", "RecordTypeCode", True),
    )
    assert f.cross_refs[0].key == "Account.BillingCountryCode"
    assert [t.position for t in f.tokens][:4] == [0, 28, 29, 56]
    assert not parse_format("{0000}").has_date


def test_parse_is_cached() -> None:
    assert parse_format("CACHE-{0000}") is parse_format("CACHE-{0000}")


def test_random_strings_raise_only_format_error() -> None:
    rng = random.Random(20260417)
    alphabet = "{}{}0000YMD.AaZz_-| \\$^(?é\n" + "0" * 6
    tokens = ["{0000}", "{YYYY}", "{MM}", "{DD}", "{YY}", "{Account.Name}", "{RecordType.X}", "{"]
    ok = 0
    for _ in range(100_000):
        if rng.random() < 0.5:
            s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        else:
            s = "".join(rng.choice(tokens + list(alphabet)) for _ in range(rng.randint(0, 8)))
        try:
            parse_format(s)
            ok += 1
        except FormatError as exc:
            assert 0 <= exc.rule <= 11
    assert ok > 0  # the generator reaches valid formats too


@given(st.text())
def test_any_text_parses_or_raises_format_error(text: str) -> None:
    try:
        f = parse_format(text)
    except FormatError as exc:
        assert exc.format == text and 0 <= exc.rule <= 11
    else:
        assert "".join(t.text for t in f.tokens) == text


def _best_time(fmt: str) -> float:
    """This thread's CPU time (not the wall clock, which counts other processes on a loaded
    machine) for the best of 3 parses."""
    best = float("inf")
    for _ in range(3):
        parse_format.cache_clear()
        t = time.thread_time()
        with contextlib.suppress(FormatError):
            parse_format(fmt)
        best = min(best, time.thread_time() - t)
    return best


@pytest.mark.parametrize(
    "make",
    [
        lambda n: "A." + "x{YYYY}" * (n // 7) + "{0000}",  # valid, many tokens
        lambda n: "".join(f"{{O{i}.F}}-" for i in range(n // 10)) + "{0}",  # many cross refs
        lambda n: "ab" * (n // 2) + "{hh}",  # error at the very end
        lambda n: "{0}" + "{" + "a" * n,  # unclosed brace after a long run
        lambda n: "{0}" * (n // 3),  # every counter after the first is an error
    ],
)
def test_parse_time_is_linear(make: object) -> None:
    assert callable(make)
    small, large = _best_time(make(10_000)), _best_time(make(100_000))
    # 10x the input: linear is ~10x; quadratic would be ~100x. Allow noise, not a square.
    assert large / max(small, 1e-5) < 35


def test_new_date_tokens_and_defaults_parse() -> None:
    f = parse_format("T-{YYYY}{MM}{DD}{HH}{mm}{ss}-{FYYYY}{FYY}-{Account.Code|XX}{Account.Code|XX}{000}")
    assert f.date_kinds == ("YYYY", "MM", "DD", "HH", "mm", "ss", "FYYYY", "FYY")
    assert [r.default for r in f.cross_refs] == ["XX"]
    assert "{Account.Code|XX}" in [t.text for t in f.tokens]


def test_case_hint_names_the_time_tokens() -> None:
    with pytest.raises(FormatError) as info:
        parse_format("{hh}-{0000}")
    assert "did you mean {HH}?" in str(info.value)
