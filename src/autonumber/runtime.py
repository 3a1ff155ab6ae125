"""`autonumber.connect(url)`: the engine, records and catalog over one database."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .catalog.cache import Catalog, CatalogSnapshot
from .db import check_reachable, create_engine, dialect_for
from .db.budget import DEFAULT_WAIT, Budget, max_connections_from, pool_class
from .db.held import HeldConnection
from .db.sqlite import READONLY
from .db.version import check_schema
from .defaults import DEFAULT_URL
from .engine import DEFAULT_MAX_RETRIES, Engine, Strategy, metrics
from .engine import DEFAULT_STRATEGY as DEFAULT_STRATEGY  # re-exported: bench reads it here
from .engine.journal import caller_label
from .events import EventBus
from .write.records import Records

GROUP_COMMIT = True
"""Chosen by the job benchmark (docs/performance.md): concurrent independent inserts of one object
share one transaction, so 100 callers do not pay 100 durable commits."""

CALLER_ENV = "AUTONUMBER_CALLER"
"""The caller label of a process that does not pass one to `connect` (`autonumber serve`, the CLI)."""

POLL_INTERVAL = 1.0
"""Seconds between the catalog's checks for rule changes made by other processes."""


@dataclass(frozen=True)
class Settings:
    """Everything a Platform is built from: the database URL and the options `connect` documents.
    One object, so an option is added in one place and a Platform can say how it was opened."""

    url: str = DEFAULT_URL
    strategy: Strategy = DEFAULT_STRATEGY
    max_retries: int = DEFAULT_MAX_RETRIES
    max_connections: int | None = None
    connection_timeout: float = DEFAULT_WAIT
    pool_size: int | None = None
    reservation_pool_size: int | None = None
    poll_interval: float = POLL_INTERVAL
    journal: bool = True
    group_commit: bool = GROUP_COMMIT
    caller: str | None = None
    durable_reservations: bool = False


class Platform:
    """One database: `.engine` assigns numbers, `.records` persists, `.begin()` is a caller txn."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        s = settings
        split = Budget.split(max_connections_from(s.max_connections), group_commit=s.group_commit)
        records = s.pool_size or split.records
        reservations = s.reservation_pool_size or split.reservations
        fresh = s.reservation_pool_size or split.fresh
        group = split.group
        self.budget = Budget(records + reservations + fresh + group, records, reservations, fresh, group)
        """The connections this Platform may hold: explicit pool sizes override the budget's split."""

        def pool(size: int, name: str, **kw: Any) -> sa.Engine:
            return create_engine(
                s.url, pool_size=size, poolclass=pool_class(name), pool_timeout=s.connection_timeout, **kw
            )

        self.db = pool(self.budget.records, "records")
        check_reachable(self.db)
        check_schema(self.db)  # SchemaTooOld / SchemaTooNew: one line, before anything is written
        self.dialect = dialect_for(self.db)
        # no pre-ping on the hot path: a reservation on a dead connection is retried instead; its
        # increment and journal line go as one text where the backend takes batches (MariaDB)
        self.reservation_db = pool(
            self.budget.reservations, "reservations", pool_pre_ping=False, statement_batches=True
        )
        self.fresh_db = pool(self.budget.fresh, "fresh").execution_options(**{READONLY: True})
        # The group writer's own pool: it never waits on the reservation pool for its connection.
        # Only these two pools run statement batches, and only the product's own statements.
        self.group_db = pool(group, "group", pool_pre_ping=False, statement_batches=True) if group else None
        self.group_writer = (
            HeldConnection(self.group_db, timeout=s.connection_timeout, name="group")
            if self.group_db
            else None
        )
        # Read-only pool: on SQLite a refresh must not BEGIN IMMEDIATE behind an open caller txn.
        self.catalog = Catalog(self.fresh_db, poll_interval=s.poll_interval)
        self.catalog.listeners.append(_publish_quarantine)
        self.events = EventBus()
        self.engine = Engine(
            self.catalog,
            self.dialect,
            self.reservation_db,
            self.fresh_db,
            strategy=s.strategy,
            max_retries=s.max_retries,
            defer_flush=not s.durable_reservations,
        )
        # The reservation journal behind `autonumber audit gaps` (off: reasons unknown, cost saved).
        self.engine.reserver.journal.enabled = s.journal
        self.engine.reserver.journal.caller = caller_label(s.caller or os.environ.get(CALLER_ENV))
        self.records = Records(
            self.db,
            self.catalog,
            self.engine,
            self.events,
            group_commit=self.group_db is not None,
            group_writer=self.group_writer,
        )

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        """A caller transaction: commit on success, roll back on an exception."""
        with self.db.begin() as conn:
            yield conn

    @property
    def engines(self) -> tuple[sa.Engine, ...]:
        """Every pool of this Platform (records, reservations, fresh reads, the group writer's)."""
        pools = (self.db, self.reservation_db, self.fresh_db, self.group_db)
        return tuple(engine for engine in pools if engine is not None)

    def close(self) -> None:
        """Journal the rest of this process's number blocks as gaps, then dispose of every pool."""
        self.engine.close()
        if self.group_writer is not None:
            self.group_writer.close()
        for engine in self.engines:
            engine.dispose()

    def __enter__(self) -> Platform:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _publish_quarantine(snapshot: CatalogSnapshot) -> None:
    """Keep the `autonumber_quarantined_fields` gauge equal to the catalog's quarantine."""
    metrics.publish_quarantined(len(snapshot.quarantined))


def connect(
    url: str = DEFAULT_URL,
    *,
    strategy: Strategy = DEFAULT_STRATEGY,
    max_retries: int = DEFAULT_MAX_RETRIES,
    max_connections: int | None = None,
    connection_timeout: float = DEFAULT_WAIT,
    pool_size: int | None = None,
    reservation_pool_size: int | None = None,
    poll_interval: float = POLL_INTERVAL,
    journal: bool = True,
    group_commit: bool = GROUP_COMMIT,
    caller: str | None = None,
    durable_reservations: bool = False,
) -> Platform:
    """Open a Platform on `url` (the schema must exist: run `autonumber setup apply` first).

    `strategy`: how concurrent callers of one counter share reservations (docs/engine.md);
    `max_retries`: attempts of a reservation that lost a race; `max_connections` (default
    AUTONUMBER_MAX_CONNECTIONS, else 10) caps the connections of all pools together, and
    `pool_size` / `reservation_pool_size` override its split; `connection_timeout`: seconds to wait
    for a pooled connection; `poll_interval`: seconds between catalog checks for rule changes;
    `journal`: keep the reservation journal behind `autonumber audit gaps`; `group_commit`: let
    concurrent inserts of one object share one transaction; `caller` (default AUTONUMBER_CALLER): a
    label for this application, kept on every journal line and shown by the gap audit;
    `durable_reservations`: on PostgreSQL, make every reservation's COMMIT wait for the disk, also
    one whose numbers only a record in the caller's transaction stores (docs/engine.md, "A
    reservation's COMMIT").
    """
    return Platform(
        Settings(
            url,
            strategy=strategy,
            max_retries=max_retries,
            max_connections=max_connections,
            connection_timeout=connection_timeout,
            pool_size=pool_size,
            reservation_pool_size=reservation_pool_size,
            poll_interval=poll_interval,
            journal=journal,
            group_commit=group_commit,
            caller=caller,
            durable_reservations=durable_reservations,
        )
    )
