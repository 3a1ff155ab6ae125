"""The typed operations a data-spec's `## Operations` list may name (SQLAlchemy Core, no SQL text
from the spec). Each has `plan` (read-only: checks everything and says what would change, raising
SpecError when it cannot run) and `run` (does it and returns what changed). Every `run` is
idempotent, so a MariaDB apply interrupted between two implicitly committed DDL statements is
completed by running the spec again.

Rollback (docs/runbook.md):
- `restore_legacy_backups`: the four legacy tables from their newest `<name>__bak_<YYYYMMDD>`;
- `set_legacy_current_numbers_from_live`: counter-drift correction (step 5) — each legacy
  `_System_AutoNumber.CurrentNumber` raised to the largest number used since the cut-over (its
  field's live column, read with the rule's scan pattern, and its counter rows' next_value − 1);
  each `_System_CompoundAutoNumber` (object, rendered prefix) raised to the largest live counter
  with that prefix, rows added for prefixes first used after the cut-over;
- `drop_autonumber_schema`: the guard trigger, `_System_AutoNumberCounter`, the format history, the
  six rule columns of `_System_Field` and `_System_RecordType.RecordTypeCode`, and the schema
  version (the database is back before the cut-over: the next `setup apply` migrates it again).
Cleanup (docs/runbook.md): `verify` (V1–V7 must hold) and `drop_backups`.
Rules: `add_autonumber_field` and `set_rule`, thin over `autonumber.rules` (the runner plans and
applies consecutive rule operations as one batch). Objects: `add_object` (a custom object)
and `adopt_object` (an existing application table), see autonumber.objects.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from autonumber.catalog.cache import CatalogSnapshot, Rule, load_snapshot
from autonumber.db import dialect_for
from autonumber.db.guard import drop_guard
from autonumber.db.schema import table_names
from autonumber.db.tables import (
    AUTONUMBER_COLUMNS,
    LEGACY_TABLES,
    counter_table,
    field_format_history,
    legacy_autonumber,
    legacy_compound,
    reservation_journal,
    schema_version_table,
    system_field,
    system_record_type,
)
from autonumber.errors import AutonumberError, SeedParseError, SpecError, VerifyError
from autonumber.format import TokenKind
from autonumber.identifiers import check_api_name
from autonumber.objects import add_object, adopt_table
from autonumber.rules import (
    RuleEdit,
    RuleRequest,
    already_moved,
    check,
    move_counter,
)
from autonumber.rules.history import older_by_field
from autonumber.rules.legacy import LEGACY_NAMES
from autonumber.rules.scan import pages, scan_rule

from .document import Operation

RECORD_TYPE_CODE = "RecordTypeCode"
COMPOUND_JOINER = "-"
"""The legacy listener stored `SG-CSA-260417` for `SG-CSA-260417-42`: prefix, '-', counter."""


def backups_of(conn: Connection, name: str) -> list[str]:
    """The backup tables of a legacy table, oldest first (`<name>__bak_<YYYYMMDD>`)."""
    pattern = re.compile(re.escape(name) + r"__bak_(\d{8})")
    return sorted((t for t in table_names(conn) if pattern.fullmatch(t)), key=lambda t: t[-8:])


def _count(conn: Connection, table: sa.Table) -> int:
    return int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())


def _reflect(conn: Connection, name: str) -> sa.Table:
    return sa.Table(name, sa.MetaData(), autoload_with=conn)


def _columns(conn: Connection, table: str) -> set[str]:
    return {c["name"] for c in sa.inspect(conn).get_columns(table)}


# --- restore_legacy_backups ---------------------------------------------------------------------


def _restore_plan(conn: Connection) -> list[tuple[sa.Table, str, bool]]:
    """(legacy table, newest backup, needs restoring) for the four tables; SpecError if one has none."""
    present = table_names(conn)
    out = []
    for table in LEGACY_TABLES:
        found = backups_of(conn, table.name)
        if not found:
            if table.name in present:
                out.append((table, "", False))
                continue
            raise SpecError(
                f"restore_legacy_backups: no backup of {table.name} "
                f"({table.name}__bak_YYYYMMDD) and the table does not exist"
            )
        backup = found[-1]
        done = table.name in present and _count(conn, _reflect(conn, table.name)) >= _count(
            conn, _reflect(conn, backup)
        )
        out.append((table, backup, not done))
    return out


def plan_restore(conn: Connection, args: Mapping[str, Any]) -> list[str]:
    return [
        f"restore {t.name} from {b}" if todo else f"{t.name} is already restored"
        for t, b, todo in _restore_plan(conn)
    ]


def run_restore(conn: Connection, args: Mapping[str, Any]) -> list[str]:
    """Create each legacy table with its own schema (key included) and copy its newest backup in.

    A legacy table that exists with at least its backup's rows is kept (already restored and perhaps
    corrected); one with fewer rows is a half-finished restore and is rebuilt.
    """
    changes = []
    dialect = dialect_for(conn)
    for table, backup, todo in _restore_plan(conn):
        if not todo:
            continue
        dialect.drop_table_if_exists(conn, table.name)
        table.create(conn)
        source = _reflect(conn, backup)
        cols = [c.name for c in table.columns if c.name in source.c]
        conn.execute(sa.insert(table).from_select(cols, sa.select(*(source.c[c] for c in cols))))
        rows, kept = _count(conn, table), _count(conn, source)
        if rows != kept:
            raise SpecError(
                f"restore_legacy_backups: {table.name} got {rows} row(s), its backup {backup} holds {kept}"
            )
        changes.append(f"restored {table.name} from {backup} ({rows} row(s))")
    return changes


# --- set_legacy_current_numbers_from_live -------------------------------------------------------


@dataclass(frozen=True)
class Correction:
    """The counter-drift correction, computed from the live columns before anything is dropped."""

    numbers: dict[tuple[str, str], int]
    """Largest number used per (ObjectApiName, FieldApiName) of a rule."""
    compound: dict[tuple[str, str], int]
    """Largest counter per (object, rendered prefix) of the per_prefix rules."""


def _snapshot(conn: Connection) -> CatalogSnapshot | None:
    if "auto_number_format" not in _columns(conn, system_field.name):
        return None  # the autonumber schema is gone: corrected already
    snapshot = load_snapshot(conn)
    if snapshot.quarantined:
        bad = "; ".join(f"{fid}: {why}" for fid, why in sorted(snapshot.quarantined.items()))
        raise SpecError(
            f"set_legacy_current_numbers_from_live: quarantined rule(s) cannot read their "
            f"live values; repair them first: {bad}"
        )
    return snapshot


def _counter_floor(conn: Connection) -> dict[str, int]:
    if counter_table.name not in table_names(conn):
        return {}
    t = counter_table
    stmt = sa.select(t.c.field_id, sa.func.max(t.c.next_value)).group_by(t.c.field_id)
    return {fid: int(n) - 1 for fid, n in conn.execute(stmt)}


def _prefix_reader(rule: Rule) -> Callable[[str], tuple[str, int] | None]:
    """(rendered prefix, counter) of a value; the prefix is the text before the counter without its
    trailing joiner."""
    regex = rule.format.scan_pattern().regex

    def read(value: str) -> tuple[str, int] | None:
        m = regex.fullmatch(value)
        if m is None:
            return None
        prefix = value[: m.start("counter")]
        return prefix.removesuffix(COMPOUND_JOINER), int(m.group("counter"))

    return read


def compute_correction(conn: Connection) -> Correction | None:
    """Scan every rule's column (fail closed on a value its format cannot have produced)."""
    snapshot = _snapshot(conn)
    if snapshot is None:
        return None
    floors = _counter_floor(conn)
    numbers: dict[tuple[str, str], int] = {}
    compound: dict[tuple[str, str], int] = {}
    older = older_by_field(conn, {r.field_id: r.format.source for r in snapshot.rules.values()})
    for rule in snapshot.rules.values():
        table = snapshot.table(rule.object_name)
        scan = scan_rule(conn, rule, table, older=older.get(rule.field_id, ()))
        best = max([*scan.buckets.values(), floors.get(rule.counter_id, 0)])  # a shared counter: all of it
        numbers[(rule.object_name, rule.field_name)] = best
        if rule.scope != "per_prefix" or not _counter_is_last(rule):
            continue
        read = _prefix_reader(rule)
        for rows in pages(conn, table, rule.field_name):
            for row_id, value in rows:
                found = read(value)
                if found is None and any(p.match(value) for p in older.get(rule.field_id, ())):
                    continue  # written under an earlier format: the legacy listener never counted it
                if found is None:
                    pattern = rule.format.scan_pattern().pattern
                    raise SeedParseError(rule.name, rule.field_id, str(row_id), value, pattern)
                key = (rule.object_name, found[0])
                compound[key] = max(compound.get(key, 0), found[1])
    return Correction(numbers, compound)


