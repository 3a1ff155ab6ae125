"""The catalog of a database named by URL, for checking a format against it."""

from __future__ import annotations

from autonumber.catalog.cache import CatalogSnapshot, load_snapshot
from autonumber.db import mask
from autonumber.db.schema import table_names
from autonumber.errors import ConfigError

from .session import opened


def snapshot(url: str) -> CatalogSnapshot:
    """Read the catalog of the database at `url` (its schema must exist)."""
    with opened(url) as engine, engine.connect() as conn:
        if "_System_Object" not in table_names(conn):
            raise ConfigError(f"{mask(url)} has no autonumber schema; run `autonumber setup apply` first")
        return load_snapshot(conn)
