"""Helpers shared by the engine, records and concurrency suites (not a test module).

Every suite runs against a real database bootstrapped with the core pack; custom rules are stored the
way the applier stores them (`apply_rules` inside a transaction), then the catalog is refreshed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa

import autonumber
from autonumber.catalog.cache import Rule
from autonumber.db.tables import counter_table
from autonumber.engine import STRATEGIES, Reservation
from autonumber.rules.store import RuleSpec, apply_rules
from autonumber.runtime import Platform
from support import CASE as CASE
from support import make_platform as make_platform
from support import number as number


def store_rules(p: Platform, *specs: RuleSpec) -> None:
    """Store rules through the applier's path and make the platform see them."""
    with p.begin() as conn:
        apply_rules(conn, specs)
    p.catalog.refresh()


def counter_rows(p: Platform, field: str) -> dict[str, int]:
    """`scope_key → next_value` of every counter row of a field."""
    fid = p.catalog.current().field_id(field)
    with p.db.connect() as conn:
        rows = conn.execute(
            sa.select(counter_table.c.scope_key, counter_table.c.next_value).where(
                counter_table.c.field_id == fid
            )
        )
        return {key: int(value) for key, value in rows}


def set_next_value(p: Platform, field: str, value: int, scope_key: str = "") -> None:
    """Move a counter row directly (admin surgery, for the overflow and seed-like cases)."""
    fid = p.catalog.current().field_id(field)
    with p.begin() as conn:
        conn.execute(
            sa.update(counter_table)
            .where(counter_table.c.field_id == fid, counter_table.c.scope_key == scope_key)
            .values(next_value=value)
        )


def bump_in_place(conn: sa.Connection, rule: Rule, scope_key: str) -> None:
    """Advance the counter row inside the reservation's own transaction, so its CAS loses.

    The bump is rolled back with the lost attempt: a forced loss that leaves no gap, and the only
    way on a single-writer backend (SQLite), where a second connection would wait for this one.
    """
    conn.execute(
        sa.update(counter_table)
        .where(counter_table.c.field_id == rule.field_id, counter_table.c.scope_key == scope_key)
        .values(next_value=counter_table.c.next_value + 1)
    )


def assert_unique_contiguous(values: Sequence[str]) -> list[int]:
    """Every value distinct and the counters an unbroken run; return them sorted."""
    assert len(set(values)) == len(values), "duplicate numbers"
    ints = sorted(number(v) for v in values)
    assert ints == list(range(ints[0], ints[0] + len(ints))), "numbers are not contiguous"
    return ints


def run_threads(threads: int, work: Callable[[int], list[str]]) -> list[str]:
    """Run `work(i)` on `threads` threads that start together; return every value produced."""
    barrier = threading.Barrier(threads)

    def start(i: int) -> list[str]:
        barrier.wait(timeout=60)
        return work(i)

    with ThreadPoolExecutor(threads) as pool:
        return [v for chunk in pool.map(start, range(threads)) for v in chunk]


class ReservationLog:
    """Collects every committed reservation through the engine's `reserved` hook."""

    def __init__(self, p: Platform) -> None:
        self.items: list[Reservation] = []
        self._lock = threading.Lock()
        p.engine.hooks.reserved = self._add

    def _add(self, res: Reservation) -> None:
        with self._lock:
            self.items.append(res)

    def __len__(self) -> int:
        return len(self.items)


def insert_cases(
    url: str, strategy: str, threads: int, per_thread: int, max_connections: int | None = None
) -> list[str]:
    """One process of the multi-process test: its own platform (its connection budget, default 10
    connections), threads × inserts of Case."""
    p = autonumber.connect(url, strategy=strategy, max_connections=max_connections)
    try:

        def work(i: int) -> list[str]:
            return [
                p.records.insert("Case", {"Subject": f"t{i}-{k}"})["CaseNumber"] for k in range(per_thread)
            ]

        return run_threads(threads, work)
    finally:
        p.close()


def all_strategies() -> Iterable[str]:
    """Every reservation strategy; each must pass every invariant test."""
    return STRATEGIES


@contextmanager
def traced(p: Platform) -> Iterator[list[str]]:
    """Every statement the driver itself runs on each connection checked out meanwhile, whole, with
    a "COMMIT" for each COMMIT the driver sends; a transaction's BEGIN is left out. Read at the
    driver (SQLite's trace callback; PyMySQL's `query` and `commit`; psycopg's cursor `execute` and
    `commit` where a transaction is open, else it sends nothing), not from SQLAlchemy's events: the
    group writer runs its numbered insert on the driver's cursor (db/driver.py), and a text that
    ends in its own COMMIT is followed by no other."""
    seen: list[str] = []
    undo: list[Callable[[], None]] = []
    backend = p.db.dialect.name

    def record(statement: Any) -> None:
        text = " ".join(str(statement).split())
        if not text.upper().startswith("BEGIN"):
            seen.append(text)

    def record_sqlite(statement: Any) -> None:
        # SQLite's trace repeats a statement's text for each trigger it fires (the writer fence on
        # the counter table: one per row written): the statement was sent once
        if not str(statement).startswith("--") and " ".join(str(statement).split()) != (
            seen[-1] if seen else None
        ):
            record(statement)

    def count_commits(dbapi_connection: Any) -> None:
        if "commit" in vars(dbapi_connection):
            return
        commit = dbapi_connection.commit

        def committing() -> None:
            status = getattr(getattr(dbapi_connection, "info", None), "transaction_status", None)
            if status is None or status != 0:  # psycopg sends nothing on an idle connection
                seen.append("COMMIT")
            commit()

        dbapi_connection.commit = committing
        undo.append(lambda: vars(dbapi_connection).pop("commit", None))

    def on_checkout(dbapi_connection: Any, *args: object) -> None:
        if backend != "sqlite":  # SQLite's trace shows its COMMIT
            count_commits(dbapi_connection)
        if backend == "sqlite":
            dbapi_connection.set_trace_callback(record_sqlite)
            undo.append(lambda: dbapi_connection.set_trace_callback(None))
        elif backend == "mysql" and "query" not in vars(dbapi_connection):
            query = dbapi_connection.query

            def sending(sql: Any, *args: Any, **kwargs: Any) -> Any:
                record(sql.decode() if isinstance(sql, bytes) else sql)
                return query(sql, *args, **kwargs)

            dbapi_connection.query = sending
            undo.append(lambda: vars(dbapi_connection).pop("query", None))
        elif backend == "postgresql" and not getattr(dbapi_connection.cursor_factory, "traced", False):
            factory = dbapi_connection.cursor_factory

            class Tracing(factory):  # type: ignore[misc, valid-type]
                traced = True

                def execute(self, query: Any, *args: Any, **kwargs: Any) -> Any:
                    record(query)
                    return super().execute(query, *args, **kwargs)

                def executemany(self, query: Any, *args: Any, **kwargs: Any) -> Any:
                    record(query)
                    return super().executemany(query, *args, **kwargs)

            dbapi_connection.cursor_factory = Tracing
            undo.append(lambda: setattr(dbapi_connection, "cursor_factory", factory))

    if p.group_writer is not None:  # its held connection goes back: its next checkout is traced
        p.group_writer.close()
    for engine in p.engines:
        sa.event.listen(engine.pool, "checkout", on_checkout)
    try:
        yield seen
    finally:
        for engine in p.engines:
            sa.event.remove(engine.pool, "checkout", on_checkout)
        for step in undo:
            step()
