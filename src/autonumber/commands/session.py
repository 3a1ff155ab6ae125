"""How a command opens a database and closes it again: the one place that builds engines for users."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.engine import Connection, Engine

from autonumber.db import check_reachable, create_engine
from autonumber.db.version import check_schema
from autonumber.runtime import Platform, connect


@contextmanager
def opened(url: str, *, check: bool = True, schema: bool = True) -> Iterator[Engine]:
    """An engine on `url`, disposed on exit; `check`: reachable first, or a one-line ConfigError;
    `schema`: the database's schema version is this release's, or a one-line SchemaVersionError
    (off only for the commands that create or upgrade the schema, or just look at it)."""
    engine = create_engine(url)
    try:
        if check:
            check_reachable(engine)
            if schema:
                check_schema(engine)
        yield engine
    finally:
        engine.dispose()


@contextmanager
def writing(url: str) -> Iterator[Connection]:
    """One write transaction on `url`: committed when the block ends, rolled back on an exception."""
    with opened(url) as engine, engine.begin() as conn:
        yield conn


@contextmanager
def platform(url: str, *, max_connections: int | None = None) -> Iterator[Platform]:
    """A Platform on `url` (engine, records, catalog), closed on exit."""
    p = connect(url, max_connections=max_connections)
    try:
        yield p
    finally:
        p.close()
