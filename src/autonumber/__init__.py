"""autonumber: Salesforce-grade auto-numbers from display formats kept as metadata.

The public surface is what this module re-exports; everything else is internal.
"""

from __future__ import annotations

from . import errors as errors
from .engine import Engine as Engine
from .format import Format as Format
from .format import parse_format as parse_format
from .platform import Platform as Platform
from .platform import connect as connect

__all__ = ["Engine", "Format", "Platform", "connect", "errors", "parse_format"]
