"""`autonumber db init|status`: create the system schema and look at a database."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from .common import DEFAULT_URL, DbOption, console

if TYPE_CHECKING:
    from autonumber.db.status import DatabaseStatus

app = typer.Typer(
    rich_markup_mode=None, help="Create the system schema and inspect a database.", no_args_is_help=True
)


@app.command("init")
def init(db: DbOption = DEFAULT_URL) -> None:
    """Create or reconcile the system tables (idempotent; existing rows are untouched).

    Example: autonumber db init --db sqlite:///autonumber.db
    """
    from autonumber.commands import setup

    changes = setup.init_schema(db)
    for line in changes:
        console().print(f"  {line}")
    console().print(f"schema up to date ({len(changes)} change(s))")


@app.command("status")
def status(db: DbOption = DEFAULT_URL) -> None:
    """Print the backend, its UTC clock, the system tables and how many rules and counters exist.

    Example: autonumber db status --db postgresql+psycopg://postgres@127.0.0.1/autonumber
    """
    from autonumber.commands import setup

    print_status(setup.status(db))


def print_status(st: DatabaseStatus) -> None:
    """Render a DatabaseStatus as a small table."""
    from rich.table import Table

    table = Table(title=f"autonumber database {st.url}", show_header=False)
    table.add_row("backend", f"{st.backend} {st.server_version}".strip())
    table.add_row("database clock (UTC)", st.clock.isoformat())
    missing = [name for name, ok in st.system_tables.items() if not ok]
    table.add_row("system tables", "all present" if not missing else "missing: " + ", ".join(missing))
    table.add_row("legacy tables", ", ".join(st.legacy_tables) or "none")
    table.add_row("objects", str(st.objects))
    table.add_row("autonumber fields", str(st.autonumber_fields))
    table.add_row("counter rows", str(st.counter_rows))
    console().print(table)
