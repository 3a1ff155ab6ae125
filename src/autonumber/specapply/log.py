"""`_System_DataSpecApplyLog`: one row per `spec apply` attempt, written in its own short transaction.

Outcomes: `running` (started, not finished — the process died), `applied`, `skipped`, `refused`,
`failed`. A refusal writes its row and nothing else.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from autonumber.db import dialect_for
from autonumber.db.replies import to_utc
from autonumber.db.schema import table_names
from autonumber.db.tables import spec_apply_log

from .document import SpecDocument

MAX_ERROR = 4000


def ensure_log(engine: Engine) -> None:
    """Create the log table when it is missing (it is a system table; setup apply creates it too)."""
    if spec_apply_log.name not in table_names(engine):
        spec_apply_log.create(engine, checkfirst=True)


def now(engine: Engine) -> datetime:
    """The database's UTC clock."""
    with engine.connect() as conn:
        return dialect_for(conn).utc_now(conn)


def start(
    engine: Engine, doc: SpecDocument, env: str, outcome: str = "running", error: str | None = None
) -> str:
    """Insert an attempt; return its id. Finished attempts (skip, refusal) pass their outcome."""
    row_id = uuid.uuid4().hex
    dialect = dialect_for(engine)
    with engine.begin() as conn:
        at = dialect.utc_now(conn)
        conn.execute(
            sa.insert(spec_apply_log).values(
                Id=row_id,
                spec_id=doc.id[:255],
                spec_digest=doc.digest,
                env=env,
                status=doc.status[:32],
                started_at=at,
                finished_at=None if outcome == "running" else at,
                outcome=outcome,
                error=error[:MAX_ERROR] if error else None,
            )
        )
    return row_id


def finish(engine: Engine, row_id: str, outcome: str, error: str | None = None) -> None:
    """Close an attempt with its outcome."""
    dialect = dialect_for(engine)
    t = spec_apply_log
    with engine.begin() as conn:
        conn.execute(
            sa.update(t)
            .where(t.c.Id == row_id)
            .values(
                finished_at=dialect.utc_now(conn), outcome=outcome, error=error[:MAX_ERROR] if error else None
            )
        )


def applied(engine: Engine, spec_id: str, env: str, digest: str | None = None) -> list[datetime]:
    """When the spec applied cleanly to `env` (finish times, UTC), optionally only with this digest."""
    if spec_apply_log.name not in table_names(engine):
        return []
    t = spec_apply_log
    stmt = sa.select(t.c.finished_at).where(
        t.c.spec_id == spec_id,
        t.c.env == env,
        t.c.outcome == "applied",
        t.c.error.is_(None),
        t.c.finished_at.is_not(None),
    )
    if digest is not None:
        stmt = stmt.where(t.c.spec_digest == digest)
    with engine.connect() as conn:
        return [to_utc(v) for v in conn.execute(stmt).scalars()]


def attempts(engine: Engine, spec_id: str | None = None) -> list[dict[str, Any]]:
    """Every logged attempt (oldest first), for `spec log` and tests."""
    if spec_apply_log.name not in table_names(engine):
        return []
    t = spec_apply_log
    stmt = sa.select(t).order_by(t.c.started_at, t.c.Id)
    if spec_id is not None:
        stmt = stmt.where(t.c.spec_id == spec_id)
    with engine.connect() as conn:
        return [dict(row._mapping) for row in conn.execute(stmt)]
