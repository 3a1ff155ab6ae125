"""The Typer application and its command groups; each group lives in its own module."""

from __future__ import annotations

import typer

from . import db_cmd, format_cmd
from .common import DbOption

app = typer.Typer(
    name="autonumber",
    help="Salesforce-grade auto-numbers for CRM records, driven by display formats kept as metadata.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(db_cmd.app, name="db")
app.add_typer(format_cmd.app, name="format")


@app.command("run")
def run(db: DbOption = "sqlite:///autonumber.db") -> None:
    """The main job of `make run`: bootstrap the database, then report its status.

    Example: autonumber run --db sqlite:///autonumber.db
    """
    db_cmd.init(db)
    db_cmd.status(db)