def _counter_is_last(rule: Rule) -> bool:
    tokens = rule.format.tokens
    at = next(i for i, t in enumerate(tokens) if t.kind is TokenKind.COUNTER)
    return all(t.kind is TokenKind.LITERAL for t in tokens[at + 1 :])


def plan_correction(conn: Connection, args: Mapping[str, Any]) -> list[str]:
    fix = compute_correction(conn)
    if fix is None:
        return ["the autonumber schema is gone: nothing to correct"]
    return [f"read {len(fix.numbers)} field(s) and {len(fix.compound)} compound prefix(es) from live values"]


def run_correction(conn: Connection, args: Mapping[str, Any]) -> list[str]:
    """Raise (never lower) the legacy counters to what the engine handed out since the cut-over."""
    fix = compute_correction(conn)
    if fix is None:
        return []
    present = table_names(conn)
    missing = [t.name for t in (legacy_autonumber, legacy_compound) if t.name not in present]
    if missing:
        raise SpecError(
            f"set_legacy_current_numbers_from_live: {', '.join(missing)} missing; "
            "run restore_legacy_backups first"
        )
    return _raise_numbers(conn, fix.numbers) + _raise_compound(conn, fix.compound)


def _raise_numbers(conn: Connection, numbers: Mapping[tuple[str, str], int]) -> list[str]:
    t = legacy_autonumber
    changes = []
    for row_id, obj, fld, current in conn.execute(
        sa.select(t.c.Id, t.c.ObjectApiName, t.c.FieldApiName, t.c.CurrentNumber).order_by(t.c.Id)
    ).all():
        used = numbers.get((obj, fld))
        if used is not None and used > int(current):
            conn.execute(sa.update(t).where(t.c.Id == row_id).values(CurrentNumber=used))
            changes.append(f"_System_AutoNumber {obj}.{fld}: CurrentNumber {current} → {used}")
    return changes


