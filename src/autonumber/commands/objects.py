"""The objects of a database: finding them with their record counts; custom objects and adopted
application tables, on a database named by URL or a running platform."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from autonumber.objects import add_object, add_object_field, adopt_table
from autonumber.objects.custom import create_object as _create_on_platform
from autonumber.runtime import Platform

from .session import writing


def add(url: str, object_name: str, fields: Sequence[str]) -> list[str]:
    """Create a custom object (table and metadata) in one transaction; [] when it already exists."""
    with writing(url) as conn:
        return add_object(conn, object_name, fields)


def add_plain_field(url: str, object_name: str, field: str) -> list[str]:
    """Add one plain field (NAME:TYPE) to a custom object; [] when it is already there."""
    with writing(url) as conn:
        return add_object_field(conn, object_name, field)


def adopt(url: str, object_name: str, table: str) -> list[str]:
    """Register an existing table as an object; [] when it is already adopted."""
    with writing(url) as conn:
        return adopt_table(conn, object_name, table)


def create(platform: Platform, object_name: str, fields: Sequence[str]) -> list[str]:
    """Create a custom object on a running platform and refresh its catalog (the console's form)."""
    return _create_on_platform(platform, object_name, fields)


@dataclass(frozen=True)
class ObjectSummary:
    """An object with its record count and autonumber fields."""

    name: str
    count: int
    autonumber_fields: list[str]
    match: bool = True
    """Whether the search matched it: the page lists every object and hides the others, so a
    search typed after a submitted one still finds them."""


def matches(query: str, *texts: str) -> bool:
    """Whether any text contains `query`, ignoring case (an empty query matches everything)."""
    q = query.strip().casefold()
    return not q or any(q in t.casefold() for t in texts)


def summaries(platform: Platform, query: str = "") -> list[ObjectSummary]:
    """Every object with its record count, the ones holding records first; `query` marks those whose
    name or autonumber field names contain it (any case) as matching."""
    snap = platform.catalog.current()
    out = [
        ObjectSummary(
            name,
            platform.records.count(name),
            snap.autonumber_fields(name),
            matches(query, name, *snap.autonumber_fields(name)),
        )
        for name in sorted(snap.objects)
    ]
    return sorted(out, key=lambda s: s.count == 0)


@dataclass(frozen=True)
class ObjectLine:
    """One object as `object list` prints it."""

    object: str
    table: str
    adopted: bool
    """True for a table the application owns (`object adopt`); False for one autonumber created."""
    fields: int
    autonumber_fields: list[str]


def list_objects(url: str) -> list[ObjectLine]:
    """Every object of the catalog, by name, with its table and its autonumber fields."""
    from .catalog import snapshot

    snap = snapshot(url)
    return [
        ObjectLine(
            name,
            info.table,
            name in snap.adopted,
            len(snap.fields.get(name, [])),
            [r.info.name for r in snap.fields.get(name, []) if r.format is not None],
        )
        for name, info in sorted(snap.objects.items())
    ]
