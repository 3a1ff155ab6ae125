"""`autonumber field` commands (being written)."""

from __future__ import annotations

import typer

app = typer.Typer(help="field commands.", no_args_is_help=True)