def _raise_compound(conn: Connection, compound: Mapping[tuple[str, str], int]) -> list[str]:
    t = legacy_compound
    rows = {
        (o, p): (i, int(n))
        for i, o, p, n in conn.execute(sa.select(t.c.Id, t.c.ObjectApiName, t.c.Prefix, t.c.CurrentNumber))
    }
    changes = []
    for (obj, prefix), used in sorted(compound.items()):
        hit = rows.get((obj, prefix)) or rows.get((obj, prefix + COMPOUND_JOINER))
        if hit is None:
            row_id = "rb_" + hashlib.blake2b(f"{obj}|{prefix}".encode(), digest_size=12).hexdigest()
            conn.execute(sa.insert(t).values(Id=row_id, ObjectApiName=obj, Prefix=prefix, CurrentNumber=used))
            changes.append(f"_System_CompoundAutoNumber {obj} {prefix!r}: new row, CurrentNumber {used}")
        elif used > hit[1]:
            conn.execute(sa.update(t).where(t.c.Id == hit[0]).values(CurrentNumber=used))
            changes.append(f"_System_CompoundAutoNumber {obj} {prefix!r}: CurrentNumber {hit[1]} → {used}")
    return changes


# --- drop_autonumber_schema ---------------------------------------------------------------------


def _schema_left(conn: Connection) -> list[tuple[str, str | None]]:
    """(table, column) pairs still to drop; column None means the whole table."""
    left: list[tuple[str, str | None]] = []
    present = table_names(conn)
    left += [
        (t.name, None)
        for t in (counter_table, field_format_history, reservation_journal, schema_version_table)
        if t.name in present
    ]
    fields = _columns(conn, system_field.name)
    left += [(system_field.name, c) for c in AUTONUMBER_COLUMNS if c in fields]
    if RECORD_TYPE_CODE in _columns(conn, system_record_type.name):
        left.append((system_record_type.name, RECORD_TYPE_CODE))
    return left


