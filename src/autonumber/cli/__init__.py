"""The `autonumber` command line: thin Typer shells over the library, errors turned into one line."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click
import typer
from rich.console import Console

from autonumber.errors import AutonumberError

from .app import app

__all__ = ["app", "main"]


def main(argv: Sequence[str] | None = None) -> None:
    """Run the CLI; an `AutonumberError` prints one line on stderr and exits with its code."""
    command = typer.main.get_command(app)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        rv = command.main(
            args=list(argv) if argv is not None else None,
            prog_name="autonumber",
            standalone_mode=False,
        )
    except click.exceptions.Abort:
        err.print("aborted")
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except AutonumberError as exc:
        err.print(f"error: {exc}", markup=False)
        sys.exit(exc.exit_code)
    sys.exit(rv if isinstance(rv, int) else 0)
