"""The grammar (docs/formats.md): one linear pass over the format, typed tokens out, FormatError on error."""

from __future__ import annotations

import functools
import re

from autonumber.api_names import API_NAME_PATTERN
from autonumber.errors import FormatError

from .model import Format
from .tokens import (
    DATE_NAMES,
    MAX_WIDTH,
    TAXONOMY_OBJECT,
    VALID_TOKENS,
    CrossRef,
    Token,
    TokenKind,
    quote_format,
)

# A braced token, a run of literal text, or a stray brace. No nesting, so one scan is linear.
_SEGMENT = re.compile(r"\{([^{}]*)\}|([^{}]+)|([{}])")
_DOTTED = re.compile(rf"{API_NAME_PATTERN}(?:\.{API_NAME_PATTERN})+")
_PREFIXED_COUNTER = re.compile(r"(.*?)(0+)(.*)", re.DOTALL)


def _fail(rule: int, fmt: str, pos: int | None, what: str) -> FormatError:
    where = f" at position {pos}:" if pos is not None else ""
    return FormatError(rule, f"format {quote_format(fmt)}{where} {what}", format=fmt, position=pos)


_CASE_HINTS = {name.upper(): name for name in DATE_NAMES} | {"MM": "MM} (month) or {mm"}


def _hint(body: str) -> str:
    """A suggestion for a braced body that is not a token."""
    if body.upper() in _CASE_HINTS:
        return f"; tokens are case-sensitive: did you mean {{{_CASE_HINTS[body.upper()]}}}?"
    if body.strip() != body:
        return "; remove the spaces inside the braces"
    m = _PREFIXED_COUNTER.fullmatch(body)
    if m and (m.group(1) or m.group(3)) and "." not in body:
        return f"; keep literal text outside the braces, e.g. {m.group(1)}{{{m.group(2)}}}{m.group(3)}"
    return ""


def _token(fmt: str, body: str, pos: int) -> Token:
    """Classify the body of one `{…}`."""
    text = "{" + body + "}"
    if body and body.strip("0") == "":
        if len(body) > MAX_WIDTH:
            raise _fail(
                2,
                fmt,
                pos,
                f"counter token is {len(body)} digits wide; the width must be "
                f"1..{MAX_WIDTH} (BIGINT headroom), e.g. {{{'0' * MAX_WIDTH}}}",
            )
        return Token(TokenKind.COUNTER, text, pos, width=len(body))
    if body in DATE_NAMES:
        return Token(DATE_NAMES[body], text, pos)
    name, bar, default = body.partition("|")
    if _DOTTED.fullmatch(name):
        parts = name.split(".")
        if len(parts) - 1 > MAX_HOPS:
            raise _fail(
                8,
                fmt,
                pos,
                f"token {text} walks {len(parts) - 1} hops; chains have 1..{MAX_HOPS} steps",
            )
        if len(parts) > 2 and TAXONOMY_OBJECT in parts:
            what = "a record-type token is {RecordType.Field}, without a path"
            raise _fail(8, fmt, pos, f"token {text}: {what}")
        literal = "{" + name + "}"
        if bar:
            _check_default(fmt, text, default, pos)
        ref = CrossRef(
            literal,
            parts[-2],
            parts[-1],
            taxonomy=parts[0] == TAXONOMY_OBJECT,
            default=default if bar else None,
            path=tuple(parts[:-2]),
        )
        kind = TokenKind.TAXONOMY if ref.taxonomy else TokenKind.CROSS
        return Token(kind, text, pos, ref=ref)
    if bar:
        raise _fail(
            0,
            fmt,
            pos,
            f"token {text}: a default (|…) follows only a cross-record token, "
            "e.g. {Account.BillingCountryCode|XX}",
        )
    what = "empty token {}" if not body else f"unknown token {text}"
    raise _fail(0, fmt, pos, f"{what}; valid tokens are {VALID_TOKENS}{_hint(body)}")


MAX_HOPS = 3
"""Deepest chain a token walks (`{A.B.C.Field}`: source → A → B → C)."""

MAX_DEFAULT = 32
"""Longest null default of a cross-record token (`{Object.Field|XX}`)."""


