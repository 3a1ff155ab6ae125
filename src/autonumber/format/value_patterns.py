"""Patterns matching a format's values: the anchored regex that reads the counter, date and cross
values back out of a value (docs/setup.md), and the LIKE pattern a query narrows a column with."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, tzinfo

from autonumber.errors import FormatError

from .dates import DATE_PARTS
from .scope import KeyPlan, check_scope_name, date_component, prefix_key
from .tokens import TIME_KINDS, Token, TokenKind, quote_format
from .zones import local_time

LIKE_ESCAPE = "\\"
"""The escape character of `like_pattern` (pass it as the LIKE's ESCAPE)."""


@dataclass(frozen=True)
class ScanMatch:
    """What a stored value says: its counter, its date at the format's precision, its cross values."""

    counter: int
    date: str | None
    cross: dict[str, str]
    _plan: KeyPlan = field(repr=False, compare=False)
    _source: str = field(default="", repr=False, compare=False)
    prefix: str = field(default="", compare=False)
    suffix: str | None = field(default=None, compare=False)
    """The value's text before and after its counter (suffix None: nothing follows the counter)."""

    def scope_key(self, scope: str) -> str:
        """The key Format.scope_key would have produced when this value was rendered."""
        check_scope_name(scope, self._source)
        if scope == "global":
            return ""
        if scope == "per_day":
            if self.date is None or not self._plan.full_date:
                raise FormatError(
                    9,
                    f"format {quote_format(self._source)} does not show a full date "
                    "({YYYY} or {YY}, {MM} and {DD}), so a stored value cannot name its day",
                    format=self._source,
                )
            return self.date
        return prefix_key(self.prefix, self.suffix)


class ScanPattern:
    """An anchored regex for one format; `match()` also checks that repeated tokens agree."""

    def __init__(self, tokens: Sequence[Token], plan: KeyPlan, source: str) -> None:
        self._plan = plan
        self._source = source
        self._date_groups: list[tuple[str, TokenKind]] = []
        self._cross_groups: dict[str, str] = {}  # cross key -> group name
        self.pattern = "^" + "".join(self._piece(t) for t in tokens) + "$"
        self._has_suffix = tokens[-1].kind is not TokenKind.COUNTER
        self.regex = re.compile(self.pattern, re.DOTALL)  # a value may hold a newline

    def _piece(self, tok: Token) -> str:
        if tok.kind is TokenKind.LITERAL:
            return re.escape(tok.text)
        if tok.kind is TokenKind.COUNTER:
            return f"(?P<counter>[0-9]{{{tok.width}}})"
        if tok.ref is not None:
            known = self._cross_groups.get(tok.ref.key)
            if known is not None:  # the same token twice must show the same value
                return f"(?P={known})"
            name = f"x{len(self._cross_groups)}"
            self._cross_groups[tok.ref.key] = name
            return f"(?P<{name}>.+?)"
        name = f"d{len(self._date_groups)}"
        self._date_groups.append((name, tok.kind))
        return f"(?P<{name}>{DATE_PARTS[tok.kind].digits})"

    def __repr__(self) -> str:
        return f"ScanPattern({self.pattern!r})"

    def match(self, value: str) -> ScanMatch | None:
        """Parse a stored value, or None when this format cannot have produced it."""
        m = self.regex.fullmatch(value)
        if m is None:
            return None
        day = None
        if self._date_groups:
            ymd = self._read_date(m)
            if ymd is None:
                return None
            day = date_component(self._plan, *ymd)
        cross = {key: m.group(name) for key, name in self._cross_groups.items()}
        start, end = m.span("counter")
        suffix = value[end:] if self._has_suffix else None
        return ScanMatch(int(m.group("counter")), day, cross, self._plan, self._source, value[:start], suffix)

    @property
    def date_groups(self) -> tuple[int, ...]:
        """1-based group numbers of the date tokens, in token order."""
        return tuple(self.regex.groupindex[name] for name, _ in self._date_groups)

    @property
    def has_suffix(self) -> bool:
        """True when tokens follow the counter (the per_prefix key then has `{#}` and a suffix)."""
        return self._has_suffix

    def day_of(self, m: re.Match[str]) -> str | None:
        """The date a match shows at the format's precision ('' without date tokens), or None for
        an impossible or inconsistent date."""
        if not self._date_groups:
            return ""
        ymd = self._read_date(m)
        return None if ymd is None else date_component(self._plan, *ymd)

    def _read_date(self, m: re.Match[str]) -> tuple[int, int, int] | None:
        """(year, month, day) with unshown units as 2000/1/1, or None for an impossible date or time
        (time and fiscal-year tokens are checked, not part of the day)."""
        found: dict[TokenKind, set[int]] = {}
        for name, kind in self._date_groups:
            found.setdefault(kind, set()).add(int(m.group(name)))
        if any(len(v) > 1 for v in found.values()):
            return None  # the same unit shown twice with different values
        one = {k: next(iter(v)) for k, v in found.items()}
        if not all(DATE_PARTS[k].readable(v) for k, v in one.items()):
            return None  # an hour, minute or second out of range
        for long, short in _YEAR_PAIRS:
            if long in one and short in one and one[long] % 100 != one[short]:
                return None
        y4, y2 = one.get(TokenKind.YEAR4), one.get(TokenKind.YEAR2)
        year = y4 if y4 is not None else 2000 + y2 if y2 is not None else 2000  # {YY} is 20YY
        month, day = one.get(TokenKind.MONTH, 1), one.get(TokenKind.DAY, 1)
        if not 1 <= day <= 31:
            return None
        try:  # 2000 is a leap year, so a format without a year accepts 0229
            date(year, month, day if TokenKind.MONTH in one else 1)
        except ValueError:
            return None
        return year, month, day


_YEAR_PAIRS = ((TokenKind.YEAR4, TokenKind.YEAR2), (TokenKind.FISCAL4, TokenKind.FISCAL2))
"""A four-digit and a two-digit year shown in one value must agree."""


def like_pattern(
    tokens: Sequence[Token],
    at: datetime,
    cross: Mapping[str, str],
    zone: tzinfo = UTC,
    fiscal_year_start: int = 1,
) -> str:
    """A LIKE pattern (escape character LIKE_ESCAPE) for the values of one scope: literals, the dates of
    `at` on the clock of `zone` and the given cross values fixed; the counter and absent cross
    values `%`; the time of day matches any digits (a per_day or global scope spans many hours)."""
    parts: list[str] = []
    at = local_time(at, zone)
    for tok in tokens:
        if tok.kind is TokenKind.COUNTER:
            parts.append("%")
        elif tok.kind is TokenKind.LITERAL:
            parts.append(_like_escape(tok.text))
        elif tok.ref is not None:
            value = cross.get(tok.ref.key)
            parts.append(_like_escape(value) if value else "%")
        else:
            part = DATE_PARTS[tok.kind]
            parts.append("_" * part.width if tok.kind in TIME_KINDS else part.render(at, fiscal_year_start))
    return "".join(parts)


def literal_like(tokens: Sequence[Token]) -> str:
    """A LIKE pattern for every value of the format, on any day and with any cross values: its
    literals fixed, everything else `%`."""
    return "".join(_like_escape(tok.text) if tok.kind is TokenKind.LITERAL else "%" for tok in tokens)


def _like_escape(text: str) -> str:
    return (
        text.replace(LIKE_ESCAPE, 2 * LIKE_ESCAPE)
        .replace("%", LIKE_ESCAPE + "%")
        .replace("_", LIKE_ESCAPE + "_")
    )
