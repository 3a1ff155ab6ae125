"""`autonumber db init|status`: create the system schema and look at a database."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from .common import DEFAULT_URL, DbOption, JsonOption, console, print_json, show_table

if TYPE_CHECKING:
    from autonumber.db.status import DatabaseStatus

app = typer.Typer(
    rich_markup_mode=None, help="Create the system schema and inspect a database.", no_args_is_help=True
)


@app.command("init")
def init(
    db: DbOption = DEFAULT_URL,
    page_size: Annotated[
        int | None,
        typer.Option(
            "--page-size",
            metavar="BYTES",
            help="SQLite only: make a file that does not exist yet with pages of this many bytes "
            "(512-65536, a power of two; SQLite's default 4096). 16384 makes a bulk import faster "
            "and each single insert slower (docs/import.md).",
        ),
    ] = None,
) -> None:
    """Create the system tables; on a database of an earlier release, the same as `db upgrade`.

    Example: autonumber db init --db sqlite:///autonumber.db
    Example: autonumber db init --page-size 16384 --db sqlite:///import.db
    """
    _upgrade(db, page_size)


@app.command("upgrade")
def upgrade(db: DbOption = DEFAULT_URL) -> None:
    """Bring a database made by an earlier release to this release's schema version.

    Runs the numbered migrations under the bootstrap lock, then recreates what another tool dropped
    (missing system tables, empty; UNIQUE indexes on autonumber columns); idempotent, and a run
    killed halfway resumes where it stopped. Stored duplicates in an autonumber column stop it (exit 2) naming
    the field, the value and the rows. See docs/upgrading.md.

    Example: autonumber db upgrade --db postgresql+psycopg://postgres@127.0.0.1/autonumber
    """
    _upgrade(db)


def _upgrade(db: str, page_size: int | None = None) -> None:
    from autonumber.commands import setup
    from autonumber.defaults import SCHEMA_VERSION
    from autonumber.progress import RichReporter

    changes = setup.upgrade_schema(db, RichReporter(), page_size=page_size)
    for line in changes:
        console().print(f"  {line}", markup=False)
    console().print(f"schema version {SCHEMA_VERSION}, up to date ({len(changes)} change(s))")


@app.command("status")
def status(as_json: JsonOption = False, db: DbOption = DEFAULT_URL) -> None:
    """Print the backend, its UTC clock, the system tables and how many rules and counters exist.

    Example: autonumber db status --json --db postgresql+psycopg://postgres@127.0.0.1/autonumber
    """
    from autonumber.commands import setup

    st = setup.status(db)
    if as_json:
        print_json(status_json(st))
    else:
        print_status(st)


def status_json(st: DatabaseStatus) -> dict[str, object]:
    """The status as `db status --json` prints it (docs/cli.md)."""
    from dataclasses import asdict

    from autonumber.defaults import SCHEMA_VERSION

    tables = [{"table": name, "present": ok} for name, ok in st.system_tables.items()]
    return {
        **asdict(st),
        "clock": st.clock.isoformat(),
        "system_tables": tables,
        "release_schema_version": SCHEMA_VERSION,
    }


def print_status(st: DatabaseStatus) -> None:
    """Render a DatabaseStatus as a small table."""
    from rich.table import Table

    table = Table(title=f"autonumber database {st.url}", show_header=False)
    table.add_row("backend", f"{st.backend} {st.server_version}".strip())
    table.add_row("database clock (UTC)", st.clock.isoformat())
    if st.page_size is not None:
        table.add_row("page size", f"{st.page_size} bytes")
    from autonumber.defaults import SCHEMA_VERSION

    found = "none (no system tables)" if st.schema_version is None else str(st.schema_version)
    table.add_row("schema version", f"{found} (this release: {SCHEMA_VERSION})")
    missing = [name for name, ok in st.system_tables.items() if not ok]
    table.add_row("system tables", "all present" if not missing else "missing: " + ", ".join(missing))
    table.add_row("legacy tables", ", ".join(st.legacy_tables) or "none")
    table.add_row("objects", str(st.objects))
    table.add_row("autonumber fields", str(st.autonumber_fields))
    table.add_row("counter rows", str(st.counter_rows))
    show_table(table)
