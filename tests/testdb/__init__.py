"""Test databases that start in milliseconds: bootstrap once per backend per session, then copy.

Every test that takes `db_url` wants an empty database, and most then bootstrap the core pack;
bootstrapping costs seconds on a server (on MariaDB each DDL commits on its own). So each session
(each pytest-xdist worker) bootstraps once per backend into a snapshot and hands out copies:

- SQLite (`sqlite.py`): the snapshot is a file; a copy is a file copy.
- PostgreSQL (`postgresql.py`): the snapshot is a `pg_dump`, replayed in one transaction.
- MariaDB (`mysql.py`): the snapshot is a database `<name>_tpl`; an unchanged platform's tables are
  parked in `<name>_spare` and reloaded for the next copy.

Each worker uses its own databases, named after the configured one plus the worker id (created
when missing), so `.ci/run` need not know the worker count.

A test that needs more than the platform — a full-spec cut-over takes a minute on MariaDB — asks
`restore_state(url, key, build)` (`states.py`): the first worker to ask builds that state and
dumps it to a file in the run's shared temporary directory; every later test of every worker
replays the dump in seconds.
"""

from __future__ import annotations

from sqlalchemy.engine import make_url

from . import mysql, postgresql, sqlite
from .servers import ensure_database, managed, worker_id, worker_url
from .sqlite import snapshot_dir as sqlite_snapshot_dir
from .states import restore_state, shared_dir

__all__ = [
    "ensure_database",
    "make_empty",
    "manage",
    "restore_platform",
    "restore_state",
    "shared_dir",
    "sqlite_snapshot_dir",
    "worker_id",
    "worker_url",
]


def make_empty(url: str) -> None:
    """Empty the server test database of `url` (tables, views, sequences; on PostgreSQL all of `public`)."""
    if make_url(url).get_backend_name() == "postgresql":
        postgresql.empty(url)
    else:
        mysql.empty(url)


def manage(url: str) -> None:
    """Mark `url` as a server test database this session owns (copies may replace its contents)."""
    managed.add(url)


def restore_platform(url: str) -> bool:
    """Give the EMPTY test database `url` a copy of the bootstrapped core pack; False when `url`
    is not an empty test database of this session (the caller then bootstraps for real)."""
    backend = make_url(url).get_backend_name()
    if backend == "sqlite":
        return sqlite.restore(url)
    if url not in managed:
        return False
    if backend == "postgresql":
        return postgresql.restore(url)
    return mysql.restore(url)
