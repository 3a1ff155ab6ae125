"""autonumber: Salesforce-grade auto-numbers from display formats kept as metadata.

The public surface is what this module re-exports; everything else is internal. The re-exports are
loaded on first use, so a program that needs only a corner of the package (the CLI checking a
format) does not pay for the engine and SQLAlchemy at start-up.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from . import errors as errors
    from .engine import Engine as Engine
    from .format import Format as Format
    from .format import parse_format as parse_format
    from .runtime import Platform as Platform
    from .runtime import Settings as Settings
    from .runtime import connect as connect

__all__ = ["Engine", "Format", "Platform", "Settings", "connect", "errors", "parse_format"]

_HOMES = {
    "Engine": "autonumber.engine",
    "Format": "autonumber.format",
    "parse_format": "autonumber.format",
    "Platform": "autonumber.runtime",
    "Settings": "autonumber.runtime",
    "connect": "autonumber.runtime",
}


def __getattr__(name: str) -> object:
    """Import a re-exported name from its home module the first time it is asked for; a subpackage
    (`autonumber.db`) is imported on first use too, as it was when the package loaded eagerly."""
    home = _HOMES.get(name)
    if home is None:
        try:
            return import_module(f"autonumber.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"autonumber.{name}":
                raise
            raise AttributeError(f"module 'autonumber' has no attribute {name!r}") from None
    value = getattr(import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's names, the not yet loaded re-exports included."""
    return sorted({*globals(), *__all__})
