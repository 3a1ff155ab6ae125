"""The display-format grammar (docs/formats.md): parse, validate, render, scan. Pure: no database imports.

The metadata rules and token refs are pydantic models; their names are loaded on first use, so
checking a format alone (`autonumber format check`) does not pay for pydantic at start-up.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from .catalog_view import CatalogView as CatalogView
from .catalog_view import FieldInfo as FieldInfo
from .catalog_view import MemoryCatalog as MemoryCatalog
from .catalog_view import ObjectInfo as ObjectInfo
from .model import Format as Format
from .parser import parse_format as parse_format
from .report import FormatReport as FormatReport
from .report import check_format as check_format
from .scope import MAX_KEY as MAX_SCOPE_KEY
from .scope import validate_scope as validate_scope
from .tokens import MAX_WIDTH as MAX_WIDTH
from .tokens import SCOPES as SCOPES
from .tokens import CrossRef as CrossRef
from .tokens import Token as Token
from .tokens import TokenKind as TokenKind
from .value_patterns import ScanMatch as ScanMatch
from .value_patterns import ScanPattern as ScanPattern

if TYPE_CHECKING:
    from .token_refs import ChainStep as ChainStep
    from .token_refs import TokenRef as TokenRef
    from .token_refs import canonicalize_token_refs as canonicalize_token_refs
    from .token_refs import describe_chain as describe_chain
    from .token_refs import load_token_refs as load_token_refs
    from .validate import derive_token_refs as derive_token_refs
    from .validate import validate_format as validate_format

_LAZY = {
    "ChainStep": ".token_refs",
    "TokenRef": ".token_refs",
    "canonicalize_token_refs": ".token_refs",
    "describe_chain": ".token_refs",
    "load_token_refs": ".token_refs",
    "derive_token_refs": ".validate",
    "validate_format": ".validate",
}

__all__ = [
    "MAX_SCOPE_KEY",
    "MAX_WIDTH",
    "SCOPES",
    "CatalogView",
    "ChainStep",
    "CrossRef",
    "FieldInfo",
    "Format",
    "FormatReport",
    "MemoryCatalog",
    "ObjectInfo",
    "ScanMatch",
    "ScanPattern",
    "Token",
    "TokenKind",
    "TokenRef",
    "canonicalize_token_refs",
    "check_format",
    "derive_token_refs",
    "describe_chain",
    "load_token_refs",
    "parse_format",
    "validate_format",
    "validate_scope",
]


def __getattr__(name: str) -> object:
    """A pydantic-backed name, imported from its module the first time it is asked for."""
    home = _LAZY.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(home, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's names, the not yet loaded ones included."""
    return sorted({*globals(), *__all__})
