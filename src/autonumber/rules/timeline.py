"""The rules a field has had, by the time each came into force (the gap audit reads old numbers).

Built from the rule log (history.log_rule: format, scope, time zone, fiscal year, shared counter of
every change) and, for the time before that log was kept, from the format history (format and
scope; the time zone and the rest as the current rule has them). The current rule is always last.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from autonumber.catalog.cache import Rule
from autonumber.errors import AutonumberError
from autonumber.format import parse_format


@dataclass(frozen=True)
class Version:
    """A rule in force from `since` (None: from before anything was recorded)."""

    since: datetime | None
    rule: Rule


def versions(
    current: Rule,
    logged: Sequence[tuple[datetime | None, Mapping[str, Any]]],
    formats: Sequence[tuple[str, str, datetime | None]],
) -> list[Version]:
    """`current`'s field's rules, oldest first; one whose format no longer parses is left out (it
    renders nothing and vouches for no value)."""
    first = min((s for s, _ in logged if s is not None), default=None)
    out = [
        Version(since, rule)
        for fmt, scope, since in formats
        if not logged or (since is not None and first is not None and since < first)
        if (rule := _as(current, {"format": fmt, "scope": scope})) is not None
    ]
    out += [Version(since, rule) for since, kept in logged if (rule := _as(current, kept)) is not None]
    out.sort(key=lambda v: (v.since is not None, v.since or datetime.min))
    if not out or _differs(out[-1].rule, current):
        out.append(Version(out[-1].since if out else None, current))
    return out


def _as(current: Rule, kept: Mapping[str, Any]) -> Rule | None:
    try:
        fmt = parse_format(str(kept["format"]))
    except (AutonumberError, KeyError):
        return None
    return replace(
        current,
        format=fmt,
        scope=str(kept.get("scope") or current.scope),
        time_zone=str(kept.get("time_zone") or current.time_zone),
        fiscal_year_start=int(kept.get("fiscal_year_start") or current.fiscal_year_start),
        shared_counter=kept.get("shared_counter", current.shared_counter),
    )


def _differs(a: Rule, b: Rule) -> bool:
    return (a.format.source, a.scope, a.time_zone, a.fiscal_year_start, a.shared_counter) != (
        b.format.source,
        b.scope,
        b.time_zone,
        b.fiscal_year_start,
        b.shared_counter,
    )


def in_force(history: Sequence[Version], scope_key: str, at: datetime | None) -> Rule:
    """The rule a value of `scope_key` reserved at `at` was numbered by: the last one in force by
    then whose scope makes such keys (`""`: global); the earliest such rule when `at` precedes them
    all, the latest when `at` is not known."""
    fits = [v for v in history if (v.rule.scope == "global") == (scope_key == "")] or list(history)
    if at is None:
        return fits[-1].rule
    by_then = [v for v in fits if v.since is None or v.since <= at]
    return by_then[-1].rule if by_then else fits[0].rule
