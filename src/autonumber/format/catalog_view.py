"""The read-only metadata the validation rules need, as a Protocol plus an in-memory version."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class ObjectInfo:
    """An object of `_System_Object`: its API name and its table."""

    name: str
    table: str


@dataclass(frozen=True)
class FieldInfo:
    """A field of `_System_Field`: type (`text`, `reference`, `formula`, …), ReferenceTo, MaxLength."""

    object: str
    name: str
    type: str
    reference_to: str | None = None
    max_length: int | None = None

    @property
    def is_reference(self) -> bool:
        """True for a lookup (FK) field: not a scalar a token may end on."""
        return self.reference_to is not None or self.type.lower() in {"reference", "lookup"}

    @property
    def is_formula(self) -> bool:
        """True for a computed field that has no stored column (rule 6)."""
        return self.type.lower() == "formula"


class CatalogView(Protocol):
    """What validate_format reads; the database catalog and MemoryCatalog both provide it."""

    def get_object(self, name: str) -> ObjectInfo | None: ...

    def get_field(self, object_name: str, field_name: str) -> FieldInfo | None: ...

    def fields_of(self, object_name: str) -> Sequence[FieldInfo]: ...

    def record_type_columns(self) -> Collection[str]: ...


class MemoryCatalog:
    """A CatalogView over plain lists, for tests, previews and tools that have no database."""

    def __init__(
        self,
        objects: Iterable[ObjectInfo],
        fields: Iterable[FieldInfo],
        record_type_columns: Collection[str] = ("Id", "DeveloperName", "Name", "RecordTypeCode"),
    ) -> None:
        self._objects = {o.name: o for o in objects}
        self._fields: dict[str, list[FieldInfo]] = {name: [] for name in self._objects}
        for f in fields:
            self._fields.setdefault(f.object, []).append(f)
        self._rt_columns = tuple(record_type_columns)

    def get_object(self, name: str) -> ObjectInfo | None:
        return self._objects.get(name)

    def get_field(self, object_name: str, field_name: str) -> FieldInfo | None:
        return next((f for f in self._fields.get(object_name, ()) if f.name == field_name), None)

    def fields_of(self, object_name: str) -> Sequence[FieldInfo]:
        return tuple(self._fields.get(object_name, ()))

    def record_type_columns(self) -> Collection[str]:
        return self._rt_columns
