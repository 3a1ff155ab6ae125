"""Objects a user brings: custom objects the platform creates, and application tables it adopts."""

from __future__ import annotations

from .adopt import adopt_column, adopt_table, is_adopted
from .custom import ObjectDefinitionError, add_object, add_object_field, parse_field

__all__ = [
    "ObjectDefinitionError",
    "add_object",
    "add_object_field",
    "adopt_column",
    "adopt_table",
    "is_adopted",
    "parse_field",
]
