"""`autonumber db init|status`: create the system schema and look at a database."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

from autonumber.db import check_reachable, create_engine
from autonumber.db.schema import reconcile_system_schema
from autonumber.db.status import DatabaseStatus, database_status

from .common import DbOption

app = typer.Typer(help="Create the system schema and inspect a database.", no_args_is_help=True)
console = Console(highlight=False)


@app.command("init")
def init(db: DbOption = "sqlite:///autonumber.db") -> None:
    """Create or reconcile the system tables (idempotent; existing rows are untouched).

    Example: autonumber db init --db sqlite:///autonumber.db
    """
    engine = create_engine(db)
    check_reachable(engine)
    changes = reconcile_system_schema(engine)
    for line in changes:
        console.print(f"  {line}")
    console.print(f"schema up to date ({len(changes)} change(s))")


@app.command("status")
def status(db: DbOption = "sqlite:///autonumber.db") -> None:
    """Print the backend, its UTC clock, the system tables and how many rules and counters exist.

    Example: autonumber db status --db postgresql+psycopg://postgres@127.0.0.1/autonumber
    """
    engine = create_engine(db)
    check_reachable(engine)
    print_status(database_status(engine))


def print_status(st: DatabaseStatus) -> None:
    """Render a DatabaseStatus as a small table."""
    table = Table(title=f"autonumber database {st.url}", show_header=False)
    table.add_row("backend", f"{st.backend} {st.server_version}".strip())
    table.add_row("database clock (UTC)", st.clock.isoformat())
    missing = [name for name, ok in st.system_tables.items() if not ok]
    table.add_row("system tables", "all present" if not missing else "missing: " + ", ".join(missing))
    table.add_row("legacy tables", ", ".join(st.legacy_tables) or "none")
    table.add_row("objects", str(st.objects))
    table.add_row("autonumber fields", str(st.autonumber_fields))
    table.add_row("counter rows", str(st.counter_rows))
    console.print(table)
