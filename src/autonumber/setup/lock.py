"""The named lock every schema and set-up change runs under (`setup apply`, `db upgrade`, spec apply)."""

from __future__ import annotations

import time

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from autonumber.db.schema import table_names
from autonumber.db.tables import lock_table

BOOTSTRAP_LOCK = "autonumber_bootstrap"
BOOTSTRAP_TIMEOUT = 600.0


def ensure_lock_table(engine: Engine) -> None:
    """Create `_System_Lock` before the first lease lock; parallel first runs may race to it."""
    for _ in range(5):
        if lock_table.name in table_names(engine):
            return
        try:
            lock_table.create(engine, checkfirst=True)
            return
        except sa.exc.DBAPIError:
            time.sleep(0.1)  # another process created it between the check and the CREATE
    lock_table.create(engine, checkfirst=True)
