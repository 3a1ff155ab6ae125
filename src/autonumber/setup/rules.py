"""Storing a validated autonumber rule on `_System_Field` and seeding its counter row."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from autonumber.catalog import load_snapshot
from autonumber.db import dialect_for
from autonumber.db.tables import counter_table, system_field
from autonumber.errors import FormatError, UnknownField
from autonumber.format import SCOPES, canonicalize_token_refs, parse_format, validate_format

MAX_SCOPE_KEY = 64
DATE_SOURCES = ("assigned_at",)
ON_CHANGE = ("keep_existing", "regenerate_all")


@dataclass(frozen=True)
class RuleSpec:
    """An autonumber rule as a data-spec declares it."""

    object: str
    field: str
    format: str
    scope: str = "global"
    start: int = 1
    date_src: str = "assigned_at"
    on_change: str = "keep_existing"
    overrides: tuple[Mapping[str, Any], ...] = dc_field(default_factory=tuple)


def check_enums(spec: RuleSpec) -> None:
    """Enforce the enum values of §4.1 (scope extended with per_prefix, DESIGN.md §7)."""
    for value, allowed, what in (
        (spec.scope, SCOPES, "auto_number_scope"),
        (spec.date_src, DATE_SOURCES, "auto_number_date_src"),
        (spec.on_change, ON_CHANGE, "auto_number_on_change"),
    ):
        if value not in allowed:
            raise FormatError(
                9 if what == "auto_number_scope" else 0,
                f"{spec.object}.{spec.field}: {what} {value!r} is not one of {', '.join(allowed)}",
                format=spec.format,
            )
    if spec.start < 0:
        raise FormatError(2, f"{spec.object}.{spec.field}: start {spec.start} must be ≥ 0")


def store_rule(conn: Connection, spec: RuleSpec) -> str:
    """Validate `spec` against the catalog as it is in `conn` and store it; return the field id.

    Raises FormatError (rule N) and writes nothing when the rule is invalid.
    """
    check_enums(spec)
    snapshot = load_snapshot(conn)
    fid = snapshot.field_id(f"{spec.object}.{spec.field}")
    if snapshot.get_field(spec.object, spec.field) is None:
        raise UnknownField(f"{spec.object}.{spec.field}")
    fmt = parse_format(spec.format)
    refs = validate_format(
        fmt,
        source_object=spec.object,
        catalog=snapshot,
        target_field=spec.field,
        scope=spec.scope,
        overrides=list(spec.overrides) or None,
    )
    conn.execute(
        sa.update(system_field)
        .where(system_field.c.Id == fid)
        .values(
            auto_number_format=spec.format,
            auto_number_start=spec.start,
            auto_number_scope=spec.scope,
            auto_number_date_src=spec.date_src,
            auto_number_on_change=spec.on_change,
            auto_number_token_refs=canonicalize_token_refs(refs) if refs else None,
        )
    )
    return fid


def seed_global_counter(conn: Connection, field_id: str, next_value: int) -> None:
    """Make sure a `global` field has its counter row at ≥ next_value (never lowers it)."""
    dialect = dialect_for(conn)
    now = dialect.utc_now(conn)
    dialect.upsert_greatest(
        conn,
        counter_table,
        {"field_id": field_id, "scope_key": ""},
        "next_value",
        next_value,
        {"created_date": now, "last_modified_date": now},
    )


def apply_rules(conn: Connection, specs: Sequence[RuleSpec]) -> list[str]:
    """Store every rule and give each `global` one its counter row at `start` (Approach X)."""
    ids = []
    for spec in specs:
        fid = store_rule(conn, spec)
        if spec.scope == "global":
            seed_global_counter(conn, fid, spec.start)
        ids.append(fid)
    return ids
