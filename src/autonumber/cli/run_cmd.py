"""`autonumber run`: the main job of `make run` — bootstrap the database if needed, then serve it."""

from __future__ import annotations

from typing import Annotated

import typer

from autonumber.db import check_reachable, create_engine
from autonumber.progress import RichReporter
from autonumber.setup.apply import apply
from autonumber.setup.generate import load_spec

from .common import DEFAULT_URL, DbOption
from .serve_cmd import HostOption, MaxConnectionsOption, PortOption, WorkersOption, start_server


def prepare_database(db: str) -> None:
    """Bring the database to a usable state with `setup apply` (idempotent, verify binding)."""
    engine = create_engine(db)
    try:
        check_reachable(engine)
        results = apply(engine, load_spec(), reporter=RichReporter(verbose=False))
    finally:
        engine.dispose()
    changes = sum(len(result.changes) for result in results)
    typer.echo(f"database ready: setup apply made {changes} change(s); V1-V7 hold")


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
