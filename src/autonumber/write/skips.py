"""A write that met a number already stored by a row written outside the product: its counter
moves past the stored values (engine/skip.py) and the write is tried again, or a named error
says why it cannot be (docs/engine.md, "A stored row never jams a field")."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..catalog.cache import Catalog, CatalogSnapshot
from ..engine import Engine
from ..engine.retry import Tries
from ..engine.skip import skip_stored
from ..errors import NumberAlreadyStored


def skip_tries(engine: Engine) -> Tries:
    """How often one write may meet numbers already stored and try again (the retry policy's
    attempts: one skip moves a counter past every stored value, so more is rare)."""
    policy = engine.reserver.policy
    return policy.tries(policy.attempts, lambda _: None, windowed=False)


def skipped_stored(
    engine: Engine,
    catalog: Catalog,
    exc: sa.exc.DBAPIError,
    object_name: str,
    records: list[dict[str, Any]],
    conn: Connection | None,
    again: bool,
    rerun: str = "it kept meeting stored values: run it again",
) -> bool:
    """After `records`' write failed with `exc`: whether a number of theirs was already stored
    by a row written outside the product — its counter then moved past (engine/skip.py) and the
    write may be tried again with new numbers (`again`: the tries are not spent). False when
    `exc` is something else; NumberAlreadyStored (saying `rerun`) when the write cannot be
    tried again: the tries are spent, or the caller's transaction did not survive the error
    (PostgreSQL)."""
    dialect = engine.dialect
    if not dialect.is_duplicate_key(exc):
        return False
    in_place = conn is not None and not dialect.error_aborts_transaction
    snapshot = catalog.current()
    # the caller's transaction may hold its own uncommitted rows, or the counter row's lock
    # (SQLite's write lock, a gapless rule): the skip then reads and moves on its connection
    held = conn is not None and holds_counters(engine, snapshot, object_name, conn)
    on = conn if in_place and held else None
    reader = conn if in_place else None
    met, moved = skip_stored(engine.reserver, snapshot, object_name, records, reader, on)
    if not (met or moved):
        return False
    taken = [value for _, value, _ in met]
    for rule, value, key in met:
        if rule.block_size > 1:  # the rest of the block that held it may hold more stored values
            engine.blocks.give_up(rule.counter_id, key, f"unused rest of a block: {value} was already stored")
    if conn is not None and not in_place:
        raise NumberAlreadyStored(
            object_name, taken, "the database rolled back your transaction: run it again"
        ) from exc
    if not again:
        raise NumberAlreadyStored(object_name, taken, rerun) from exc
    return True


def holds_counters(engine: Engine, snapshot: CatalogSnapshot, object_name: str, conn: Connection) -> bool:
    """Whether `conn`'s transaction may hold the object's counter rows: it reserves on the caller
    (SQLite), or a gapless rule reserved in it."""
    return engine.reserves_on_caller(conn) or any(r.gapless for r in snapshot.rules_of(object_name))
