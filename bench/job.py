"""The job, not just the counter: a record with its number, against the plain INSERT a user could write.

Contestants, each storing one `Case`-like row per call:
- `records.insert` — `autonumber.connect(url)` with every default (group commit included);
- `records.insert (no group commit)` — the same with group commit off, to show what it buys;
- `records.insert (peer's connections)` — the work rows only, with the caller-transaction pool as
  large as the native peer's (`connect(url, pool_size=…)`);
- `records.insert (blocks, peer's connections)` — the same with the field's allocation
  `blocks:BLOCK` (docs/engine.md, "Block allocation"): the setting for numbers taken in the
  caller's transaction when creation order across processes need not hold; no reservation per
  record, so the caller's transaction sends what the native peer sends (INSERT, COMMIT);
- `records.insert (durable reservations)` — PostgreSQL only (the one backend that lets a
  reservation's COMMIT skip the disk wait): `connect(url, durable_reservations=True)`, what making
  it the default would cost;
- `peer:native-insert` — one transaction per record on a table whose number column is the
  database's own sequence (PostgreSQL BIGSERIAL, MariaDB AUTO_INCREMENT, SQLite rowid), with a pool
  as large as the callers up to PEER_POOL_MAX, opened before the cell;
- `peer:odoo-sequence` — how Odoo numbers a document: the sequence definition read, the next value
  of a database sequence, prefix + padded number formatted in Python, the INSERT, in one
  transaction (bench/odoo_peer.py), pooled like the native peer;
- `peer:django-sequences` — `get_next_value` and the row INSERT in one `transaction.atomic()`, one
  Django connection per caller up to PEER_POOL_MAX, opened before the cell.
Work rows hold 2 or 10 ms inside the caller's transaction before COMMIT (a sleep, standing for the
caller's own statements); the number is then taken inside that transaction by every contestant.
Every pool is opened before its cell: a cell measures inserts, not connects.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Hashable
from typing import Any

import sqlalchemy as sa

import autonumber
from autonumber.commands.fields import set_field
from autonumber.db import create_engine
from autonumber.rules import RuleEdit

from . import django_peer, odoo_peer
from .contestants import Contestant, measure
from .database import engine_for, stored_numbers, warm
from .harness import CellResult, Log, Op, flatten, run_cell

NATIVE_TABLE = "bench_native_case"
JOB_OBJECT = "Case"
NUMBER_FIELD = "CaseNumber"
CALLERS = (1, 8, 32, 100)
WORK_MS = (2.0, 10.0)
WORK_CALLERS = 8
"""Work rows run at every caller count from this one up (8, 32 and 100 by default)."""
BUSY_CALLERS, BUSY_WORK_MS = 60, 2.0
"""One more work row: 60 callers with 2 ms of work each, a busy application's caller transaction."""
PEER_POOL_MAX = 50
"""The peers' connections: one per caller, at most this many — half of PostgreSQL's default
`max_connections` (100), which the peers share with every other client of the server."""
PROCESSES, PROCESS_THREADS = 4, 25
BLOCK = 100
"""The block size of the blocks contestant: a refill per 100 records, at most 99 numbers left
unused (journalled as a gap) when its platform closes."""
EQUAL = "records.insert (peer's connections)"
BLOCKS = "records.insert (blocks, peer's connections)"
WORK_ONLY = (EQUAL, BLOCKS)
"""The contestants that run the work rows only (they exist for the caller's transaction)."""
CONTESTANTS = (
    "records.insert",
    "records.insert (no group commit)",
    EQUAL,
    BLOCKS,
    "records.insert (durable reservations)",
    "peer:native-insert",
    odoo_peer.NAME,
    "peer:django-sequences",
)


