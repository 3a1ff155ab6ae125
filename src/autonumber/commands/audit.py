"""The gap audit of a field and pruning the reservation journal."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from autonumber.audit import Gap, GapReport, audit_gaps
from autonumber.db import dialect_for
from autonumber.engine.journal import prune
from autonumber.runtime import Platform
from autonumber.write.values import check_text

from .session import opened, platform


def gaps_on(
    p: Platform, field: str, *, scope_key: str | None = None, lo: int | None = None, hi: int | None = None
) -> GapReport:
    """Every value `field`'s counters moved past that no stored record carries, with the reason."""
    if scope_key is not None:
        check_text(scope_key, "the scope key")  # PostgreSQL refuses NUL in a bound value
    return audit_gaps(p, field, scope_key=scope_key, lo=lo, hi=hi)


def gaps(
    url: str, field: str, *, scope_key: str | None = None, lo: int | None = None, hi: int | None = None
) -> GapReport:
    """`gaps_on` for the database at `url`."""
    with platform(url) as p:
        return gaps_on(p, field, scope_key=scope_key, lo=lo, hi=hi)


def prune_journal(url: str, age: timedelta) -> int:
    """Delete journal lines older than `age` by the database's clock; how many were deleted."""
    with opened(url) as engine, engine.begin() as conn:
        return prune(conn, dialect_for(engine).utc_now(conn) - age)


def gap_json(gap: Gap) -> dict[str, Any]:
    """One gap run as JSON: its fields, its count and ISO 8601 times (`audit gaps --json`, `field show`)."""
    return {
        "scope_key": gap.scope_key,
        "first": gap.first,
        "last": gap.last,
        "count": gap.count,
        "reason": gap.reason,
        "numbers": gap.numbers,
        "reserved_at": None if gap.reserved_at is None else gap.reserved_at.isoformat(),
        "released_at": None if gap.released_at is None else gap.released_at.isoformat(),
        "caller": gap.caller,
    }
