"""`_System_SetupState`: what setup has done — the last run of each phase and the fields seeded.

A name/value table so the record survives process restarts; apply phases read it to skip work that
is already done (a field whose counters were seeded from the same format is not scanned again).
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from autonumber.db import dialect_for
from autonumber.db.schema import has_table
from autonumber.db.tables import setup_state as setup_state

PHASE = "phase:"
SEEDED = "seeded:"
FLOOR = "floor:"
KEYS = "keys:"
KEYS_RENDERED = "rendered"
"""keys:<field id> = rendered: the field's per_prefix rows were moved to rendered-text keys."""
"""floor:<field id> = the next value the last seed gave a global field (a durable lower bound)."""
PACK = "pack"
REMOVED = "removed:"
"""removed:<field id>: the rule was removed on purpose (`field remove`); setup apply leaves it so
until the field is added again."""


def put(conn: Connection, name: str, value: str) -> None:
    """Set one entry (callers hold the bootstrap lock, so update-then-insert cannot race)."""
    now = dialect_for(conn).utc_now(conn)
    t = setup_state
    if conn.execute(sa.update(t).where(t.c.name == name).values(value=value, updated_at=now)).rowcount:
        return
    conn.execute(sa.insert(t).values(name=name, value=value, updated_at=now))


def read(conn: Connection, prefix: str) -> dict[str, str]:
    """Every entry whose name starts with `prefix`, keyed by the rest of the name."""
    if not has_table(conn, setup_state.name):
        return {}
    t = setup_state
    rows = conn.execute(sa.select(t.c.name, t.c.value).where(t.c.name.startswith(prefix)))
    return {name[len(prefix) :]: value for name, value in rows}


def record_phase(conn: Connection, phase: str, info: dict[str, Any]) -> None:
    """Record the outcome of one phase run."""
    put(conn, PHASE + phase, json.dumps(info, sort_keys=True, separators=(",", ":")))


def seed_marker(scope: str, start: int, fmt: str) -> str:
    """What a seeded field is recorded with: a change of scope, start or format re-seeds it."""
    return f"{scope}|{start}|{fmt}"


def removed(conn: Connection) -> set[str]:
    """The field ids whose rule was removed on purpose (and not added back)."""
    return set(read(conn, REMOVED))


def forget_removed(conn: Connection, field_id: str) -> None:
    """The field has a rule again: setup apply manages it as any other."""
    if has_table(conn, setup_state.name):
        conn.execute(sa.delete(setup_state).where(setup_state.c.name == f"{REMOVED}{field_id}"))