def plan_drop_schema(conn: Connection, args: Mapping[str, Any]) -> list[str]:
    return [f"drop {t}" if c is None else f"drop column {t}.{c}" for t, c in _schema_left(conn)]


def run_drop_schema(conn: Connection, args: Mapping[str, Any]) -> list[str]:
    """Drop the guard trigger first (it names the columns), then the table and the columns."""
    drop_guard(conn)
    dialect = dialect_for(conn)
    changes = []
    for table, column in _schema_left(conn):
        if column is None:
            dialect.drop_table_if_exists(conn, table)
            changes.append(f"dropped {table}")
            continue
        check_api_name(column, "column name")
        # fixed names from db/tables.py, validated and quoted; Core has no DROP COLUMN construct
        quoted = dialect.quote(conn, table), dialect.quote(conn, column)
        conn.execute(sa.text(f"ALTER TABLE {quoted[0]} DROP COLUMN {quoted[1]}"))
        changes.append(f"dropped column {table}.{column}")
    return changes


# --- verify, drop_backups -----------------------------------------------------------------------


def run_verify(conn: Connection, args: Mapping[str, Any]) -> list[str]:
    violations = check(conn)
    if violations:
        raise VerifyError(violations)
    return ["verify: V1–V7 hold"]


def _backup_tables(conn: Connection, args: Mapping[str, Any]) -> list[str]:
    names = args.get("tables", list(LEGACY_NAMES))
    if not isinstance(names, list) or not set(names) <= set(LEGACY_NAMES):
        raise SpecError(f"drop_backups: tables must be a list of {', '.join(LEGACY_NAMES)}, got {names!r}")
    return [b for name in names for b in backups_of(conn, name)]


def plan_drop_backups(conn: Connection, args: Mapping[str, Any]) -> list[str]:
    return [f"drop {b}" for b in _backup_tables(conn, args)] or ["no backup tables left"]


def run_drop_backups(conn: Connection, args: Mapping[str, Any]) -> list[str]:
    dialect = dialect_for(conn)
    changes = []
    for name in _backup_tables(conn, args):
        dialect.drop_table_if_exists(conn, name)
        changes.append(f"dropped {name}")
    return changes


# --- rules ---------------------------------------------------------------------------------------

RULE_KEYS = frozenset(
    {
        "object",
        "field",
        "format",
        "scope",
        "start",
        "length",
        "numbering",
        "time_zone",
        "allocation",
        "fiscal_year_start",
        "date_source",
        "shared_counter",
    }
)
RULE_OPERATIONS = {"add_autonumber_field": "add", "set_rule": "set"}


