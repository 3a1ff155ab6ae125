"""`autonumber demo` commands (being written)."""

from __future__ import annotations

import typer

app = typer.Typer(help="demo commands.", no_args_is_help=True)
