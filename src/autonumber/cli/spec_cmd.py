"""`autonumber spec` commands (being written)."""

from __future__ import annotations

import typer

app = typer.Typer(help="spec commands.", no_args_is_help=True)
