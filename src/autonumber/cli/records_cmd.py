"""`autonumber records insert|insert-many|get|list`: thin shells over `Platform.records`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from autonumber.errors import RecordError

from .common import DEFAULT_URL, DbOption

app = typer.Typer(help="Insert and read records; autonumbers are assigned on insert.", no_args_is_help=True)
ObjectArg = Annotated[str, typer.Argument(help="Object API name, e.g. Account, Contract, Case.")]


def _emit(record: dict[str, Any]) -> None:
    typer.echo(json.dumps(record, ensure_ascii=False, default=str))


def _parse_object(text: str, where: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(f"{where}: invalid JSON: {exc.msg} (column {exc.colno})") from None
    except ValueError as exc:  # an integer longer than Python converts (4,300 digits)
        raise RecordError(f"{where}: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise RecordError(f"{where}: JSON nested too deeply") from None
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
    from autonumber.commands import records

    _emit(records.insert(db, object_name, _parse_object(data, "--data")))


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
    from rich.console import Console
    from rich.progress import Progress

    from autonumber.commands import records

    rows = [
        (f"{file}:{n}", _parse_object(line, f"{file}:{n}")) for n, line in enumerate(lines, 1) if line.strip()
    ]
    with Progress(console=Console(stderr=True), disable=not sys.stderr.isatty(), transient=True) as bar:
        task = bar.add_task(f"inserting {object_name}", total=len(rows))
        stored = records.insert_many(db, object_name, rows, lambda done: bar.advance(task, done))
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
    from autonumber.commands import records

    _emit(records.get(db, object_name, record_id))


@app.command("list")
def list_(
    object_name: ObjectArg,
    limit: Annotated[int, typer.Option("--limit", min=1, max=10_000, help="At most this many.")] = 20,
    db: DbOption = DEFAULT_URL,
) -> None:
    """Print the newest records of an object, one JSON object per line.

    Example: autonumber records list Contract --limit 5
    """
    from autonumber.commands import records

    for record in records.newest(db, object_name, limit):
        _emit(record)
