"""The reservation journal: where every value a counter moved past went (the gap audit's source).

A `standard` reservation commits on its own, before the caller's record exists; if the caller then
rolls back, fails its INSERT or its process dies, that value is a gap. The journal says which:

- the reservation transaction appends one `reserved` line per reservation (a batch is one range),
  naming the owner process — no extra commit, one INSERT inside a transaction that commits anyway;
- when the records layer learns that its caller gave numbers up, it appends a `rolled_back` or
  `failed` line for exactly those values (a stored record needs no line: it is the proof);
- a `reserved` range with neither a record nor an outcome line, whose owner process is gone, was
  reserved by a process that died.

Numbers taken in a transaction that also writes their rows (`gapless` fields, SQLite while the
caller holds the write lock, a group-commit writer's or a committed batch's own transaction) need
no line: they commit with their rows or roll back with them, so they cannot become gaps.
"""

from __future__ import annotations

import logging
import os
import socket
import weakref
from collections.abc import Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

from autonumber.db.tables import reservation_journal

J = reservation_journal
RESERVED, ROLLED_BACK, FAILED, MOVED, SKIPPED = "reserved", "rolled_back", "failed", "moved", "skipped"
STATES = (RESERVED, ROLLED_BACK, FAILED, MOVED, SKIPPED)
"""`moved`: values an admin skipped with `autonumber counter set` (rules/counters.py); `skipped`:
values a counter jumped because a row written outside the product already held them
(engine/skip.py)."""
MAX_DETAIL = 255
MAX_JOURNAL_COUNT = 2**31 - 1
"""The journal's `count` is a 32-bit column: a longer jump is journaled as its first 2^31 − 1 values
(the counter row itself keeps the floor above the rest)."""
_APPEND = sa.insert(J)
"""Built once: a `reserved` line is appended on every reservation."""
_LINE_COLUMNS = ("field_id", "scope_key", "first_value", "count", "state", "owner", "logged_at", "caller")
log = logging.getLogger(__name__)