def rule_request(conn: Connection, op: str, args: Mapping[str, Any]) -> RuleRequest:
    """The rules-package request an operation's arguments describe (a set keeps what it omits)."""
    unknown = sorted(set(args) - RULE_KEYS)
    missing = sorted({"object", "field", "format"} - set(args))
    if unknown or missing:
        raise SpecError(
            f"{op}: arguments are object, field, format, scope, start, length, numbering, "
            "time_zone, allocation, fiscal_year_start, date_source, shared_counter; "
            f"unknown {unknown or '-'}, missing {missing or '-'}"
        )
    for key in ("start", "length", "fiscal_year_start"):
        if key in args and (not isinstance(args[key], int) or isinstance(args[key], bool)):
            raise SpecError(f"{op}: {key} must be an integer, got {args[key]!r}")
        if key == "length" and key in args and not 0 <= args[key] < 2**63:  # start: the rule's own check
            raise SpecError(f"{op}: {key} {args[key]} is out of range (0 to {2**63 - 1})")
    obj = check_api_name(args["object"], "object name")
    fld = check_api_name(args["field"], "field name")
    edit = RuleEdit(
        obj,
        fld,
        format=str(args["format"]),
        scope=_text(args, "scope"),
        start=args.get("start"),
        numbering=_text(args, "numbering"),
        time_zone=_text(args, "time_zone"),
        length=args.get("length"),
        allocation=_text(args, "allocation"),
        fiscal_year_start=args.get("fiscal_year_start"),
        date_source=_text(args, "date_source"),
        shared_counter=_text(args, "shared_counter"),  # "": a counter of the field's own
    )
    if RULE_OPERATIONS[op] == "set":  # resolved against the rule as the earlier operations leave it
        return RuleRequest("set", edit)
    return RuleRequest("add", edit.added())


def _text(args: Mapping[str, Any], key: str) -> str | None:
    """An optional text argument: None when absent or null (the rule keeps or defaults it)."""
    value = args.get(key)
    return None if value is None else str(value)


COUNTER_KEYS = frozenset({"object", "field", "next", "scope_key"})


def _counter_args(args: Mapping[str, Any]) -> tuple[str, str, int, str | None]:
    """set_next_number's arguments, checked: object, field, next (an integer), scope_key (optional)."""
    unknown = sorted(set(args) - COUNTER_KEYS)
    missing = sorted({"object", "field", "next"} - set(args))
    if unknown or missing:
        raise SpecError(
            f"set_next_number: arguments are object, field, next, scope_key; unknown {unknown or '-'}, "
            f"missing {missing or '-'}"
        )
    nxt = args["next"]
    if not isinstance(nxt, int) or isinstance(nxt, bool) or not 0 <= nxt < 10**18:
        raise SpecError(f"set_next_number: next must be an integer from 0 to {10**18 - 1}, got {nxt!r}")
    key = args.get("scope_key")
    obj = check_api_name(args["object"], "object name")
    return obj, check_api_name(args["field"], "field name"), nxt, None if key is None else str(key)


def plan_set_next(conn: Connection, args: Mapping[str, Any]) -> list[str]:
    obj, fld, nxt, key = _counter_args(args)
    if already_moved(conn, obj, fld, nxt, key):
        return [f"{obj}.{fld}: next value already set to {nxt} (journaled)"]
    try:
        return [move_counter(conn, obj, fld, nxt, key, dry_run=True).line]
    except AutonumberError as exc:
        raise SpecError(f"set_next_number: {exc}") from None


def run_set_next(conn: Connection, args: Mapping[str, Any]) -> list[str]:
    obj, fld, nxt, key = _counter_args(args)
    if already_moved(conn, obj, fld, nxt, key):
        return []
    return [move_counter(conn, obj, fld, nxt, key).line]


def _object_args(op: str, args: Mapping[str, Any], keys: tuple[str, ...]) -> Mapping[str, Any]:
    if set(args) != set(keys):
        raise SpecError(f"{op}: arguments are {', '.join(keys)}; got {sorted(args)}")
    return args


