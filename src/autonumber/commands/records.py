"""Inserting and reading records of an object on a database named by URL."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .session import platform

Row = Mapping[str, Any]


def insert(url: str, object_name: str, values: Row) -> dict[str, Any]:
    """Insert one record; return it as stored, its autonumbers included."""
    with platform(url) as p:
        return p.records.insert(object_name, values)


def get(url: str, object_name: str, record_id: str) -> dict[str, Any]:
    """One record (RecordNotFound when there is none)."""
    with platform(url) as p:
        return p.records.get(object_name, record_id)


def newest(url: str, object_name: str, limit: int) -> list[dict[str, Any]]:
    """The newest `limit` records of an object."""
    with platform(url) as p:
        return p.records.list(object_name, limit=limit)