class RecordsJob(Contestant):
    """`Platform.records.insert`: defaults, with group commit turned off, with the peer's
    connections, with durable reservations, or (`block`) with the field's allocation `blocks:N`
    for as long as the contestant runs (set back to `single` when it closes)."""

    family = "records"

    def __init__(
        self,
        url: str,
        *,
        group_commit: bool = True,
        pool_size: int | None = None,
        durable: bool = False,
        block: int | None = None,
    ) -> None:
        self.name = "records.insert" if group_commit else "records.insert (no group commit)"
        options: dict[str, Any] = {} if group_commit else {"group_commit": False}
        if pool_size is not None:
            self.name = EQUAL
            options["pool_size"] = pool_size
        if durable:
            self.name = "records.insert (durable reservations)"
            options["durable_reservations"] = True
        self.url, self.block = url, block
        if block is not None:
            self.name = BLOCKS
            _allocate(url, f"blocks:{block}")
        self.platform = autonumber.connect(url, **options)

    def op_for(self, callers: int, work: float = 0.0) -> Op:
        p = self.platform
        warm(p.db, min(callers, p.budget.records))
        if not work:
            return lambda: str(p.records.insert(JOB_OBJECT, {"Subject": "bench"})[NUMBER_FIELD])

        def in_txn() -> Hashable:
            with p.begin() as conn:
                value = str(p.records.insert(JOB_OBJECT, {"Subject": "bench"}, conn)[NUMBER_FIELD])
                time.sleep(work)
            return value

        return in_txn

    def end_cell(self) -> dict[str, Any]:
        groups = self.platform.records.group_commit
        if groups is None:
            return {}
        s = groups.reset_stats()
        return {"groups": s.groups, "largest_group": s.largest, "split_groups": s.split}

    def verify(self) -> dict[str, Any]:
        table = self.platform.catalog.current().table(JOB_OBJECT)
        return stored_numbers(self.platform.db, table.c[NUMBER_FIELD])

    def close(self) -> None:
        self.platform.close()  # journals the rest of its blocks as a gap
        if self.block is not None:
            _allocate(self.url, "single")


def _allocate(url: str, allocation: str) -> None:
    """Give the job's number field `allocation` (a database the bench has set up)."""
    set_field(url, RuleEdit(JOB_OBJECT, NUMBER_FIELD, allocation=allocation))


def native_table() -> sa.Table:
    """A Case-like table whose number is the database's own auto-increment / sequence."""
    return sa.Table(
        NATIVE_TABLE,
        sa.MetaData(),
        sa.Column("number", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True),
        sa.Column("subject", sa.String(80), nullable=False),
        sa.Column("created", sa.DateTime(), nullable=False, server_default=sa.func.current_timestamp()),
    )


def create_native_table(url: str) -> sa.Table:
    """The native peer's table, created when missing."""
    table = native_table()
    with engine_for(url) as setup:
        table.create(setup, checkfirst=True)
    return table


class NativeInsert(Contestant):
    """INSERT … with the number from the column's sequence; one transaction per record."""

    name = "peer:native-insert"
    family = "peer"

    def __init__(self, url: str, *, pool_max: int = PEER_POOL_MAX) -> None:
        self.url = url
        self.pool_max = pool_max
        self.table = create_native_table(url)
        self.db: sa.Engine | None = None

    def op_for(self, callers: int, work: float = 0.0) -> Op:
        # one connection per caller up to PEER_POOL_MAX, all opened before the cell
        size = min(callers, self.pool_max)
        self.db = create_engine(self.url, pool_size=size, max_overflow=0, pool_pre_ping=False)
        warm(self.db, size)
        db, stmt = self.db, sa.insert(self.table).values(subject="bench")

        def insert() -> Hashable:
            with db.begin() as conn:
                number = conn.execute(stmt).inserted_primary_key[0]  # type: ignore[index]
                if work:
                    time.sleep(work)
            return int(number)

        return insert

    def end_cell(self) -> dict[str, Any]:
        if self.db is not None:
            self.db.dispose()
            self.db = None
        return {}

    def verify(self) -> dict[str, Any]:
        with engine_for(self.url) as db:
            return stored_numbers(db, self.table.c.number)

    def close(self) -> None:
        self.end_cell()


def make(name: str, url: str, backend: str, processes: int = 1) -> Contestant:
    """A contestant by name; a peer of one of `processes` processes gets its share of the peers'
    connections."""
    share = PEER_POOL_MAX // processes
    if name == "records.insert":
        return RecordsJob(url)
    if name == "records.insert (no group commit)":
        return RecordsJob(url, group_commit=False)
    if name == EQUAL:
        return RecordsJob(url, pool_size=PEER_POOL_MAX)
    if name == BLOCKS:
        return RecordsJob(url, pool_size=PEER_POOL_MAX, block=BLOCK)
    if name == "records.insert (durable reservations)":
        return RecordsJob(url, durable=True)
    if name == "peer:native-insert":
        return NativeInsert(url, pool_max=share)
    if name == odoo_peer.NAME:
        return odoo_peer.OdooSequence(url, pool_max=share)
    if name == "peer:django-sequences":  # one Django connection per caller, up to PEER_POOL_MAX
        return django_peer.DjangoSequences(url, f"job_{backend}", sessions=share)
    raise ValueError(name)


def available(name: str, backend: str) -> str | None:
    """None when the contestant can run here, else why not."""
    if name == "records.insert (durable reservations)" and backend != "postgresql":
        return "PostgreSQL only: elsewhere every reservation's COMMIT waits for the disk already"
    if name == BLOCKS and backend == "sqlite":
        return "servers only: SQLite numbers a caller's record on the caller's own connection, blocks or not"
    return django_peer.available() if name == "peer:django-sequences" else None


