"""Options shared by every command that touches a database."""

from __future__ import annotations

from typing import Annotated

import typer

DEFAULT_URL = "sqlite:///autonumber.db"

DbOption = Annotated[
    str,
    typer.Option(
        "--db",
        envvar="AUTONUMBER_DATABASE_URL",
        help="Database URL (sqlite:///file.db, mysql+pymysql://…, postgresql+psycopg://…).",
        show_default=True,
    ),
]
