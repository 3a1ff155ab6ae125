"""Shared counters (docs/changing-rules.md, "Shared counters"): several fields draw from one counter.

A field's counter rows and journal lines are keyed by its counter id: the field id for a field with
its own counter, `shared:NAME` for a member of the shared counter NAME. Members of one counter must
be numbered alike, or one member's numbers would not mean the same as another's; `mismatch` says
why a field cannot join, checked whenever a member's rule is added or changed; `overlapping` why
a field cannot leave: its own counter continues from the shared counter's next value, so a format
that can render a remaining member's text would repeat that member's numbers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from autonumber.catalog.allocation import SINGLE
from autonumber.errors import InvalidIdentifier
from autonumber.format import parse_format
from autonumber.format.overlap import may_render_same

if TYPE_CHECKING:  # stored.py reads counter_id from here
    from autonumber.catalog.stored import StoredRule

PREFIX = "shared:"
NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
MAX_NAME = 48
"""`shared:` + 48 characters fits the counter table's field_id (255) and the setup state's keys."""
SCOPES = ("global", "per_day")
"""per_prefix keys are the text around the counter, which differs between members: refused."""


def counter_id(field_id: str, shared_counter: str | None) -> str:
    """The id a field's counter rows and journal lines carry."""
    return field_id if shared_counter is None else PREFIX + shared_counter


class CounterKeyed:
    """A field's rule, as stored (StoredRule) or as the engine uses it (Rule): both key their
    counter rows and journal lines the same way."""

    field_id: str
    shared_counter: str | None

    @property
    def counter_id(self) -> str:
        """What its counter rows and journal lines are keyed by: the field id, or `shared:NAME`."""
        return counter_id(self.field_id, self.shared_counter)


def check_name(name: str) -> str:
    """A shared counter name: a letter, then letters, digits or `_` (≤ 48); InvalidIdentifier else."""
    if len(name) > MAX_NAME or not NAME.fullmatch(name):
        raise InvalidIdentifier(name, f"shared counter name (letters, digits, _; at most {MAX_NAME})")
    return name


def members(rules: Iterable[StoredRule], name: str, but: str | None = None) -> list[StoredRule]:
    """The configured members of shared counter `name` (except field `but`), by field name."""
    found = [r for r in rules if r.format and r.shared_counter == name and r.field_id != but]
    return sorted(found, key=lambda r: r.name)


def mismatch(rule: StoredRule, width: int, others: Iterable[tuple[StoredRule, int]]) -> str | None:
    """Why `rule` (counter width `width`) cannot draw from the counter its `others` (each with its
    width) draw from; None when it can. Refused: a per_prefix scope, gapless numbering; and any
    difference from a member in scope, counter width, start, allocation, and for `per_day` the time
    zone and the date source (they choose the day's counter row)."""
    name = rule.shared_counter
    if rule.scope not in SCOPES:
        return f"shared counter {name}: scope {rule.scope} cannot share a counter (use {' or '.join(SCOPES)})"
    if rule.numbering != "standard":
        return f"shared counter {name}: {rule.numbering} numbering cannot share a counter"
    for other, other_width in others:
        for what, mine, theirs in _compared(rule, width, other, other_width):
            if mine != theirs:
                return (
                    f"shared counter {name}: {what} {mine} differs from member {other.name}'s {theirs}"
                    f" (members share scope, counter width, start, allocation"
                    f"{', time zone and date source' if rule.scope == 'per_day' else ''})"
                )
    return None


def overlapping(fmt: str, name: str, remaining: Iterable[StoredRule]) -> str | None:
    """Why a field cannot leave shared counter `name` with format `fmt` while `remaining` members
    stay (a text one of them can render too); None when it can."""
    mine = parse_format(fmt)
    for other in remaining:
        if may_render_same(mine, parse_format(other.format or "")):
            return (
                f"leaving shared counter {name}: format {fmt!r} can render the same text as "
                f"member {other.name}'s {other.format!r}, and both counters go on from the same next "
                "value; leave with a format that cannot (another prefix, say)"
            )
    return None


def _compared(
    rule: StoredRule, width: int, other: StoredRule, other_width: int
) -> list[tuple[str, object, object]]:
    out: list[tuple[str, object, object]] = [
        ("scope", rule.scope, other.scope),
        ("counter width", width, other_width),
        ("start", rule.start, other.start),
        ("allocation", rule.allocation or SINGLE, other.allocation or SINGLE),
    ]
    if rule.scope == "per_day":
        out += [
            ("time zone", rule.time_zone, other.time_zone),
            ("date source", _date_source(rule), _date_source(other)),
        ]
    return out


def _date_source(rule: StoredRule) -> str:
    return rule.date_field if rule.date_src == "custom_field" and rule.date_field else rule.date_src
