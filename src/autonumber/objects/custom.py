"""Custom objects (`Shipment__c`): parse `Name:type` field specs, validate all, then create the table.

Everything is checked before the one DDL statement (MariaDB commits DDL at once); when creating the
table fails anyway, the metadata rows written just before it are removed again.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from autonumber.db import dialect_for
from autonumber.db.objects import object_table
from autonumber.db.schema import reconcile_tables
from autonumber.db.tables import system_field, system_object
from autonumber.errors import AutonumberError
from autonumber.format import FieldInfo
from autonumber.identifiers import check_api_name
from autonumber.runtime import Platform
from autonumber.setup.pack import FieldSpec, ObjectSpec, install_objects, object_id
from autonumber.write.lookups import STANDARD_OBJECTS

FIELD = re.compile(r"(?P<name>[^:]+?)\s*:\s*(?P<type>[a-z]+)\s*(?:\(\s*(?P<arg>[^)]*?)\s*\))?")
SCALAR_TYPES = ("number", "integer", "boolean", "date", "datetime")
TYPES = ("text(N)", *SCALAR_TYPES, "ref(Object)")
MAX_TEXT = 1000
RESERVED = frozenset({"Id", "CreatedDate"})
REF_LENGTH = 64


class ObjectDefinitionError(AutonumberError):
    """A custom object or adopted table the platform refuses (bad field spec, name taken, …)."""

    exit_code = 2


def parse_field(text: str) -> FieldSpec:
    """`Name:text(80)`, `Weight:number`, `AccountId:ref(Account)` → a FieldSpec (names validated)."""
    match = FIELD.fullmatch(text.strip())
    if match is None:
        raise ObjectDefinitionError(f"field {text!r}: expected NAME:TYPE with TYPE one of {', '.join(TYPES)}")
    name = check_api_name(match["name"], "field name")
    kind, arg = match["type"], match["arg"]
    if name in RESERVED:
        raise ObjectDefinitionError(f"field {text!r}: {name} is set by the platform on every object")
    if kind == "text":
        if arg is None or not arg.isdigit() or not 1 <= int(arg) <= MAX_TEXT:
            raise ObjectDefinitionError(f"field {text!r}: text needs a length 1..{MAX_TEXT}, e.g. text(80)")
        return FieldSpec(name, "text", None, int(arg))
    if kind == "ref":
        if arg is None:
            raise ObjectDefinitionError(f"field {text!r}: ref needs its target object, e.g. ref(Account)")
        return FieldSpec(name, "reference", check_api_name(arg, "referenced object"), REF_LENGTH)
    if kind in SCALAR_TYPES and arg is None:
        return FieldSpec(name, kind)
    raise ObjectDefinitionError(
        f"field {text!r}: unknown type {kind + (f'({arg})' if arg else '')!r}; use one of {', '.join(TYPES)}"
    )


def _registered(conn: Connection) -> dict[str, str]:
    o = system_object
    return {str(n): str(t) for n, t in conn.execute(sa.select(o.c.ApiName, o.c.TableName))}


def _existing_fields(conn: Connection, name: str) -> dict[str, tuple[str, str | None, int | None]]:
    f = system_field
    rows = conn.execute(
        sa.select(f.c.ApiName, f.c.Type, f.c.ReferenceTo, f.c.MaxLength).where(
            f.c.ObjectId == object_id(name)
        )
    )
    return {str(r[0]): (str(r[1]), r[2], r[3]) for r in rows}


def check_object(conn: Connection, name: str, fields: Sequence[FieldSpec]) -> bool:
    """Validate a new custom object; True when exactly this object already exists (nothing to do)."""
    check_api_name(name, "object name")
    if not fields:
        raise ObjectDefinitionError(f"object {name}: give at least one --field NAME:TYPE")
    seen: set[str] = set()
    for f in fields:
        if f.name.lower() in seen:
            raise ObjectDefinitionError(f"object {name}: field {f.name} is given twice")
        seen.add(f.name.lower())
    objects = _registered(conn)
    for f in fields:
        if f.reference_to is not None and f.reference_to not in objects and f.reference_to != name:
            raise ObjectDefinitionError(
                f"object {name}: field {f.name} refers to unknown object {f.reference_to!r}"
            )
    if name in objects:
        have = _existing_fields(conn, name)
        wanted = {f.name: (f.type, f.reference_to, f.max_length) for f in fields}
        if all(have.get(k) == v for k, v in wanted.items()):
            return True
        raise ObjectDefinitionError(
            f"object {name} already exists with other fields; add autonumber "
            "fields with `autonumber field add`"
        )
    taken = {t.lower() for t in sa.inspect(conn).get_table_names()} | {t.lower() for t in objects.values()}
    if name.lower() in taken:
        raise ObjectDefinitionError(
            f"object {name}: a table named {name} already exists; register it "
            f"with `autonumber object adopt {name} --table {name}`"
        )
    return False


def add_object(conn: Connection, name: str, fields: Sequence[str | FieldSpec]) -> list[str]:
    """Register a custom object and create its table (`Id`, `CreatedDate`, the fields); return changes."""
    specs = [parse_field(f) if isinstance(f, str) else f for f in fields]
    if check_object(conn, name, specs):
        return []
    with dialect_for(conn).undoing_ddl(lambda: _compensate(conn, name), f"object {name}"):
        return install_objects(conn, [ObjectSpec(name, tuple(specs))])


def add_object_field(conn: Connection, name: str, field: str | FieldSpec) -> list[str]:
    """Add one plain field to a custom object (metadata row and column); [] when it is already there.

    Refused with one line: an object that is not a custom one (the standard pack's, an adopted
    table), a name the object already uses for something else, a bad type or an unknown target.
    """
    spec = parse_field(field) if isinstance(field, str) else field
    check_api_name(name, "object name")
    o = system_object
    row = conn.execute(sa.select(o.c.TableName, o.c.KeyColumn).where(o.c.ApiName == name)).first()
    if row is None:
        raise ObjectDefinitionError(f"object {name}: unknown object; create it with `autonumber object add`")
    if row.KeyColumn is not None or name in STANDARD_OBJECTS:
        raise ObjectDefinitionError(
            f"object {name} is not a custom object: fields are added only to objects made by "
            "`autonumber object add`"
        )
    have = _existing_fields(conn, name)
    if have.get(spec.name) == (spec.type, spec.reference_to, spec.max_length):
        return []
    if spec.name.lower() in {k.lower() for k in have}:
        raise ObjectDefinitionError(f"object {name}: it already has a field named {spec.name}")
    target = spec.reference_to
    if target is not None and target != name and target not in _registered(conn):
        raise ObjectDefinitionError(f"object {name}: field {spec.name} refers to unknown object {target!r}")
    table = str(row.TableName)
    info = FieldInfo(name, spec.name, spec.type, spec.reference_to, spec.max_length)
    undo = lambda: _compensate_field(conn, name, table, spec.name)  # noqa: E731
    with dialect_for(conn).undoing_ddl(undo, f"field {name}.{spec.name}"):
        # the column first: MariaDB commits at ALTER TABLE, before any metadata row of ours
        changes = reconcile_tables(conn, [object_table(table, [info], sa.MetaData())])
        return changes + install_objects(conn, [ObjectSpec(name, (spec,), None if table == name else table)])


def _compensate_field(conn: Connection, name: str, table: str, field_name: str) -> None:
    """Undo a half-added field where DDL commits at once (MariaDB): its row, then its column (DROP
    last, so its implicit commit makes the delete stick although the caller then rolls back)."""
    f = system_field
    conn.execute(sa.delete(f).where(f.c.ObjectId == object_id(name), f.c.ApiName == field_name))
    if field_name in {c["name"] for c in sa.inspect(conn).get_columns(table)}:
        quote = conn.dialect.identifier_preparer.quote
        conn.execute(sa.text(f"ALTER TABLE {quote(table)} DROP COLUMN {quote(field_name)}"))


def _compensate(conn: Connection, name: str) -> None:
    """Undo a half-made object where DDL has already committed the rows before it (MariaDB/MySQL).

    On the same connection, DROP last: its implicit commit makes the deletes stick even though the
    caller then rolls back; before any DDL they just delete this transaction's own rows.
    """
    conn.execute(sa.delete(system_field).where(system_field.c.ObjectId == object_id(name)))
    conn.execute(sa.delete(system_object).where(system_object.c.ApiName == name))
    conn.execute(sa.text(f"DROP TABLE IF EXISTS {conn.dialect.identifier_preparer.quote(name)}"))


def create_object(platform: Platform, name: str, fields: Sequence[str]) -> list[str]:
    """add_object in its own transaction on a running platform, then refresh its catalog."""
    with platform.begin() as conn:
        changes = add_object(conn, name, fields)
    platform.catalog.refresh()
    return changes
