"""The API-name grammar (`^[A-Za-z][A-Za-z0-9_]*$`) of objects and fields, written once.

A leaf module with no imports from the package, so errors, identifiers and the format grammar can
all build on it without an import cycle.
"""

from __future__ import annotations

import re

API_NAME_PATTERN = r"[A-Za-z][A-Za-z0-9_]*"
"""An object or field API name, unanchored (compose it into larger patterns)."""

API_NAME = re.compile(API_NAME_PATTERN)
"""`API_NAME_PATTERN` compiled; use `fullmatch` to check a whole name."""
