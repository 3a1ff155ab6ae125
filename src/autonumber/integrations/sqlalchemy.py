"""SQLAlchemy ORM adapter: `autonumbered(Invoice.number, platform, format=...)` numbers new instances
at flush.

Every flush takes ONE reservation per bound column for all its new instances (`Engine.assign`), in
the order they were added to the session, on the platform's own reservation connection: the numbers
are committed before the session's INSERTs, so a rolled-back session leaves a gap and never blocks
another session's numbering. On SQLite a session that has already flushed in its transaction holds
the database's write lock: its later flushes reserve inside that transaction (the only writer
possible), so those numbers roll back with it instead of leaving a gap. A field whose rule has the
`gapless` numbering policy is always numbered inside the session's transaction.

A number is read-only once the instance is persistent: assigning another value raises
ReadOnlyAutoNumber at once, before any flush. A Core `insert()` (or an ORM bulk insert) into a
bound table bypasses the session's numbering, so one that leaves the number empty is refused
before it reaches the database.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.orm import InstrumentedAttribute, Mapper, Session, SessionTransaction, UOWTransaction

from autonumber.db.driver import blind
from autonumber.rules.store import RuleSpec
from autonumber.runtime import Platform

from .common import ReadOnlyAutoNumber, ensure_field
from .keep import NumberRefused, keep, keep_numbers, keeping

__all__ = ["Binding", "NumberRefused", "ReadOnlyAutoNumber", "autonumbered", "keep_numbers", "unbind"]

WROTE = "autonumber_wrote"
"""Session.info key: this session's transaction has flushed (on SQLite it holds the write lock)."""
_lock = threading.Lock()
_bindings: dict[tuple[type, str], Binding] = {}


@dataclass(frozen=True)
class Binding:
    """One mapped column numbered by one autonumber field."""

    cls: type
    key: str
    field_id: str
    platform: Platform
    table: sa.Table
    column: str

    def pending(self, session: Session) -> list[Any]:
        """The session's new instances of the class without a number, in the order they were added."""
        new = [obj for obj in session.new if isinstance(obj, self.cls) and getattr(obj, self.key) is None]
        return sorted(new, key=lambda obj: sa.inspect(obj).insert_order)

    def kept(self, session: Session) -> None:
        """Inside `keep_numbers()`: check the numbers new instances carry and move their counters."""
        values = [
            str(v)
            for obj in session.new
            if isinstance(obj, self.cls) and (v := getattr(obj, self.key)) is not None
        ]
        if not values:
            return
        conn = session.connection()
        gapless = self.platform.engine.rule(self.field_id).gapless
        on = conn if gapless else None
        if not gapless and session.info.get(WROTE):  # SQLite: the session may hold the write lock
            on = self.platform.dialect.reservation_conn(conn)
        keep(self.platform, self.field_id, values, conn, on)

    def number(self, session: Session, instances: list[Any]) -> None:
        """Assign numbers to `instances` with one reservation (per cross-record token group)."""
        if not instances:
            return
        conn = None
        if self.platform.engine.rule(self.field_id).gapless:
            conn = session.connection()  # gapless: in the session's transaction
        elif session.info.get(WROTE):  # SQLite: the session's transaction holds the write lock
            conn = self.platform.dialect.reservation_conn(session.connection())
        mapper: Mapper[Any] = sa.inspect(self.cls)
        records = [{p.columns[0].name: getattr(obj, p.key) for p in mapper.column_attrs} for obj in instances]
        values = self.platform.engine.assign_batch(self.field_id, records, conn)
        for obj, value in zip(instances, values, strict=True):
            setattr(obj, self.key, value)


