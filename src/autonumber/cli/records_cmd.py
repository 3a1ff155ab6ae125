"""`autonumber records insert|insert-many|get|list`: thin shells over `Platform.records`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from autonumber.bulk.jsonl import MAX_LINE_BYTES

from .common import DEFAULT_URL, DbOption, print_json

app = typer.Typer(
    rich_markup_mode=None,
    help="Insert and read records; autonumbers are assigned on insert.",
    no_args_is_help=True,
)
ObjectArg = Annotated[
    str,
    typer.Argument(
        metavar="OBJECT", help="Object API name, e.g. Account, Contract, Case.", show_default=False
    ),
]


def _emit(record: dict[str, Any]) -> None:
    typer.echo(json.dumps(record, ensure_ascii=False, default=str))


def _parse_object(text: str, where: str) -> dict[str, Any]:
    from autonumber.bulk.jsonl import parse_object

    return parse_object(text, where)


@app.command("insert")
def insert(
    object_name: ObjectArg,
    data: Annotated[
        str, typer.Option("--data", metavar="JSON", help="The record's field values as a JSON object.")
    ],
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
    file: Annotated[
        str,
        typer.Option("--file", metavar="PATH", help="JSON Lines, one JSON object per line; - reads stdin."),
    ],
    db: DbOption = DEFAULT_URL,
    batch_size: Annotated[
        int,
        typer.Option(
            "--batch-size", metavar="N", min=1, max=1_000_000, help="Rows per batch (one reservation each)."
        ),
    ] = 5_000,  # write.records.BATCH_SIZE (a test holds them equal): not imported, --help stays light
    commit_every: Annotated[
        int | None,
        typer.Option(
            "--commit-every",
            metavar="N",
            min=1,
            max=1_000_000,
            help="Commit every N rows (a batch) with its numbers.",
        ),
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue a --commit-every import after a kill.")
    ] = False,
    checkpoint: Annotated[
        Path | None,
        typer.Option(
            "--checkpoint", metavar="PATH", help="Progress file of --commit-every (default FILE.checkpoint)."
        ),
    ] = None,
    errors: Annotated[
        Path | None,
        typer.Option(
            "--errors", metavar="PATH", help="Write refused lines here with their reason; import the rest."
        ),
    ] = None,
    max_line_bytes: Annotated[
        int,
        typer.Option("--max-line-bytes", metavar="BYTES", min=1, help="Refuse a longer line (file:line)."),
    ] = MAX_LINE_BYTES,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Print one summary line, not the records.")
    ] = False,
) -> None:
    """Stream a JSONL file into an object in batches; print the stored records, one per line.

    By default the whole file is ONE transaction: a bad line (named file:line) writes nothing, and
    the records are printed once it committed. --commit-every N commits each batch of N rows and
    records progress in a checkpoint file; after a kill, the same command with --resume continues
    after the last committed line. --errors FILE writes refused lines there and imports the rest.
    Progress goes to stderr: a bar on a terminal, a line every few seconds otherwise.

    Example: autonumber records insert-many Case --file cases.jsonl --db sqlite:///autonumber.db
    """
    from autonumber.bulk.imports import ImportOptions

    from .import_cmd import run_file_import

    if checkpoint is None and commit_every is not None and file != "-":
        checkpoint = Path(file + ".checkpoint")
    options = ImportOptions(batch_size, commit_every, checkpoint, resume, keep_going=errors is not None)
    run_file_import(db, object_name, file, options, errors=errors, max_line_bytes=max_line_bytes, quiet=quiet)


@app.command("get")
def get(
    object_name: ObjectArg,
    record_id: Annotated[str, typer.Argument(metavar="ID", help="The record's Id.", show_default=False)],
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
    limit: Annotated[
        int, typer.Option("--limit", metavar="N", min=1, max=10_000, help="At most this many.")
    ] = 20,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON array instead of one JSON object per line.")
    ] = False,
    db: DbOption = DEFAULT_URL,
) -> None:
    """Print the newest records of an object, one JSON object per line (JSON Lines).

    Example: autonumber records list Contract --limit 5
    """
    from autonumber.commands import records

    found = records.newest(db, object_name, limit)
    if as_json:
        print_json(list(found))
        return
    for record in found:
        _emit(record)