def _cell(contestant: Contestant, callers: int, work: float, seconds: float, warmup: float) -> dict[str, Any]:
    cell = measure(contestant, callers, seconds, warmup, work)
    return {"label": f"1×{callers}", "work_ms": work * 1000, **cell.as_dict()}


def _child(
    name: str, url: str, backend: str, threads: int, seconds: float, warmup: float, barrier: Any
) -> dict[str, Any]:
    """One process of the 4 × 25 cell: its own contestant, its threads, its latencies and values."""
    contestant = make(name, url, backend, PROCESSES)
    try:
        contestant.begin_cell()
        op = contestant.op_for(threads)
        barrier.wait(120)
        values: list[Hashable] = []

        def kept() -> Hashable:
            value = op()
            values.append(value)
            return value

        cell = run_cell(kept, threads, seconds, warmup, contestant.thread_done)
        facts = contestant.end_cell()
        return {"cell": cell, "values": [str(v) for v in flatten(values)], "facts": facts}
    finally:
        contestant.close()


def _processes(name: str, url: str, backend: str, seconds: float, warmup: float) -> dict[str, Any]:
    spawn = multiprocessing.get_context("spawn")
    with spawn.Manager() as manager:
        barrier = manager.Barrier(PROCESSES)
        with spawn.Pool(PROCESSES) as pool:
            parts = pool.starmap(
                _child,
                [(name, url, backend, PROCESS_THREADS, seconds, warmup, barrier)] * PROCESSES,
            )
    cells: list[CellResult] = [p["cell"] for p in parts]
    values = [v for p in parts for v in p["values"]]
    merged = CellResult(
        callers=PROCESSES * PROCESS_THREADS,
        ops=sum(c.ops for c in cells),
        seconds=max(c.seconds for c in cells),
        latencies=[x for c in cells for x in c.latencies],
        values=len(values),
        duplicates=len(values) - len(set(values)),
        errors=sum(c.errors for c in cells),
        first_error=next((c.first_error for c in cells if c.first_error), None),
    )
    largest = max((p["facts"].get("largest_group", 0) for p in parts), default=0)
    if largest:
        merged.extra["largest_group"] = largest
    return {"label": f"{PROCESSES}×{PROCESS_THREADS}", "work_ms": 0.0, **merged.as_dict()}


def run_job(
    url: str,
    backend: str,
    *,
    callers: tuple[int, ...] = CALLERS,
    seconds: float = 2.0,
    warmup: float = 0.5,
    processes: bool = True,
    log: Log = print,
) -> dict[str, Any]:
    """Every contestant at every caller count, the work rows and 4 × 25, on one backend."""
    out: dict[str, Any] = {"cells": {}, "skipped": {}, "stored": {}}
    for name in CONTESTANTS:
        reason = available(name, backend)
        if reason is not None:
            out["skipped"][name] = reason
            continue
        rows: list[dict[str, Any]] = []
        contestant = make(name, url, backend)
        try:
            plan = _plan(name, callers)
            for n, work in plan:
                rows.append(_cell(contestant, n, work, seconds, warmup))
                _log_row(log, backend, name, rows[-1])
        finally:
            out["stored"][name] = contestant.verify()
            contestant.close()
        # the same load, over processes (the equal-connections contestant runs the work rows only)
        if processes and PROCESSES * PROCESS_THREADS in callers and name not in WORK_ONLY:
            rows.append(_processes(name, url, backend, seconds, warmup))
            _log_row(log, backend, name, rows[-1])
        out["cells"][name] = rows
    return out


def _plan(name: str, callers: tuple[int, ...]) -> list[tuple[int, float]]:
    """The cells of one contestant: every caller count, then the work rows from WORK_CALLERS up
    (only those for the contestant that exists for them)."""
    work = [(n, w / 1000) for n in callers if n >= WORK_CALLERS for w in WORK_MS] or [
        (max(callers), w / 1000) for w in WORK_MS
    ]
    if max(callers) > BUSY_CALLERS:
        work.append((BUSY_CALLERS, BUSY_WORK_MS / 1000))
    plain = [] if name in WORK_ONLY else [(n, 0.0) for n in callers]
    return plain + work


def _log_row(log: Log, backend: str, name: str, row: dict[str, Any]) -> None:
    log(
        f"  {backend:<10} {name:<34} {row['label']:>6} work {row['work_ms']:>4.0f} ms "
        f"{row['throughput']:>9.0f}/s  p99 {row['p99_ms']:>8.2f} ms  unique={row['unique']}"
        + (f"  group≤{row['largest_group']}" if row.get("largest_group") else "")
        + (f"  errors={row['errors']} ({row['first_error']})" if row["errors"] else "")
    )
