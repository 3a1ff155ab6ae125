"""`autonumber serve`: the web console and HTTP API under Uvicorn."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from autonumber.web.auth import ENV

from .common import DEFAULT_URL, DbOption

HostOption = Annotated[
    str, typer.Option("--host", help="Interface to bind; the default keeps the console on this machine.")
]
PortOption = Annotated[int, typer.Option("--port", min=0, max=65535, help="TCP port (0 picks a free one).")]


def serve(host: HostOption = "127.0.0.1", port: PortOption = 8000, db: DbOption = DEFAULT_URL) -> None:
    """Serve the web console and the JSON API (OpenAPI at /docs) on an existing database.

    Admin changes (the rules page) need AUTONUMBER_ADMIN_TOKEN in the environment.

    Example: AUTONUMBER_ADMIN_TOKEN=s3cret autonumber serve --port 8000 --db sqlite:///autonumber.db
    """
    start_server(db, host, port)


def start_server(db: str, host: str, port: int) -> None:
    """Open the database, print the URL and run Uvicorn until interrupted."""
    import uvicorn

    from autonumber.web import create_app

    token = os.environ.get(ENV) or None
    app = create_app(db, admin_token=token)
    shown = f"[{host}]" if ":" in host else host
    typer.echo(f"autonumber console on http://{shown}:{port}/  (API docs: /docs; admin "
               f"{'enabled' if token else f'disabled, set {ENV} to enable'})")
    uvicorn.run(app, host=host, port=port, log_level="warning")
