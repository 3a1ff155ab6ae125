"""The largest counter already used in one lazy scope: the live column, the reservation journal and
the rows a scope change retired (rules/floor.py), so a lost or re-created row never reissues a value
that was reserved but not stored (docs/engine.md)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from autonumber.catalog.cache import CatalogSnapshot, Rule
from autonumber.format.value_patterns import LIKE_ESCAPE, like_pattern, literal_like
from autonumber.rules.floor import scope_floor

PAGE = 10_000


def live_max_reader(
    db: Engine, snapshot: Callable[[], CatalogSnapshot]
) -> Callable[[Rule, str, datetime, Mapping[str, str]], int]:
    """Build the engine's live-max function over the fresh-read pool."""

    def live_max(rule: Rule, scope_key: str, at: datetime, cross: Mapping[str, str]) -> int:
        snap = snapshot()
        best = 0
        with db.connect() as conn:
            for member in members_of(snap, rule):  # a shared counter: every member's values count
                best = max(best, _column_max(conn, snap, member, scope_key, rule.date_of(at), cross))
            best = max(best, scope_floor(conn, rule.counter_id, scope_key) - 1)
        return best

    return live_max


def members_of(snapshot: CatalogSnapshot, rule: Rule) -> list[Rule]:
    """The rules drawing from `rule`'s counter: itself, and the other members of a shared counter."""
    if rule.shared_counter is None:
        return [rule]
    cid, fid = rule.counter_id, rule.field_id
    others = [r for r in snapshot.rules.values() if r.counter_id == cid and r.field_id != fid]
    return [rule, *others]


def stored_max(conn: Connection, snapshot: CatalogSnapshot, rule: Rule, scope_key: str) -> int:
    """The largest counter stored in the scope key over every member of `rule`'s counter, on any
    day (a `global` counter spans them all): the rare path that moves a counter past values
    written behind its back (engine/skip.py) reads more rows than a lazy scope's day."""
    best = 0
    for member in members_of(snapshot, rule):
        like = literal_like(member.format.tokens)
        best = max(best, _matching_max(conn, snapshot, member, scope_key, like))
    return best


def _column_max(
    conn: Connection,
    snapshot: CatalogSnapshot,
    rule: Rule,
    scope_key: str,
    at: datetime,
    cross: Mapping[str, str],
) -> int:
    """The largest counter of `rule`'s column in the scope key (values of the day `at` shows)."""
    like = like_pattern(rule.format.tokens, at, cross, rule.zone, rule.fiscal_year_start)
    return _matching_max(conn, snapshot, rule, scope_key, like)


def _matching_max(conn: Connection, snapshot: CatalogSnapshot, rule: Rule, scope_key: str, like: str) -> int:
    """The largest counter of the column's values that match `like` and read as the scope key."""
    column = snapshot.table(rule.object_name).c[rule.field_name]
    pattern = rule.format.scan_pattern()
    stmt = sa.select(column).where(column.like(like, escape=LIKE_ESCAPE))
    best = 0
    result = conn.execute(stmt.execution_options(stream_results=True, yield_per=PAGE))
    for (value,) in result:
        match = pattern.match(value)
        if match is not None and match.scope_key(rule.scope) == scope_key:
            best = max(best, match.counter)
    return best
