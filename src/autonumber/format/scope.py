"""Scope keys: '' (global), the UTC day (per_day), or the text a value shows around its counter
(per_prefix), so two values that would render the same text always share one counter."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import TYPE_CHECKING

from autonumber.errors import FormatError

from .tokens import SCOPES, Token, TokenKind, quote_format
from .zones import local_time

if TYPE_CHECKING:
    from .model import Format

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


MAX_KEY = 64
"""`_System_AutoNumberCounter.scope_key` is VARCHAR(64)."""

COUNTER_MARK = "{#}"
"""Stands for the counter in a per_prefix key of a format with text after the counter."""

DIGEST_AT = MAX_KEY - 17


def prefix_key(prefix: str, suffix: str | None) -> str:
    """The per_prefix key: the text before the counter, then `{#}` and the text after it when the
    format has tokens after the counter (`suffix` None: it has none).

    A key of 64 characters or more becomes its first 47 characters, `#` and a 16-hex BLAKE2b
    digest of the whole key (exactly 64): keys that fit are kept as they are (≤ 63), so a shortened
    key never equals a kept one.
    """
    raw = prefix if suffix is None else prefix + COUNTER_MARK + suffix
    if len(raw) < MAX_KEY:
        return raw
    digest = hashlib.blake2b(raw.encode(), digest_size=8).hexdigest()
    return f"{raw[:DIGEST_AT]}#{digest}"


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


def validate_scope(fmt: Format, scope: str) -> None:
    """Rule 9: the scope exists, and per_day needs a format that shows year, month and day.

    Stricter than "at least one date token": per_day restarts the counter every day, so a
    format without the full date (e.g. only {YYYY}) would render the same value on two days.
    """
    check_scope_name(scope, fmt.source)
    if fmt.counter_position_varies:
        raise _rule_9(
            fmt,
            "cross-record tokens on both sides of the counter make the counter's place in "
            "a value depend on the data ({A}-{00}-{B} renders 'X-12-3-45-6' for X/12/3-45-6 and "
            "X-12-3/45/6), so two records could get the same text; keep every cross-record token "
            "on one side of the counter",
        )
    if scope == "per_day" and not fmt.key_plan.full_date:
        shown = " ".join("{" + k + "}" for k in fmt.date_kinds) or "no date token"
        raise _rule_9(
            fmt,
            f"scope per_day needs the full date in the value ({{YYYY}} or {{YY}}, {{MM}} "
            f"and {{DD}}) but the format shows {shown}; add them or use scope global/per_prefix",
        )


def _rule_9(fmt: Format, what: str) -> FormatError:
    return FormatError(9, f"format {quote_format(fmt.source)}: {what}", format=fmt.source)