def autonumbered(
    attribute: InstrumentedAttribute[Any],
    platform: Platform,
    *,
    format: str,
    scope: str = "global",
    start: int = 1,
    numbering: str = "standard",
    time_zone: str = "UTC",
    object_name: str | None = None,
) -> Binding:
    """Bind a mapped string column to an autonumber rule and number new instances at flush.

    `numbering="gapless"` takes the number inside the session's transaction (no gaps, callers of
    one counter wait on each other); `time_zone` (an IANA name) is where the date tokens are read.
    The table (which must exist) is adopted as object `object_name` (default: the table name) and
    the rule added through the rules package when it is not registered yet: calling this again,
    from this or another process, changes nothing.
    """
    cls = attribute.class_
    if not isinstance(cls, type):
        raise TypeError(f"{attribute}: bind a column of a mapped class, not of an alias")
    columns = attribute.property.columns
    table = sa.inspect(cls).local_table
    column = columns[0]
    if not isinstance(table, sa.Table) or len(columns) != 1 or column.table is not table:
        raise TypeError(f"{attribute}: bind a plain column of a mapped table")
    name = object_name or table.name
    rule = RuleSpec(
        name, column.name, format, scope=scope, start=start, numbering=numbering, time_zone=time_zone
    )
    field_id = ensure_field(platform, name, table.name, rule)
    with _lock:
        found = _bindings.get((cls, attribute.key))
        if found is not None and found.field_id == field_id and found.platform is platform:
            return found
        binding = Binding(cls, attribute.key, field_id, platform, table, column.name)
        _bindings[(cls, attribute.key)] = binding
        if not event.contains(attribute, "set", _refuse_change):
            event.listen(attribute, "set", _refuse_change, active_history=True)
    return binding


def _refuse_change(target: Any, value: Any, oldvalue: Any, initiator: Any) -> Any:
    """A persistent instance's number is read-only (its binding still in place)."""
    state = sa.inspect(target)
    if state.persistent and value != oldvalue and oldvalue is not None:
        key = initiator.key
        if any(b.key == key and isinstance(target, b.cls) for b in _bound()):
            raise ReadOnlyAutoNumber(
                f"{type(target).__name__}.{key} is an autonumber: assigned at the first flush and "
                f"read-only afterwards ({oldvalue!r})"
            )
    return value


def _insert_rows(statement: sa.Insert, multiparams: Any, params: Any) -> list[dict[str, Any]]:
    """The rows a Core insert will write, as column name → value (statement values included)."""
    values = {getattr(k, "key", k): v for k, v in (getattr(statement, "_values", None) or {}).items()}
    given = multiparams if isinstance(multiparams, list | tuple) and multiparams else [params or {}]
    rows = []
    for row in given:
        merged = dict(values)
        if isinstance(row, dict):
            merged.update(row)
        rows.append(merged)
    return rows


@event.listens_for(sa.engine.Engine, "before_execute", retval=True)
@blind
def _refuse_unnumbered_insert(
    conn: sa.Connection, clause: Any, multiparams: Any, params: Any, options: Any
) -> tuple[Any, Any, Any]:
    """Every statement of every engine passes here (the common case returns at once). Registered
    with `retval` so that the function SQLAlchemy holds is this one, which `blind` names: the rows
    autonumber writes itself carry their numbers, so its statements may skip SQLAlchemy."""
    if _bindings and isinstance(clause, sa.Insert) and isinstance(clause.table, sa.Table):
        _refuse_if_unnumbered(clause, multiparams, params)
    return clause, multiparams, params


def _refuse_if_unnumbered(clause: sa.Insert, multiparams: Any, params: Any) -> None:
    """ReadOnlyAutoNumber when a Core insert into a bound table leaves a row's number empty."""
    for binding in _bound():
        if clause.table is not binding.table and clause.table.name != binding.table.name:
            continue
        if getattr(clause, "select", None) is not None:
            rows: list[dict[str, Any]] = [{}]
        else:
            rows = _insert_rows(clause, multiparams, params)
        if any(row.get(binding.column) is None for row in rows):
            raise ReadOnlyAutoNumber(
                f"insert into {binding.table.name} leaves {binding.column} empty: a Core insert() "
                "is not numbered; add the rows through an ORM Session (session.add), or "
                "platform.records.insert, or give each row its number"
            )


def unbind(attribute: InstrumentedAttribute[Any]) -> None:
    """Stop numbering a column (tests; an application binds once for its lifetime)."""
    with _lock:
        for key in [k for k in _bindings if k == (attribute.class_, attribute.key)]:
            del _bindings[key]


def _bound() -> Iterable[Binding]:
    with _lock:
        return list(_bindings.values())


@event.listens_for(Session, "before_flush")
def _before_flush(session: Session, flush_context: UOWTransaction, instances: object) -> None:
    for binding in _bound():
        if keeping():
            binding.kept(session)
        binding.number(session, binding.pending(session))


@event.listens_for(Session, "after_flush")
def _after_flush(session: Session, flush_context: UOWTransaction) -> None:
    session.info[WROTE] = True


@event.listens_for(Session, "after_transaction_end")
def _after_transaction_end(session: Session, transaction: SessionTransaction) -> None:
    if transaction.parent is None:
        session.info.pop(WROTE, None)
