"""Options shared by every command that touches a database."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Annotated

import typer

from autonumber.defaults import DATABASE_ENV, DEFAULT_URL

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["DEFAULT_URL", "DbOption", "console"]

DbOption = Annotated[
    str,
    typer.Option(
        "--db",
        envvar=DATABASE_ENV,
        help="Database URL (sqlite:///file.db, mysql+pymysql://…, postgresql+psycopg://…).",
        show_default=True,
    ),
]


@cache
def console() -> Console:
    """The console commands print tables and summaries on, made on first use (Rich loads late)."""
    from rich.console import Console

    return Console(highlight=False)
