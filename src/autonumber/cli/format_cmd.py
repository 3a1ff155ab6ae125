"""`autonumber format check|preview` (placeholder until the grammar lands)."""

from __future__ import annotations

import typer

app = typer.Typer(help="Check and preview display formats.", no_args_is_help=True)