def _start_ticks(pid: int) -> str:
    """The process's start time in clock ticks since boot (Linux), so a reused pid is not taken
    for the process that died; '' where /proc is not there."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def owner_token(pid: int | None = None) -> str:
    """`host:pid:start` of a process (this one by default)."""
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()[:80]}:{pid}:{_start_ticks(pid)}"


MAX_CALLER = 128
"""The longest caller label the journal keeps (its column's length)."""


def caller_label(label: str | None) -> str | None:
    """A caller label as the journal keeps it: stripped, at most MAX_CALLER characters, None if empty."""
    text = (label or "").strip()
    return text[:MAX_CALLER] or None


def who(owner: str, caller: str | None) -> str:
    """`label (host:pid)` (or `host:pid`) of a journal line, as the gap audit prints it."""
    process = owner.rsplit(":", 1)[0] if owner.count(":") >= 2 else owner
    return f"{caller} ({process})" if caller else process


def owner_alive(owner: str) -> bool | None:
    """True/False for an owner on this host; None when it ran on another host (cannot tell)."""
    try:
        host, pid_text, start = owner.rsplit(":", 2)
        pid = int(pid_text)
    except ValueError:
        return None
    if host != socket.gethostname()[:80]:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return _start_ticks(pid) == start


@dataclass(frozen=True)
class Range:
    """`count` values from `first` of one counter (field, scope key)."""

    field_id: str
    scope_key: str
    first: int
    count: int


@dataclass
class Journal:
    """Writes journal lines; `enabled=False` turns the hot-path line off (the bench compares)."""

    enabled: bool = True
    owner: str = ""
    caller: str | None = None
    """The application's label for this process (connect(caller=…)), kept on every line."""

    def __post_init__(self) -> None:
        self.owner = self.owner or owner_token()

    def reserved(self, conn: Connection, rng: Range, at: datetime) -> None:
        """Append the `reserved` line inside the reservation's own transaction."""
        if not self.enabled:
            return
        line = {
            "field_id": rng.field_id,
            "scope_key": rng.scope_key,
            "first_value": rng.first,
            "count": rng.count,
            "state": RESERVED,
            "owner": self.owner,
            "logged_at": at,
            "caller": self.caller,
        }
        conn.execute(_APPEND, line)

    def params(self) -> dict[str, Any]:
        """The bind parameters `reserved_line` needs besides the reservation's own."""
        return {"b_owner": self.owner, "b_caller": self.caller}

    def outcome(self, db: Engine, ranges: Sequence[tuple[Range, str, str]]) -> None:
        """Append `rolled_back` / `failed` lines on a connection of their own.

        Called while the caller's transaction is ending: a failure here must not mask the caller's
        own error, so it is logged and the audit then reports those values as "outcome not
        recorded" — the numbers themselves are unaffected.
        """
        if not self.enabled or not ranges:
            return
        rows = [
            {
                "field_id": r.field_id,
                "scope_key": r.scope_key,
                "first_value": r.first,
                "count": r.count,
                "state": state,
                "owner": self.owner,
                "detail": detail[:MAX_DETAIL],
                "caller": self.caller,
            }
            for r, state, detail in ranges
        ]
        try:
            with db.begin() as conn:
                conn.execute(sa.insert(J), rows)
        except sa.exc.DBAPIError as exc:
            log.warning("reservation journal: could not record %d outcome(s): %s", len(rows), exc)


def reserved_line(bumped: sa.CTE) -> sa.Insert:
    """The `reserved` line as an INSERT from the increment's returned row (`next_value` after it,
    `last_modified_date` = the clock sample), for a backend that folds it into the increment.
    Binds: b_field_id, b_scope_key, b_n (as the increment's), b_owner and b_caller (`Journal.params`)."""
    n = sa.bindparam("b_n", type_=sa.BigInteger)
    values = sa.select(
        sa.bindparam("b_field_id", type_=J.c.field_id.type),
        sa.bindparam("b_scope_key", type_=J.c.scope_key.type),
        bumped.c.next_value - n,
        n,
        sa.literal(RESERVED, J.c.state.type),
        sa.bindparam("b_owner", type_=J.c.owner.type),
        bumped.c.last_modified_date,
        sa.bindparam("b_caller", type_=J.c.caller.type),
    )
    return sa.insert(J).from_select(list(_LINE_COLUMNS), values)


def prune(conn: Connection, before: datetime) -> int:
    """Delete journal lines logged before `before`; return how many."""
    return int(conn.execute(sa.delete(J).where(J.c.logged_at < before)).rowcount or 0)


MAX_AGE = timedelta(days=36500)
"""The longest age `parse_age` accepts (a century): older is no date a database clock can subtract."""


def parse_age(text: str) -> timedelta:
    """`90d`, `12h`, `30m` → a timedelta of at most MAX_AGE; ValueError otherwise."""
    minutes = {"d": 1440, "h": 60, "m": 1}
    if len(text) < 2 or text[-1] not in minutes or not text[:-1].isascii() or not text[:-1].isdigit():
        raise ValueError(text)
    age = int(text[:-1]) * minutes[text[-1]]
    if age > MAX_AGE.total_seconds() // 60:
        raise ValueError(text)
    return timedelta(minutes=age)


def lines_for(conn: Connection, field_id: str, scope_keys: Iterable[str] | None = None) -> list[sa.Row[Any]]:
    """Every journal line of a field (optionally only some scopes), oldest first."""
    stmt = sa.select(J).where(J.c.field_id == field_id).order_by(J.c.Id)
    if scope_keys is not None:
        stmt = stmt.where(J.c.scope_key.in_(list(scope_keys)))
    return list(conn.execute(stmt))


# -- the caller's outcome ----------------------------------------------------------------------

PENDING = "autonumber.journal_pending"
"""Key in `Connection.info`: the values this transaction holds that were reserved off it."""


@dataclass
class Pending:
    """Values a caller's transaction holds; written as `state` lines if that transaction rolls back."""

    journal: Journal
    db: Engine
    ranges: list[Range]
    state: str = ROLLED_BACK
    detail: str = ""


def track(conn: Connection, pending: Pending) -> None:
    """Remember `pending` until `conn`'s transaction ends; only on an engine that watch() watches
    (a caller's connection from another engine would keep it for ever)."""
    if pending.ranges and pending.journal.enabled and _watched(conn.engine):
        conn.info.setdefault(PENDING, []).append(pending)


_WATCHED: weakref.WeakSet[Engine] = weakref.WeakSet()
"""Engines found watched: asking SQLAlchemy's event registry costs a caller's insert 6 µs."""


def _watched(engine: Engine) -> bool:
    if engine in _WATCHED:
        return True
    if event.contains(engine, "commit", _on_commit):
        _WATCHED.add(engine)
        return True
    return False


def _on_commit(conn: Connection) -> None:
    conn.info.pop(PENDING, None)


def _on_rollback(conn: Connection) -> None:
    """Runs while the caller's error propagates: it must never raise over that error. On a
    connection the database killed even `conn.info` raises, and those values are then left as
    `reserved` lines (the audit reports them as "outcome not recorded")."""
    try:
        held: list[Pending] | None = conn.info.pop(PENDING, None)
        if held:
            _release(conn)
        for p in held or ():
            p.journal.outcome(p.db, [(r, p.state, p.detail) for r in p.ranges])
    except Exception as exc:  # the caller's error is the one to see; this is logged for operators
        log.warning("reservation journal: outcome of a rolled-back transaction not recorded: %s", exc)


def _release(conn: Connection) -> None:
    """Roll the caller's transaction back on the driver before the journal write waits for a
    reservation connection: SQLAlchemy runs this hook BEFORE its own ROLLBACK (which then finds
    nothing to undo), and a reservation may hold that connection while it waits for a row this
    transaction locked (a gapless counter row) — a deadlock until the pool's timeout. A connection
    that cannot roll back has ended its transaction on the server anyway; SQLAlchemy's own
    ROLLBACK then reports it as usual."""
    with suppress(Exception):  # SQLAlchemy's ROLLBACK right after this raises what matters
        conn.connection.dbapi_connection.rollback()  # type: ignore[union-attr]


def watch(engine: Engine) -> None:
    """Write the outcome lines of rolled-back transactions on `engine` (installed once)."""
    if not event.contains(engine, "commit", _on_commit):
        event.listen(engine, "commit", _on_commit)
        event.listen(engine, "rollback", _on_rollback)
