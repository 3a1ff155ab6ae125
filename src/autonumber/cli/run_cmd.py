"""`autonumber run`: the main job of `make run` — bootstrap the database if needed, then serve it."""

from __future__ import annotations

from typing import Annotated

import typer

from .common import DEFAULT_URL, DbOption
from .serve_cmd import HostOption, MaxConnectionsOption, PortOption, WorkersOption, start_server


def prepare_database(db: str) -> None:
    """Bring the database to a usable state with `setup apply` (idempotent, verify binding)."""
    from autonumber.commands import setup
    from autonumber.progress import RichReporter

    outcome = setup.apply_setup(db, RichReporter(verbose=False))
    typer.echo(f"database ready: setup apply made {outcome.changes} change(s); V1-V7 hold")


def run(
    db: DbOption = DEFAULT_URL,
    host: HostOption = "127.0.0.1",
    port: PortOption = 8000,
    no_serve: Annotated[bool, typer.Option("--no-serve", help="Only prepare the database.")] = False,
    workers: WorkersOption = 1,
    max_connections: MaxConnectionsOption = None,
) -> None:
    """Prepare the database (bootstrap if needed), then serve the console, printing its URL.

    Example: autonumber run --db sqlite:///autonumber.db --port 8000
    """
    prepare_database(db)
    if not no_serve:
        start_server(db, host, port, workers=workers, max_connections=max_connections)
