"""Inserting, importing, reading and changing records of an object, on a running platform or on a
database named by URL; the record types and records by Id a form offers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import sqlalchemy as sa

from autonumber.bulk.imports import ImportOptions, ImportSummary, run_import
from autonumber.bulk.jsonl import Line, read_lines
from autonumber.db.objects import key_column
from autonumber.db.tables import system_object, system_record_type
from autonumber.errors import RecordError
from autonumber.runtime import Platform

from .session import platform

Row = Mapping[str, Any]


class AutonumberFieldLocked(RecordError):
    """A change to an autonumber field: numbers are locked after create."""

    def __init__(self, object_name: str, field_name: str) -> None:
        self.field = field_name
        super().__init__(
            f"{object_name}.{field_name} is an autonumber field: it is assigned on insert and "
            "read-only afterwards"
        )


def require_object(p: Platform, name: str) -> str:
    """The object's name, or UnknownObject."""
    return p.catalog.current().require_object(name).name


def insert_on(
    p: Platform, object_name: str, values: Row, idempotency_key: str | None = None
) -> dict[str, Any]:
    """Insert one record (once per idempotency key); return it as stored, its autonumbers included."""
    return p.records.insert(require_object(p, object_name), values, idempotency_key=idempotency_key)


def insert(url: str, object_name: str, values: Row) -> dict[str, Any]:
    """`insert_on` for the database at `url`."""
    with platform(url) as p:
        return insert_on(p, object_name, values)


def insert_many(
    p: Platform, object_name: str, rows: Sequence[Row], idempotency_key: str | None = None
) -> list[dict[str, Any]]:
    """Insert records in one transaction (once per idempotency key); return them as stored."""
    return p.records.insert_many(require_object(p, object_name), rows, idempotency_key=idempotency_key)


@dataclass
class StreamImport:
    """What `import_stream` did: the summary and the first refused lines (line number, reason)."""

    object_name: str
    summary: ImportSummary
    rejected: list[tuple[int, str]] = field(default_factory=list)


def import_stream(
    p: Platform, object_name: str, stream: BinaryIO, options: ImportOptions, *, keep_rejected: int
) -> StreamImport:
    """Import a JSON Lines stream (all or nothing, or committed batch by batch), keeping the first
    `keep_rejected` refused lines; a failure under `commit_every` says which lines are stored, so
    the client can send the rest."""
    name = require_object(p, object_name)
    done = StreamImport(name, ImportSummary(name))

    def refuse(line: Line, exc: RecordError) -> None:
        if len(done.rejected) < keep_rejected:
            done.rejected.append((line.number, str(exc)))

    def lines(after: int) -> Iterable[Line]:
        return read_lines(stream, "body", after=after)

    try:
        run_import(p.records, name, lines, options, rejected=refuse, summary=done.summary)
    except RecordError as exc:
        if options.commit_every is None or not done.summary.last_line:
            raise
        raise RecordError(f"{exc} (lines 1-{done.summary.last_line} are stored)") from exc
    return done


def get_on(p: Platform, object_name: str, record_id: str) -> dict[str, Any]:
    """One record (RecordNotFound when there is none)."""
    return p.records.get(require_object(p, object_name), record_id)


def get(url: str, object_name: str, record_id: str) -> dict[str, Any]:
    """`get_on` for the database at `url`."""
    with platform(url) as p:
        return get_on(p, object_name, record_id)


def page(p: Platform, object_name: str, limit: int, offset: int) -> tuple[int, list[dict[str, Any]]]:
    """How many records an object has, and one page of them, newest first."""
    name = require_object(p, object_name)
    return p.records.count(name), p.records.list(name, limit=limit, offset=offset)


def newest(url: str, object_name: str, limit: int) -> list[dict[str, Any]]:
    """The newest `limit` records of an object."""
    with platform(url) as p:
        return p.records.list(object_name, limit=limit)


def update(p: Platform, object_name: str, record_id: str, changes: Row) -> dict[str, Any]:
    """Change ordinary fields; an autonumber field in `changes` is refused, naming it."""
    name = require_object(p, object_name)
    for key in p.catalog.current().autonumber_fields(name):
        if key in changes:
            raise AutonumberFieldLocked(name, key)
    return p.records.update(name, record_id, changes)


@dataclass(frozen=True)
class RecordTypeOption:
    """A record type as a form offers it: Id, display name and code."""

    id: str
    name: str
    code: str | None


def record_types(p: Platform, object_name: str) -> list[RecordTypeOption]:
    """The record types of one object, by display name."""
    rt, obj = system_record_type, system_object
    stmt = (
        sa.select(rt.c.Id, rt.c.Name, rt.c.DeveloperName, rt.c.RecordTypeCode)
        .join(obj, obj.c.Id == rt.c.ObjectId)
        .where(obj.c.ApiName == object_name)
        .order_by(sa.func.coalesce(rt.c.Name, rt.c.DeveloperName))
    )
    with p.db.connect() as conn:
        return [
            RecordTypeOption(r.Id, r.Name or r.DeveloperName, r.RecordTypeCode) for r in conn.execute(stmt)
        ]


def by_ids(p: Platform, object_name: str, ids: Iterable[str]) -> dict[str, dict[str, object]]:
    """Several records of one object by Id (its key column) in one query."""
    wanted = sorted({i for i in ids if i})
    if not wanted:
        return {}
    table = p.catalog.current().table(object_name)
    key = key_column(table)
    with p.db.connect() as conn:
        return {
            str(r[key.name]): dict(r)
            for r in conn.execute(sa.select(table).where(key.in_(wanted))).mappings()
        }
