"""Options shared by every command that touches a database."""

from __future__ import annotations

from typing import Annotated

import typer

from autonumber.defaults import DATABASE_ENV, DEFAULT_URL

__all__ = ["DEFAULT_URL", "DbOption"]

DbOption = Annotated[
    str,
    typer.Option(
        "--db",
        envvar=DATABASE_ENV,
        help="Database URL (sqlite:///file.db, mysql+pymysql://…, postgresql+psycopg://…).",
        show_default=True,
    ),
]
