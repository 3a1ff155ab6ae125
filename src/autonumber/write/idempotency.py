"""Idempotency keys: a create sent twice with the same key stores its records once.

The key row is written first in the create's own transaction, so a concurrent duplicate waits on
its primary key and then finds the first one's records instead of reserving numbers of its own.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from ..db import schema
from ..db.replies import UNAVAILABLE
from ..db.tables import idempotency_table
from ..errors import DatabaseUnavailable, IdempotencyConflict, RecordError
from .values import check_text

MAX_KEY_LENGTH = 255
KEEP_AT_LEAST = timedelta(hours=24)


def check_key(key: str) -> str:
    """The key, or a RecordError when it is empty, too long or not storable text."""
    if not isinstance(key, str) or not key.strip():
        raise RecordError("an idempotency key must be non-empty text")
    if len(key) > MAX_KEY_LENGTH:
        raise RecordError(f"an idempotency key is at most {MAX_KEY_LENGTH} characters, got {len(key)}")
    return check_text(key, "the idempotency key")


def digest(object_name: str, rows: Sequence[Mapping[str, Any]]) -> str:
    """A digest of the request: object and field values, key order ignored."""
    text = json.dumps([object_name, list(rows)], sort_keys=True, default=str, ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def ensure_table(engine: Engine) -> None:
    """Create the key table on a database set up before it existed (before any record is written:
    a lost connection here is DatabaseUnavailable)."""
    try:
        schema.ensure_table(engine, idempotency_table)
    except UNAVAILABLE as exc:
        raise DatabaseUnavailable("checking the idempotency key table", exc) from exc


def claim(conn: Connection, key: str, object_name: str, request: str) -> list[str] | None:
    """Take `key` in this transaction: None when taken, else the Ids an earlier request stored.

    IdempotencyConflict when the key was used for a different request. The caller then inserts
    its records and calls `remember` with their Ids, in the same transaction.
    """
    earlier = _stored(conn, key)
    if earlier is None:
        try:
            with conn.begin_nested():
                conn.execute(
                    sa.insert(idempotency_table).values(
                        idempotency_key=key,
                        object_name=object_name,
                        request_digest=request,
                        record_ids="[]",
                    )
                )
            return None
        except sa.exc.IntegrityError:  # a concurrent request with this key committed first
            earlier = _stored(conn, key)
            if earlier is None:
                raise
    stored_object, stored_request, stored_ids = earlier
    if stored_object != object_name or stored_request != request:
        raise IdempotencyConflict(key)
    return stored_ids


def remember(conn: Connection, key: str, ids: Sequence[str]) -> None:
    """Store the Ids a claimed key's request inserted (known only after the insert on adopted tables)."""
    t = idempotency_table
    conn.execute(sa.update(t).where(t.c.idempotency_key == key).values(record_ids=json.dumps(list(ids))))


def _stored(conn: Connection, key: str) -> tuple[str, str, list[str]] | None:
    t = idempotency_table
    row = conn.execute(
        sa.select(t.c.object_name, t.c.request_digest, t.c.record_ids).where(t.c.idempotency_key == key)
    ).first()
    if row is None:
        return None
    return str(row.object_name), str(row.request_digest), [str(i) for i in json.loads(row.record_ids)]


def purge(engine: Engine, older_than: timedelta = timedelta(days=7)) -> int:
    """Delete keys older than `older_than` (never less than 24 h); return how many were removed."""
    from ..db import dialect_for

    age = max(older_than, KEEP_AT_LEAST)
    with engine.begin() as conn:
        cutoff = dialect_for(conn).utc_now(conn).replace(tzinfo=None) - age
        t = idempotency_table
        return int(conn.execute(sa.delete(t).where(t.c.created_date < cutoff)).rowcount or 0)
