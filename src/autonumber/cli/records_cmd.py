"""`autonumber records insert|insert-many|get|list`: thin shells over `Platform.records`."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import Progress

import autonumber
from autonumber.errors import RecordError
from autonumber.platform import Platform

from .common import DEFAULT_URL, DbOption

app = typer.Typer(help="Insert and read records; autonumbers are assigned on insert.", no_args_is_help=True)
CHUNK = 500
"""Rows per `insert_many` call in insert-many: one reservation per field and chunk."""
ObjectArg = Annotated[str, typer.Argument(help="Object API name, e.g. Account, Contract, Case.")]


@contextmanager
def _platform(db: str) -> Iterator[Platform]:
    p = autonumber.connect(db)
    try:
        yield p
    finally:
        p.close()


def _emit(record: dict[str, Any]) -> None:
    typer.echo(json.dumps(record, ensure_ascii=False, default=str))


def _parse_object(text: str, where: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(f"{where}: invalid JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(value, dict):
        raise RecordError(f"{where}: expected a JSON object of field values, got {type(value).__name__}")
    return value


@app.command("insert")
def insert(
    object_name: ObjectArg,
    data: Annotated[str, typer.Option("--data", help="The record's field values as a JSON object.")],
    db: DbOption = DEFAULT_URL,
) -> None:
    """Insert one record and print it as stored (JSON), its autonumbers included.

    Example: autonumber records insert Account --data '{"Name": "Acme", "BillingCountryCode": "SG"}'
    """
    values = _parse_object(data, "--data")
    with _platform(db) as p:
        _emit(p.records.insert(object_name, values))


@app.command("insert-many")
def insert_many(
    object_name: ObjectArg,
    file: Annotated[Path, typer.Option("--file", help="JSON Lines: one JSON object per line.")],
    db: DbOption = DEFAULT_URL,
) -> None:
    """Insert every line of a JSONL file in ONE transaction; print the stored records, one per line.

    Nothing is written when any line is invalid (the error names its line). A progress bar is
    shown on stderr when it is a terminal.

    Example: autonumber records insert-many Case --file cases.jsonl --db sqlite:///autonumber.db
    """
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise RecordError(f"cannot read {file}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        line = exc.object[: exc.start].count(b"\n") + 1
        raise RecordError(f"{file}:{line}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x})") from None
    numbered = [(n, line) for n, line in enumerate(lines, 1) if line.strip()]
    rows = [_parse_object(line, f"{file}:{n}") for n, line in numbered]
    with _platform(db) as p:
        for (n, _), row in zip(numbered, rows, strict=True):
            p.records.check(object_name, row, f"{file}:{n}")
        stored: list[dict[str, Any]] = []
        err = Console(stderr=True)
        with (
            Progress(console=err, disable=not sys.stderr.isatty(), transient=True) as bar,
            p.begin() as conn,
        ):
            task = bar.add_task(f"inserting {object_name}", total=len(rows))
            for start in range(0, len(rows), CHUNK):
                chunk = rows[start : start + CHUNK]
                stored += p.records.insert_many(object_name, chunk, conn=conn)
                bar.advance(task, len(chunk))
    for record in stored:
        _emit(record)


@app.command("get")
def get(
    object_name: ObjectArg,
    record_id: Annotated[str, typer.Argument(help="The record's Id.")],
    db: DbOption = DEFAULT_URL,
) -> None:
    """Print one record as JSON (exit 2 when there is no such record).

    Example: autonumber records get Account 0f3c6d0e9a7b4c1d8e2f5a6b7c8d9e0f
    """
    with _platform(db) as p:
        _emit(p.records.get(object_name, record_id))


@app.command("list")
def list_(
    object_name: ObjectArg,
    limit: Annotated[int, typer.Option("--limit", min=1, max=10_000, help="At most this many.")] = 20,
    db: DbOption = DEFAULT_URL,
) -> None:
    """Print the newest records of an object, one JSON object per line.

    Example: autonumber records list Contract --limit 5
    """
    with _platform(db) as p:
        for record in p.records.list(object_name, limit=limit):
            _emit(record)
