"""Inserting and reading records of an object on a database named by URL."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .session import platform

CHUNK = 500
"""Rows per `insert_many` call: one reservation per field and chunk."""

Row = Mapping[str, Any]


def insert(url: str, object_name: str, values: Row) -> dict[str, Any]:
    """Insert one record; return it as stored, its autonumbers included."""
    with platform(url) as p:
        return p.records.insert(object_name, values)


def insert_many(
    url: str,
    object_name: str,
    rows: Sequence[tuple[str, Row]],
    on_chunk: Callable[[int], None] = lambda _: None,
) -> list[dict[str, Any]]:
    """Insert `(where, row)` pairs in ONE transaction after checking every row (errors name `where`).

    `on_chunk` hears how many rows each chunk stored (a progress bar).
    """
    with platform(url) as p:
        for where, row in rows:
            p.records.check(object_name, row, where)
        stored: list[dict[str, Any]] = []
        with p.begin() as conn:
            for start in range(0, len(rows), CHUNK):
                chunk = [row for _, row in rows[start : start + CHUNK]]
                stored += p.records.insert_many(object_name, chunk, conn=conn)
                on_chunk(len(chunk))
    return stored


def get(url: str, object_name: str, record_id: str) -> dict[str, Any]:
    """One record (RecordNotFound when there is none)."""
    with platform(url) as p:
        return p.records.get(object_name, record_id)


def newest(url: str, object_name: str, limit: int) -> list[dict[str, Any]]:
    """The newest `limit` records of an object."""
    with platform(url) as p:
        return p.records.list(object_name, limit=limit)
