"""Scope keys (§2, DESIGN.md §7): built from token values, never from rendered text."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo

from autonumber.errors import FormatError

from .tokens import SCOPES, Token, TokenKind, quote_format
from .zones import local_time

DATE_PART = "<date>"
"""Placeholder in a key plan for the one date component of a `per_prefix` key."""


@dataclass(frozen=True)
class KeyPlan:
    """Which values form a `per_prefix` key, in token order, and which date units the format shows."""

    parts: tuple[str, ...]  # CrossRef.key values and at most one DATE_PART
    year: bool
    month: bool
    day: bool

    @property
    def full_date(self) -> bool:
        """True when the format shows a year, a month and a day (what `per_day` needs)."""
        return self.year and self.month and self.day


def key_plan(tokens: Sequence[Token]) -> KeyPlan:
    """Derive the key plan: each distinct cross value once, the date at its first token."""
    parts: dict[str, None] = {}  # an ordered set: linear even for thousands of tokens
    kinds = {t.kind for t in tokens}
    for tok in tokens:
        if tok.ref is not None:
            parts.setdefault(tok.ref.key)
        elif tok.kind.is_date:
            parts.setdefault(DATE_PART)
    return KeyPlan(
        parts=tuple(parts),
        year=bool(kinds & {TokenKind.YEAR4, TokenKind.YEAR2}),
        month=TokenKind.MONTH in kinds,
        day=TokenKind.DAY in kinds,
    )


def date_component(plan: KeyPlan, year: int, month: int, day: int) -> str:
    """The date at the precision the format shows: YYYYMMDD, YYYYMM, YYYY (or MMDD without a year)."""
    out = f"{year:04d}" if plan.year else ""
    if plan.month:
        out += f"{month:02d}"
    if plan.day:
        out += f"{day:02d}"
    return out


def join_key(values: Sequence[str]) -> str:
    """Join key parts with `|`; `\\` and `|` inside a value are escaped so the join is injective."""
    return "|".join(v.replace("\\", "\\\\").replace("|", "\\|") for v in values)


def per_day_key(at: datetime, zone: tzinfo = UTC) -> str:
    """YYYYMMDD of the instant on the wall clock of `zone` (naive means UTC)."""
    at = local_time(at, zone)
    return f"{at.year:04d}{at.month:02d}{at.day:02d}"


def check_scope_name(scope: str, fmt: str) -> None:
    """Reject a scope that is not one of SCOPES (reported as rule 9, the scope rule)."""
    if scope not in SCOPES:
        raise FormatError(
            9,
            f"format {quote_format(fmt)}: unknown scope {scope!r}; use one of {', '.join(SCOPES)}",
            format=fmt,
        )
