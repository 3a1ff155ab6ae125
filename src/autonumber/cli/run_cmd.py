"""`autonumber run`: the main job of `make run`."""

from __future__ import annotations

from . import db_cmd
from .common import DbOption


def run(db: DbOption = "sqlite:///autonumber.db") -> None:
    """Bootstrap the database, then report its status.

    Example: autonumber run --db sqlite:///autonumber.db
    """
    db_cmd.init(db)
    db_cmd.status(db)
