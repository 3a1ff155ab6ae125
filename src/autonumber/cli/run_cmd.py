"""`autonumber run`: the main job of `make run` — bootstrap the database if needed, then serve it."""

from __future__ import annotations

from typing import Annotated

import typer

from autonumber.db import check_reachable, create_engine
from autonumber.setup.bootstrap import bootstrap

from .common import DEFAULT_URL, DbOption
from .serve_cmd import HostOption, PortOption, start_server


def prepare_database(db: str) -> None:
    """Bring the database to a usable state (idempotent): the one place `make run` sets it up.

    Today this is the core bootstrap; it switches to `setup apply` once the setup pipeline ships it.
    """
    engine = create_engine(db)
    try:
        check_reachable(engine)
        changes = bootstrap(engine)
    finally:
        engine.dispose()
    typer.echo(f"database ready ({len(changes)} change(s) applied)")


def run(
    db: DbOption = DEFAULT_URL,
    host: HostOption = "127.0.0.1",
    port: PortOption = 8000,
    no_serve: Annotated[bool, typer.Option("--no-serve", help="Only prepare the database.")] = False,
) -> None:
    """Prepare the database (bootstrap if needed), then serve the console, printing its URL.

    Example: autonumber run --db sqlite:///autonumber.db --port 8000
    """
    prepare_database(db)
    if not no_serve:
        start_server(db, host, port)