def _check_default(fmt: str, text: str, default: str, pos: int) -> None:
    """Rule 0: a null default is 1..MAX_DEFAULT characters, without `|` or edge spaces (rule 11 has
    already refused control characters)."""
    if not default or len(default) > MAX_DEFAULT:
        raise _fail(
            0,
            fmt,
            pos,
            f"token {text}: a default after '|' has 1..{MAX_DEFAULT} characters ({len(default)} given)",
        )
    if "|" in default or default.strip() != default:
        raise _fail(
            0, fmt, pos, f"token {text}: a default after '|' has no '|' and no spaces at its start or end"
        )


def _check_defaults(fmt: str, tokens: list[Token]) -> None:
    """Rule 0: every token of one `Object.Field` names the same default (or none), so one record's
    value (or its default) is the same wherever the format shows it."""
    seen: dict[str, Token] = {}
    for tok in tokens:
        if tok.ref is None:
            continue
        first = seen.setdefault(tok.ref.key, tok)
        if first.ref is not None and first.ref.path != tok.ref.path:
            raise _fail(
                8,
                fmt,
                tok.position,
                f"token {tok.text} and {first.text} at position {first.position} read "
                f"{tok.ref.key} along different paths; a format reads one field one way",
            )
        if first.ref is not None and first.ref.default != tok.ref.default:
            raise _fail(
                0,
                fmt,
                tok.position,
                f"token {tok.text} and {first.text} at position {first.position} read the same "
                "field with different defaults; give every one the same default",
            )


def _stray(fmt: str, brace: str, pos: int) -> FormatError:
    if brace == "}":
        return _fail(0, fmt, pos, "'}' without a matching '{'; literal braces are not allowed")
    nxt = fmt.find("{", pos + 1)
    close = fmt.find("}", pos + 1)
    if close == -1 or (nxt != -1 and nxt < close):
        if nxt != -1 and close != -1:
            return _fail(
                0,
                fmt,
                pos,
                f"'{{' is not closed before the '{{' at position {nxt}; "
                "tokens cannot nest and literal braces are not allowed",
            )
        return _fail(0, fmt, pos, "'{' is never closed; add the '}' or remove the '{'")
    return _fail(0, fmt, pos, "stray '{'")  # pragma: no cover - the scanner never gets here


def _scan(fmt: str) -> list[Token]:
    tokens: list[Token] = []
    for m in _SEGMENT.finditer(fmt):
        pos = m.start()
        if m.group(2) is not None:
            tokens.append(Token(TokenKind.LITERAL, m.group(2), pos))
        elif m.group(3) is not None:
            raise _stray(fmt, m.group(3), pos)
        else:
            tokens.append(_token(fmt, m.group(1), pos))
    return tokens


_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029]")
"""Control characters (NUL, tab, newline, DEL, C1), lone surrogates and line/paragraph separators:
no database stores all of them, no value should carry them, and an error could not show them."""


def _check_characters(fmt: str) -> None:
    """Rule 11: a format is printable text on one line."""
    bad = _UNPRINTABLE.search(fmt)
    if bad is not None:
        what = f"character U+{ord(bad.group()):04X} is a control character, a lone surrogate or a line break"
        raise _fail(11, fmt, bad.start(), f"{what}; a format is printable text on one line")


def _check_counter(fmt: str, tokens: list[Token]) -> int:
    counters = [t for t in tokens if t.kind is TokenKind.COUNTER]
    if not counters:
        raise _fail(1, fmt, None, "has no counter token; add one such as {0000}")
    if len(counters) > 1:
        raise _fail(
            1,
            fmt,
            counters[1].position,
            f"second counter token {counters[1].text}; a format has exactly one counter "
            f"({len(counters)} found)",
        )
    return counters[0].width


@functools.lru_cache(maxsize=4096)
def parse_format(fmt: str) -> Format:
    """Parse and check a display format (rules 0-2 and 8's {A.B.C}); cached per string."""
    if not isinstance(fmt, str):
        raise FormatError(0, f"a format must be a string, not {type(fmt).__name__}")
    if not fmt:
        raise _fail(0, fmt, None, "is empty; a format needs at least a counter such as {0000}")
    _check_characters(fmt)
    tokens = _scan(fmt)
    width = _check_counter(fmt, tokens)
    _check_defaults(fmt, tokens)
    refs: dict[str, CrossRef] = {}
    for t in tokens:
        if t.ref is not None:
            refs.setdefault(t.ref.key, t.ref)
    return Format(
        source=fmt,
        tokens=tuple(tokens),
        counter_width=width,
        date_kinds=tuple(t.kind.value for t in tokens if t.kind.is_date),
        cross_refs=tuple(refs.values()),
    )
