"""API names from metadata: validated before any table or column is built from them."""

from __future__ import annotations

import re

from autonumber.errors import InvalidIdentifier

API_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
MAX_LENGTH = 64


def check_api_name(name: object, what: str = "API name") -> str:
    """Return `name` when it is a valid API name (^[A-Za-z][A-Za-z0-9_]*$, ≤ 64 chars), else raise."""
    if not isinstance(name, str) or len(name) > MAX_LENGTH or not API_NAME.fullmatch(name):
        raise InvalidIdentifier(str(name), what)
    return name