def run_add_object(conn: Connection, args: Mapping[str, Any]) -> list[str]:
    a = _object_args("add_object", args, ("object", "fields"))
    fields = a["fields"]
    if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
        raise SpecError("add_object: fields must be a list of 'NAME:TYPE' strings")
    return add_object(conn, check_api_name(a["object"], "object name"), fields)


def plan_add_object(conn: Connection, args: Mapping[str, Any]) -> list[str]:
    a = _object_args("add_object", args, ("object", "fields"))
    return [f"add_object {a['object']} ({len(a['fields'])} field(s))"]


def run_adopt_object(conn: Connection, args: Mapping[str, Any]) -> list[str]:
    a = _object_args("adopt_object", args, ("object", "table"))
    return adopt_table(conn, check_api_name(a["object"], "object name"), str(a["table"]))


def plan_adopt_object(conn: Connection, args: Mapping[str, Any]) -> list[str]:
    a = _object_args("adopt_object", args, ("object", "table"))
    return [f"adopt_object {a['object']} = table {a['table']}"]


def plan_nothing(conn: Connection, args: Mapping[str, Any]) -> list[str]:
    return []


@dataclass(frozen=True)
class OperationType:
    """A named operation: its read-only plan and its idempotent run."""

    name: str
    summary: str
    plan: Callable[[Connection, Mapping[str, Any]], list[str]]
    run: Callable[[Connection, Mapping[str, Any]], list[str]]


OPERATIONS: dict[str, OperationType] = {
    op.name: op
    for op in (
        OperationType(
            "restore_legacy_backups",
            "recreate the four legacy tables from their newest backups",
            plan_restore,
            run_restore,
        ),
        OperationType(
            "set_legacy_current_numbers_from_live",
            "raise legacy CurrentNumber to the largest number used since the cut-over",
            plan_correction,
            run_correction,
        ),
        OperationType(
            "drop_autonumber_schema",
            "drop the guard trigger, the counter and format-history tables, the six rule columns "
            "and RecordTypeCode",
            plan_drop_schema,
            run_drop_schema,
        ),
        OperationType("verify", "V1–V7 must hold", plan_nothing, run_verify),
        OperationType("drop_backups", "drop the legacy backup tables", plan_drop_backups, run_drop_backups),
        OperationType(
            "add_object", "a custom object: metadata and its table", plan_add_object, run_add_object
        ),
        OperationType(
            "set_next_number",
            "set a counter's next number (autonumber counter set)",
            plan_set_next,
            run_set_next,
        ),
        OperationType(
            "adopt_object",
            "register an existing application table as an object",
            plan_adopt_object,
            run_adopt_object,
        ),
    )
}

NO_ARGS = frozenset(
    {"restore_legacy_backups", "set_legacy_current_numbers_from_live", "drop_autonumber_schema", "verify"}
)


def resolve(ops: Iterable[Operation], source: str) -> list[Operation]:
    """The operations, checked: SpecError naming the line for an unknown one or bad arguments.

    Rule operations (`RULE_OPERATIONS`) have no entry in `OPERATIONS`: the runner turns each run of
    them into `RuleRequest`s for the one rule path, `rules.apply_requests`."""
    out = []
    for op in ops:
        if op.name not in OPERATIONS and op.name not in RULE_OPERATIONS:
            known = ", ".join([*OPERATIONS, *RULE_OPERATIONS])
            raise SpecError(f"{source} line {op.line}: unknown operation {op.name!r}; known: {known}")
        if op.name in NO_ARGS and op.args:
            raise SpecError(f"{source} line {op.line}: {op.name} takes no arguments, got {sorted(op.args)}")
        if op.name == "drop_backups" and set(op.args) - {"tables"}:
            raise SpecError(f"{source} line {op.line}: drop_backups takes only 'tables'")
        out.append(op)
    return out


__all__ = ["OPERATIONS", "AutonumberError", "Correction", "OperationType", "backups_of", "resolve"]
