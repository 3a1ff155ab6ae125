"""The display-format grammar (docs/formats.md): parse, validate, render, scan. Pure: no database imports."""

from __future__ import annotations

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
from .token_refs import ChainStep as ChainStep
from .token_refs import TokenRef as TokenRef
from .token_refs import TokenRefError as TokenRefError
from .token_refs import canonicalize_token_refs as canonicalize_token_refs
from .token_refs import describe_chain as describe_chain
from .token_refs import load_token_refs as load_token_refs
from .tokens import MAX_WIDTH as MAX_WIDTH
from .tokens import SCOPES as SCOPES
from .tokens import CrossRef as CrossRef
from .tokens import Token as Token
from .tokens import TokenKind as TokenKind
from .validate import derive_token_refs as derive_token_refs
from .validate import validate_format as validate_format
from .value_patterns import ScanMatch as ScanMatch
from .value_patterns import ScanPattern as ScanPattern

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
    "TokenRefError",
    "canonicalize_token_refs",
    "check_format",
    "derive_token_refs",
    "describe_chain",
    "load_token_refs",
    "parse_format",
    "validate_format",
    "validate_scope",
]
