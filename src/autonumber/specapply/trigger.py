"""`setup apply --with-guard-trigger`: install the database guard (docs/changing-rules.md) after the apply.

MariaDB/MySQL and PostgreSQL only. SQLite has no session variable a trigger could read, so there a
rule changed behind the applier's back is caught by quarantine alone (the catalog re-validates the
rule columns on every poll and refuses to assign numbers from a broken rule).
"""

from __future__ import annotations

from sqlalchemy.engine import Engine

from autonumber.db import dialect_for
from autonumber.db.guard import TRIGGER, install_guard
from autonumber.errors import ConfigError


def check_guard_supported(engine: Engine) -> None:
    """Refuse --with-guard-trigger up front on a backend without the trigger (before any apply)."""
    try:
        dialect_for(engine).guard_install_sql()
    except ConfigError as exc:
        raise ConfigError(f"--with-guard-trigger: {exc}") from None


def install_guard_trigger(engine: Engine) -> str:
    """Create (or replace) the guard trigger on `_System_Field`; return one line saying so."""
    check_guard_supported(engine)
    with engine.begin() as conn:
        install_guard(conn)
    return f"guard trigger {TRIGGER} installed on _System_Field"
