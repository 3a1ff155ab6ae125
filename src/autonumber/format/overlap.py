"""Whether two formats can render the same text: what a field leaving a shared counter is checked
with (autonumber/catalog/shared.py), since both counters continue from the same next value.

Each format is read as a sequence of one-character items: a literal character, a digit (the
counter, a date or time token: each a fixed number of digits) or "any text" (a cross-record
token, whose value and default are free text, empty included). Two such sequences can render
one text exactly when a walk through both reaches their ends together; the walk is over pairs of
positions, so it is quadratic in the formats' lengths. Letters compare without case (a
case-insensitive collation, and a reader, take `DOC-1` and `doc-1` for one number). The answer
errs towards "yes": a date that cannot occur, or a cross value no record holds, still counts.
"""

from __future__ import annotations

from .dates import DATE_PARTS
from .model import Format
from .tokens import TokenKind

_DIGIT = "digit"
_ANY = "any"
"""Item markers (a literal item is one character, so neither can be mistaken for one)."""
_DIGITS = frozenset("0123456789")


def may_render_same(a: Format, b: Format) -> bool:
    """True when some text is a value of both formats (under any counter, date or cross value)."""
    left, right = _items(a), _items(b)
    seen: set[tuple[int, int]] = set()
    todo = [(0, 0)]
    while todo:
        i, j = todo.pop()
        if (i, j) in seen:
            continue
        seen.add((i, j))
        if i == len(left) and j == len(right):
            return True
        x = left[i] if i < len(left) else None
        y = right[j] if j < len(right) else None
        if x == _ANY:  # any text may end here
            todo.append((i + 1, j))
        if y == _ANY:
            todo.append((i, j + 1))
        if x is None or y is None or (x == _ANY and y == _ANY):
            continue
        if x == _ANY:  # any text takes the character the other side shows
            todo.append((i, j + 1))
        elif y == _ANY:
            todo.append((i + 1, j))
        elif _meet(x, y):
            todo.append((i + 1, j + 1))
    return False


def _items(fmt: Format) -> list[str]:
    out: list[str] = []
    for tok in fmt.tokens:
        if tok.kind is TokenKind.LITERAL:
            out += list(tok.text.lower())
        elif tok.kind is TokenKind.COUNTER:
            out += [_DIGIT] * tok.width
        elif tok.kind.is_date:
            out += [_DIGIT] * DATE_PARTS[tok.kind].width
        else:  # a cross-record value: any text
            out.append(_ANY)
    return out


def _meet(x: str, y: str) -> bool:
    """Whether one character fits two single-character items (literal or digit)."""
    if x == _DIGIT:
        return y == _DIGIT or y in _DIGITS
    if y == _DIGIT:
        return x in _DIGITS
    return x == y
