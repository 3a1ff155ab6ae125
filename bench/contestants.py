"""What competes: one contestant is one way to get a number (or a record with its number).

A contestant opens its pools once, hands the harness one callable per cell
(`op_for(callers, work)`) and reports extra per-cell facts in `end_cell()`; `measure` runs one
cell. On the hot counter (this module) every contestant uses at most SESSIONS database sessions,
the project's default pool capacity (8 + 16 overflow), so 100 callers queue for connections the
same way in every row of the table; the job's contestants are in job.py.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

import autonumber
from autonumber.db import create_engine
from autonumber.engine import Strategy

from .database import engine_for, stored_numbers
from .harness import CellResult, Op, run_cell
from .probe import AttemptProbe

SESSIONS = 24
HOT_FIELD = "Case.CaseNumber"
HOT_OBJECT = "Case"
SEQUENCE_NAME = "autonumber_bench_seq"


class Contestant:
    """Base: a named operation on the hot counter."""

    name = "?"
    family = "?"

    def op_for(self, callers: int, work: float = 0.0) -> Op:
        """The callable the `callers` threads run in this cell; `work` seconds are spent inside the
        caller's transaction by the contestants that take the number in it (the job's work rows)."""
        raise NotImplementedError

    def begin_cell(self) -> None:
        """Called just before a cell starts."""

    def end_cell(self) -> dict[str, Any]:
        """Release what the cell opened; extra facts about it (attempts, group sizes …)."""
        return {}

    def thread_done(self) -> None:
        """Called by each caller thread when it stops."""

    def verify(self) -> dict[str, Any]:
        """A check against the database after all cells: rows stored, duplicate numbers among them."""
        return {}

    def close(self) -> None:
        """Release pools and connections."""


class EngineContestant(Contestant):
    """`Engine.assign_one` (or `Records.insert` end to end) under one strategy."""

    family = "engine"

    def __init__(self, url: str, strategy: Strategy, *, records: bool = False) -> None:
        self.strategy = strategy
        self.records = records
        self.name = f"{'records' if records else 'engine'}:{strategy}"
        self.family = "records" if records else "engine"
        self.platform = autonumber.connect(url, strategy=strategy)
        self.url = url
        self._probe: AttemptProbe | None = None

    def op_for(self, callers: int, work: float = 0.0) -> Op:
        p = self.platform
        if self.records:

            def insert() -> Hashable:
                return str(p.records.insert(HOT_OBJECT, {"Subject": "bench"})["CaseNumber"])

            return insert

        def assign() -> Hashable:
            return p.engine.assign_one(HOT_FIELD, {})

        return assign

    def begin_cell(self) -> None:
        label = "atomic" if self.strategy == "combining" else self.strategy
        self._probe = AttemptProbe.take(label)
        self.platform.engine.combiner.largest_group = 0

    def end_cell(self) -> dict[str, Any]:
        assert self._probe is not None
        facts: dict[str, Any] = dict(self._probe.delta())
        if self.strategy == "combining":
            facts["largest_group"] = self.platform.engine.combiner.largest_group
        return facts

    def verify(self) -> dict[str, Any]:
        if not self.records:
            return {}
        table = self.platform.catalog.current().table(HOT_OBJECT)
        return stored_numbers(self.platform.db, table.c.CaseNumber)

    def close(self) -> None:
        self.platform.close()


class NativeSequence(Contestant):
    """The database's own sequence (`nextval` / MariaDB `NEXTVAL`), one autocommit call each."""

    name = "peer:native-sequence"
    family = "peer"

    def __init__(self, url: str) -> None:
        self.db: Engine = create_engine(url).execution_options(isolation_level="AUTOCOMMIT")
        self.seq = sa.Sequence(SEQUENCE_NAME, metadata=sa.MetaData())
        with self.db.connect() as conn:
            self.seq.create(conn, checkfirst=True)
        self._next = sa.select(self.seq.next_value())

    def op_for(self, callers: int, work: float = 0.0) -> Op:
        def nextval() -> Hashable:
            with self.db.connect() as conn:
                return int(conn.execute(self._next).scalar_one())

        return nextval

    def close(self) -> None:
        self.db.dispose()


def supports_sequences(url: str) -> bool:
    """Whether the backend has SEQUENCE objects (PostgreSQL, MariaDB ≥ 10.3; not SQLite/MySQL)."""
    with engine_for(url) as engine, engine.connect():
        return bool(engine.dialect.supports_sequences)


def measure(
    contestant: Contestant, callers: int, seconds: float, warmup: float, work: float = 0.0
) -> CellResult:
    """One cell: `contestant` from `callers` threads, its per-cell facts added to the result."""
    contestant.begin_cell()
    op = contestant.op_for(callers, work)
    try:
        cell = run_cell(op, callers, seconds, warmup, contestant.thread_done)
    finally:
        facts = contestant.end_cell()
    cell.extra.update(facts)
    return cell
