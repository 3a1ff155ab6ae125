"""`autonumber counter show|set`: a field's counters and setting its next number (docs/changing-rules.md)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

import typer

from .common import (
    DEFAULT_URL,
    MAX_COUNTER,
    DbOption,
    FieldArg,
    JsonOption,
    ObjectArg,
    one_field,
    print_json,
)

app = typer.Typer(
    rich_markup_mode=None,
    help="Show a field's counters and set its next number (never below what it ever reserved).",
    no_args_is_help=True,
)


@app.command("show")
def show_cmd(
    object_name: ObjectArg,
    field: FieldArg = None,
    as_json: JsonOption = False,
    db: DbOption = DEFAULT_URL,
) -> None:
    """Each counter of the field: next value, the number it prints as (the record's parts named where
    the record decides them) and the floor (the lowest next value `counter set` accepts).

    Example: autonumber counter show Case CaseNumber --json
    """
    object_name, field = one_field(object_name, field)
    from autonumber.commands import counters

    from .field_show import print_counters

    report = counters.show_counters(db, object_name, field)
    if as_json:
        print_json(asdict(report))
    else:
        print_counters(report)


@app.command("set")
def set_cmd(
    object_name: ObjectArg,
    next_value: Annotated[
        int,
        typer.Option(
            "--next",
            metavar="N",
            min=0,
            max=MAX_COUNTER,
            help="The next number to hand out.",
            show_default=False,
        ),
    ],
    field: FieldArg = None,
    scope_key: Annotated[
        str | None,
        typer.Option(
            "--scope-key",
            metavar="KEY",
            help="The counter of a per_day/per_prefix field (see `counter show`).",
            show_default=False,
        ),
    ] = None,
    db: DbOption = DEFAULT_URL,
) -> None:
    """Set the next number of a field's counter; refused when it is below a number the scope ever
    reserved. The values skipped are journaled (the gap audit names them).

    Example: autonumber counter set Case CaseNumber --next 5000
    """
    object_name, field = one_field(object_name, field)
    from autonumber.commands import counters

    typer.echo(counters.set_counter(db, object_name, field, next_value, scope_key).line)
