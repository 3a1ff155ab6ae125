"""The connection a read or a write runs in, and what its failure means. Reading, a lost connection
is DatabaseUnavailable. Writing, in the caller's connection or one of ours: a lost connection
before COMMIT is DatabaseUnavailable, our COMMIT failing is CommitOutcomeUnknown naming the records'
Ids, a refused writer fence is SchemaUpgradedMeanwhile, a lost race is TransactionConflict in the
caller's transaction and WriteConflict in ours."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..db import dialect_for
from ..db.fence import declare, raise_if_refused
from ..db.held import HeldConnection
from ..db.objects import key_column
from ..engine import Engine
from ..errors import CommitOutcomeUnknown, DatabaseUnavailable, TransactionConflict, WriteConflict
from .rows import first_line


@contextmanager
def own_or_callers(conn: Connection | None, db: sa.Engine | HeldConnection) -> Iterator[Connection]:
    """The caller's `conn` as it is, or a transaction of ours on `db` that commits on exit."""
    if conn is not None:
        yield conn
        return
    with db.begin() as own:
        yield own


@contextmanager
def reading(db: sa.Engine, what: str) -> Iterator[Connection]:
    """A connection of `db` for reads; a lost or refused connection raises DatabaseUnavailable
    naming `what` (nothing was written, so the read can simply be made again)."""
    try:
        with db.connect() as conn:
            yield conn
    except sa.exc.DBAPIError as exc:
        if dialect_for(db).is_unavailable(exc):
            raise DatabaseUnavailable(what, exc) from exc
        raise


@contextmanager
def writing(
    engine: Engine,
    db: sa.Engine | HeldConnection,
    object_name: str,
    table: sa.Table,
    records: Sequence[Mapping[str, Any]],
    conn: Connection | None,
) -> Iterator[Connection]:
    """The transaction `records` are written in: the caller's `conn`, or one of our own that
    commits on exit. A lost connection raises DatabaseUnavailable while nothing can have
    committed (the caller owns its own COMMIT); our COMMIT failing other than on a lost race
    (which rolled back) raises CommitOutcomeUnknown naming the records' Ids."""
    committing = False
    try:
        if conn is not None:
            declare(conn)  # a caller's connection from another pool: the writer fence's declaration
        with own_or_callers(conn, db) as c:
            yield c
            committing = conn is None
    except sa.exc.SQLAlchemyError as exc:
        raise_if_refused(exc)
        dialect = engine.dialect
        if committing and not dialect.is_retryable(exc):
            ids = [str(r.get(key_column(table).name)) for r in records]
            raise CommitOutcomeUnknown(object_name, ids, first_line(exc)) from exc
        # on a live caller's connection, PendingRollbackError says its transaction failed before
        failed_before = (
            isinstance(exc, sa.exc.PendingRollbackError) and conn is not None and not conn.invalidated
        )
        if dialect.is_unavailable(exc) and not failed_before:
            raise DatabaseUnavailable(f"writing {object_name} records", exc) from exc
        if isinstance(exc, sa.exc.DBAPIError) and dialect.is_retryable(exc):
            if conn is not None:
                raise TransactionConflict(object_name, exc) from exc  # the caller's to run again
            raise WriteConflict(object_name, exc) from exc  # ours: rolled back, safe to run again
        raise
