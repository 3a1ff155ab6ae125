"""What a field's next number prints as, per counter scope: rendered where the scope key and the clock
decide it, else the format with the counter filled in and the record's parts left as their tokens."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from autonumber.catalog.cache import Rule
from autonumber.format.dates import DATE_PARTS
from autonumber.format.scope import COUNTER_MARK
from autonumber.format.tokens import Token, TokenKind
from autonumber.format.zones import local_time

TIME_KINDS = frozenset({TokenKind.HOUR, TokenKind.MINUTE, TokenKind.SECOND})
"""Time-of-day tokens: a per_day key decides the day, never the time."""


@dataclass(frozen=True)
class Preview:
    """The next number of one scope as printed, and whether parts of it come from the record."""

    text: str
    depends_on_record: bool


def dated_by_record(rule: Rule) -> bool:
    """True when a record field (not the clock at insert) dates the numbers."""
    return rule.date_src == "custom_field"


def readable_prefix(key: str) -> bool:
    """A per_prefix key that keeps the value's text (a long one is kept as a digest instead)."""
    return "#" not in key or COUNTER_MARK in key


def preview(rule: Rule, scope_key: str, value: int, now: datetime) -> Preview:
    """Counter `value` of scope `scope_key` as the field prints it when a record is numbered at `now`."""
    digits = str(value).zfill(rule.format.counter_width)
    if rule.scope == "per_prefix" and scope_key and readable_prefix(scope_key):
        key = scope_key
        return Preview(key.replace(COUNTER_MARK, digits) if COUNTER_MARK in key else key + digits, False)
    if rule.scope == "per_prefix" and scope_key:
        return _pattern(rule, digits, None, False)
    if rule.scope == "per_day" and scope_key:
        today = not dated_by_record(rule) and scope_key == rule.scope_key(now)
        day = datetime.strptime(scope_key, "%Y%m%d").replace(hour=12, tzinfo=rule.zone)
        return _pattern(rule, digits, now if today else day, not today)
    return _pattern(rule, digits, None if dated_by_record(rule) else now, False)


def _pattern(rule: Rule, digits: str, at: datetime | None, name_times: bool) -> Preview:
    """The format's tokens rendered where `at` decides them; the others keep their text."""
    local = None if at is None else local_time(at, rule.zone)
    pieces = [_piece(rule, tok, digits, local, name_times) for tok in rule.format.tokens]
    return Preview("".join(text for text, _ in pieces), any(named for _, named in pieces))


def _piece(rule: Rule, tok: Token, digits: str, at: datetime | None, name_times: bool) -> tuple[str, bool]:
    """One token's text, and whether it is left named because the record decides it."""
    if tok.kind is TokenKind.LITERAL:
        return tok.text, False
    if tok.kind is TokenKind.COUNTER:
        return digits, False
    if tok.kind.is_date and at is not None and not (name_times and tok.kind in TIME_KINDS):
        return DATE_PARTS[tok.kind].render(at, rule.fiscal_year_start), False
    return (tok.ref.literal if tok.ref is not None else tok.text), True


def new_key(rule: Rule, now: datetime) -> str | None:
    """The scope key a record numbered at `now` uses, when nothing of the record decides it; None when
    it does (a record date, a cross-record token) or the scope is global."""
    if rule.scope == "global" or dated_by_record(rule) or rule.format.cross_refs:
        return None
    return rule.scope_key(now)
