"""The stored rule: one `_System_Field` row's rule columns, the one type every layer reads.

The catalog (below `rules/`) keeps these rows; planning, `field set`, spec apply, setup apply, the
console and the adapters read the same type. An attribute is its `auto_number_*` column without
the prefix, so a new rule attribute is a new column and a new field here, nothing else.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from autonumber.catalog.allocation import SINGLE
from autonumber.catalog.shared import CounterKeyed
from autonumber.db.tables import AUTONUMBER_COLUMNS
from autonumber.format import FieldInfo

PREFIX = "auto_number_"

POLICY = ("format", "scope", "start", "numbering", "time_zone")
"""What a model of the Django and SQLAlchemy adapters declares: they compare and set only these,
and an edit from them keeps the rest as stored."""

EDITABLE = (*POLICY, "allocation", "fiscal_year_start", "shared_counter")
"""What an edit can change (RuleEdit)."""


@dataclass(frozen=True)
class StoredRule(CounterKeyed):
    """One field's row as stored: its metadata and its rule columns (format None: not an
    autonumber field yet)."""

    field_id: str
    info: FieldInfo
    format: str | None = None
    start: int = 1
    scope: str = "global"
    token_refs: str | None = None
    numbering: str = "standard"
    time_zone: str = "UTC"
    date_src: str = "assigned_at"
    on_change: str = "keep_existing"
    allocation: str = SINGLE
    fiscal_year_start: int = 1
    date_field: str | None = None
    shared_counter: str | None = None
    """The shared counter the field draws from (None: its own counter; autonumber/catalog/shared.py)."""

    @classmethod
    def of(cls, field_id: str, info: FieldInfo, columns: Mapping[Any, Any]) -> StoredRule:
        """From the `auto_number_*` column values by name (a row's mapping or `rule_values`)."""
        given = {c.removeprefix(PREFIX): columns[c] for c in AUTONUMBER_COLUMNS if c in columns}
        if given.get("start") is not None:
            given["start"] = int(given["start"])
        return cls(field_id, info, **{k: v for k, v in given.items() if v is not None or k in _NULLABLE})

    @classmethod
    def from_row(cls, object_name: str, row: Mapping[Any, Any]) -> StoredRule:
        """From a whole `_System_Field` row of the object."""
        info = FieldInfo(object_name, row["ApiName"], row["Type"], row["ReferenceTo"], row["MaxLength"])
        return cls.of(row["Id"], info, row)

    @property
    def name(self) -> str:
        """`Object.Field`."""
        return f"{self.info.object}.{self.info.name}"

    @property
    def max_length(self) -> int | None:
        return self.info.max_length

    @property
    def values(self) -> dict[str, Any]:
        """The rule columns by column name, as `rules.store.rule_values` gives them."""
        return {c: getattr(self, c.removeprefix(PREFIX)) for c in AUTONUMBER_COLUMNS}

    @property
    def policy(self) -> tuple[Any, ...]:
        """What a model declares (POLICY): the adapters compare a model's rule with it."""
        return tuple(getattr(self, a) for a in POLICY)

    @property
    def columns(self) -> tuple[Any, ...]:
        """Every attribute in field order (the catalog digests it to notice a change)."""
        return tuple(getattr(self, f.name) for f in fields(self))

    @property
    def token(self) -> str:
        """A short digest of the rule columns: a form carries it so that the write is compared
        with the rule the admin saw (rules.RuleRequest.base)."""
        return hashlib.blake2b(repr(sorted(self.values.items())).encode(), digest_size=8).hexdigest()


_NULLABLE = {"format", "token_refs", "date_field", "shared_counter"}
