"""API names from metadata: validated before any table or column is built from them."""

from __future__ import annotations

import hashlib
from collections.abc import Collection

from autonumber.api_names import API_NAME
from autonumber.errors import InvalidIdentifier

MAX_LENGTH = 64


def check_api_name(name: object, what: str = "API name") -> str:
    """Return `name` when it is a valid API name (^[A-Za-z][A-Za-z0-9_]*$, ≤ 64 chars), else raise."""
    if not isinstance(name, str) or len(name) > MAX_LENGTH or not API_NAME.fullmatch(name):
        raise InvalidIdentifier(str(name), what)
    return name


ID_LENGTH = 64
"""Metadata Ids are VARCHAR(64)."""


def fit_id(text: str) -> str:
    """`text` when it fits an Id column; else its first 47 characters, '#' and a 16-hex digest."""
    if len(text) <= ID_LENGTH:
        return text
    digest = hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
    return f"{text[: ID_LENGTH - 17]}#{digest}"


def object_id(name: str) -> str:
    """Deterministic `_System_Object.Id` (identical on every node and every run)."""
    return fit_id(f"obj_{name}")


def field_id(object_name: str, field_name: str) -> str:
    """Deterministic `_System_Field.Id`: `Object.Field` (shortened with a digest beyond 64 chars)."""
    return fit_id(f"{object_name}.{field_name}")


def free_field_id(taken: Collection[str], object_name: str, field_name: str) -> str:
    """A new field's id: `Object.Field`, unless a renamed field kept that id (then `Object.Field~N`)."""
    fid = field_id(object_name, field_name)
    n = 2
    while fid in taken:
        fid = field_id(object_name, f"{field_name}~{n}")
        n += 1
    return fid
