"""`autonumber demo legacy`: fill a database with pre-cutover data to try `setup apply` on."""

from __future__ import annotations

from typing import Annotated

import typer

from .common import DEFAULT_URL, MAX_ROWS, DbOption

app = typer.Typer(rich_markup_mode=None, help="Demo data for trying the product.", no_args_is_help=True)


@app.command("legacy")
def legacy(
    db: DbOption = DEFAULT_URL,
    rows: Annotated[
        int,
        typer.Option(
            "--rows", metavar="N", min=1, max=MAX_ROWS, help="Rows per main object (Case, Contract)."
        ),
    ] = 1000,
) -> None:
    """Create the object tables and the four legacy tables, filled with existing numbers.

    Afterwards `autonumber setup apply` seeds the counters from them (the next Account is
    IBG-B-<today>-003968). Use a database you can throw away.

    Example: autonumber demo legacy --rows 5000 --db sqlite:///demo.db
    """
    from autonumber.commands import setup
    from autonumber.db import mask
    from autonumber.progress import RichReporter

    summary = setup.demo_legacy(db, rows, RichReporter())
    typer.echo(f"demo legacy data in {mask(db)}:")
    for line in summary.lines():
        typer.echo(f"  {line}")
    typer.echo("next: autonumber setup apply --db <same URL>")
