"""The `autonumber` command line: thin Typer shells over the library, errors turned into one line."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import typer
from rich.console import Console

from autonumber.errors import AutonumberError

from .app import app

__all__ = ["app", "main"]


def main(argv: Sequence[str] | None = None) -> None:
    """Run the CLI; an `AutonumberError` prints one line on stderr and exits with its code.

    Click's standalone mode handles usage errors (exit 2) and ^C itself; our own errors pass
    through it and are turned into one line here, never a traceback.
    """
    command = typer.main.get_command(app)
    try:
        command.main(
            args=list(argv) if argv is not None else None,
            prog_name="autonumber",
            standalone_mode=True,
        )
    except AutonumberError as exc:
        Console(stderr=True, highlight=False, soft_wrap=True).print(f"error: {exc}", markup=False)
        sys.exit(exc.exit_code)
