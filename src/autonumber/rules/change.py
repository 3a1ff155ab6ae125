"""Planning and applying rule changes: every check first, then the writes, all or nothing.

`plan_requests` reads and validates a batch of requests (add a field, set a rule) against the
database as the earlier requests of the batch would leave it, and computes every write: the field
row, the rule columns, the format history, the counter rows to raise or retire. Nothing is written
until every request has passed. `execute` then writes: the new columns first (DDL), then the rows,
then verify for the touched fields only. MariaDB/MySQL commit DDL at once, so there the rows are
written inside a savepoint and a failure drops the columns added, leaving the database as before.

Semantics (docs/changing-rules.md):
- a format change keeps old values valid (the field remembers its formats, history.py); the counter
  continues and is raised above every stored value the new format could render again;
- a scope change retires the old scope's counter rows and starts the new scope's rows above every
  value the new format could collide with (a move to `global` continues above every counter
  handed out, under any of the field's formats);
- a width that cannot hold a counter, a start beyond the width, a stored value no format of the
  field reads, a broken format, or a leave of a shared counter with a format that can render a
  remaining member's text (both counters go on from one next value) is refused with one line
  naming the field.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from autonumber.catalog import shared
from autonumber.catalog.cache import Rule
from autonumber.catalog.shared import counter_id
from autonumber.catalog.stored import StoredRule
from autonumber.db import dialect_for
from autonumber.db.objects import object_table
from autonumber.db.schema import reconcile_tables, table_names
from autonumber.db.tables import (
    counter_table,
    field_format_history,
    system_field,
)
from autonumber.db.unique import Target, ensure_unique_indexes
from autonumber.errors import (
    RuleChangedMeanwhile,
    RuleChangeRefused,
    SeedLimitError,
    SeedParseError,
    UnknownField,
    UnknownObject,
    VerifyError,
)
from autonumber.format import FieldInfo, parse_format
from autonumber.identifiers import check_api_name, fit_id, free_field_id
from autonumber.rules import floor, history, state
from autonumber.rules.batch import Batch
from autonumber.rules.drift import changed
from autonumber.rules.keys import migrate_field_keys
from autonumber.rules.legacy import LegacyState
from autonumber.rules.length import Resize, apply_resize, plan_resize, undo_resize, write_length
from autonumber.rules.scan import ColumnScan, scan_rule
from autonumber.rules.seed import CounterRow, plan_rows
from autonumber.rules.store import (
    RuleEdit,
    RuleSpec,
    rule_values,
    same_values,
    write_rule,
)
from autonumber.rules.verify import check

DEFAULT_LENGTH = 30
MAX_LENGTH = 255
KINDS = ("add", "set")


EDIT_LOCK = "autonumber_bootstrap"
"""The named lock every rule edit takes: the one `setup apply` and `spec apply` hold, so the doors
are serialised and an edit's base is compared with what is stored while no one else can write."""


@dataclass(frozen=True)
class RuleRequest:
    """One change asked for: `add` a field (column, rule, counters) or `set` an existing rule.

    A `set` is a RuleEdit (what is not given stays as stored, resolved against the rule as the
    earlier requests of the batch leave it) or a whole RuleSpec. `base` is the stored rule the
    edit was made from, as its StoredRule.token: if the rule is no longer that, the request is
    RuleChangedMeanwhile."""

    kind: str
    rule: RuleSpec | RuleEdit
    base: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"rule request kind {self.kind!r} is not one of {', '.join(KINDS)}")
        if self.kind == "add" and not isinstance(self.rule, RuleSpec):
            raise ValueError("an add request needs a whole RuleSpec")


@dataclass
class FieldChange:
    """What one request did (or would do): the field id, one line per change, the rule it stored."""

    field_id: str
    changes: list[str] = field(default_factory=list)
    rule: RuleSpec | None = None


@dataclass
class Plan:
    """The validated writes of one request."""

    request: RuleRequest
    field_id: str
    table: str
    rule: RuleSpec
    """The rule written (a `set` edit resolved against the stored rule)."""
    new_column: FieldInfo | None = None
    new_row: dict[str, Any] | None = None
    values: dict[str, Any] | None = None
    previous: tuple[str, str] | None = None
    before: dict[str, Any] | None = None
    """The rule columns a `set` replaces (logged with the change: rules/history.py)."""
    counters: list[CounterRow] = field(default_factory=list)
    retire: list[str] = field(default_factory=list)
    retired: dict[str, int] = field(default_factory=dict)
    """The next values of the rows retired, kept as floors (rules/floor.py)."""
    retire_counter: str = ""
    """Whose rows `retire` names: the field's counter id ('' : the field's own id)."""
    lines: list[str] = field(default_factory=list)
    adopted: bool = False
    """The object is an application's own table: its column must exist; it gets a UNIQUE index."""
    resize: Resize | None = None
    """The column's new width (rules/length.py)."""

    @property
    def writes(self) -> bool:
        """Whether anything is written for this request."""
        return bool(
            self.new_row or self.values or self.counters or self.retire or self.adopted or self.resize
        )


def plan_requests(conn: Connection, requests: Sequence[RuleRequest]) -> list[Plan]:
    """Validate every request in order and compute its writes; raise (writing nothing) on the first
    refusal: RuleChangeRefused, FormatError, UnknownObject/UnknownField or InvalidIdentifier."""
    batch = Batch(conn)
    return [
        _plan_add(batch, r.rule) if isinstance(r.rule, RuleSpec) and r.kind == "add" else _plan_set(batch, r)
        for r in requests
    ]


def _plan_add(batch: Batch, rule: RuleSpec) -> Plan:
    table = batch.tables.get(rule.object)
    if table is None:
        raise UnknownObject(rule.object)
    check_api_name(rule.field, "field name")
    existing = batch.stored.get(rule.name)
    if existing is not None and existing.format is not None:
        wanted = rule_values(rule, batch.catalog)
        if not same_values(existing.values, wanted):
            raise RuleChangeRefused(
                rule.name,
                f"it already has an autonumber rule ({existing.format!r}); "
                "change it with `autonumber field set` or a set_rule operation",
            )
        plan = Plan(RuleRequest("add", rule), existing.field_id, table, rule)
        _resize(batch, plan, existing, rule.length)  # a repeated add with --length widens
        return plan
    if rule.object in batch.adopted:  # an application's table: nothing altered, its column is adopted
        fid = existing.field_id if existing else free_field_id(batch.ids.values(), rule.object, rule.field)
        plan = Plan(RuleRequest("add", rule), fid, table, rule, adopted=True)
        if existing is None:
            batch.catalog.add(FieldInfo(rule.object, rule.field, "text", None, None))
        else:  # follow the width the application gave its column
            _resize(batch, plan, existing, rule.length)
        _finish(batch, plan, rule, rule_values(rule, batch.catalog), None, fid)
        return plan
    width = rule.length or (existing.max_length if existing else None) or DEFAULT_LENGTH
    if not 1 <= width <= MAX_LENGTH:
        raise RuleChangeRefused(rule.name, f"length {width} is not between 1 and {MAX_LENGTH}")
    fid = existing.field_id if existing else free_field_id(batch.ids.values(), rule.object, rule.field)
    plan = Plan(RuleRequest("add", rule), fid, table, rule)
    if existing is not None and rule.field in batch.columns_of(table):
        _resize(batch, plan, existing, rule.length)
    if existing is None:
        info = FieldInfo(rule.object, rule.field, "autonumber", None, width)
        batch.catalog.add(info)
        plan.new_row = {
            "Id": plan.field_id,
            "ObjectId": batch.object_ids.get(rule.object, fit_id(f"obj_{rule.object}")),
            "ApiName": rule.field,
            "Label": rule.field,
            "Type": "autonumber",
            "MaxLength": width,
        }
        plan.lines.append(f"field {plan.field_id}")
        if rule.field not in batch.columns_of(table):
            plan.new_column = info
            plan.lines.append(f"added column {table}.{rule.field}")
            batch.empty_columns.add(rule.name)
    values = rule_values(rule, batch.catalog)
    _finish(batch, plan, rule, values, None, fid)
    return plan


def _plan_set(batch: Batch, request: RuleRequest) -> Plan:
    name = request.rule.name
    existing = batch.stored.get(name)
    if existing is None or existing.format is None:
        raise UnknownField(name, "field has no autonumber rule (add it with `autonumber field add`)")
    if request.base is not None and request.base != existing.token:
        raise RuleChangedMeanwhile(name)
    rule = request.rule.applied(existing) if isinstance(request.rule, RuleEdit) else request.rule
    plan = Plan(RuleRequest("set", rule), existing.field_id, batch.tables[rule.object], rule)
    _resize(batch, plan, existing, request.rule.length)
    values = rule_values(rule, batch.catalog)
    plan.before = existing.values
    was = existing.counter_id
    if same_values(existing.values, values):  # the same rule: only raise counters left behind
        _finish(batch, plan, rule, None, None, was)
    else:
        _finish(batch, plan, rule, values, (existing.format, existing.scope), was)
    return plan


def _resize(batch: Batch, plan: Plan, existing: StoredRule, wanted: int | None) -> None:
    """Plan the column's new width (custom object) or follow the application's (adopted table);
    later checks (rule 5) see the new width."""
    adopted = existing.info.object in batch.adopted
    if existing.info.name not in batch.columns_of(plan.table) or (wanted is None and not adopted):
        return
    fid, table = existing.field_id, plan.table
    plan.resize = plan_resize(
        batch.conn,
        existing.name,
        fid,
        table,
        existing.info.name,
        existing.max_length,
        wanted,
        adopted=adopted,
    )
    if plan.resize is not None:
        batch.catalog.add(replace(existing.info, max_length=plan.resize.width))
        plan.lines.append(plan.resize.line)


def _finish(
    batch: Batch,
    plan: Plan,
    rule: RuleSpec,
    values: dict[str, Any] | None,
    previous: tuple[str, str] | None,
    was_counter: str,
) -> None:
    """Checks and counter rows shared by add and set (values None: the rule stays, counters left
    behind the stored values are raised); records the outcome in the batch. `was_counter`: the
    counter id the field drew from before (a join or a leave of a shared counter moves it)."""
    fmt = parse_format(rule.format)  # the start already fits it: rules.store.check_start_fits
    largest = 10**fmt.counter_width - 1
    fid = plan.field_id
    cid = counter_id(fid, rule.shared_counter)
    moving = was_counter != cid
    if moving:
        batch.lock_move(fid, cid, was_counter)
    if values is not None and rule.shared_counter is not None:
        _check_shared(batch, plan, rule, fmt.counter_width, values)
    known = [*batch.history.get(fid, []), *([previous[0]] if previous else [])]
    target = Rule(
        fid, rule.object, rule.field, fmt, rule.start, rule.scope, (), shared_counter=rule.shared_counter
    )
    scan = _scan(batch, plan, target, known)
    planned, _ = plan_rows(target, scan.buckets, LegacyState())
    current = dict(batch.counters_of(cid))
    reserved = dict(batch.floors_of(cid))
    old_scope = previous[1] if previous is not None else rule.scope
    if moving and rule.scope != "global" and old_scope == rule.scope:
        planned = _carried(planned, cid, batch, was_counter)
        reserved = _highest(reserved, batch.floors_of(was_counter), batch.counters_of(was_counter))
    if rule.scope == "global":  # continue above every value handed out, under any scope or format
        floor = batch.field_floor(cid)
        if moving:  # and above every value the counter it drew from handed out
            floor = max(floor, batch.field_floor(was_counter))
        if previous is not None and previous[1] != "global":  # values stored under the old scope
            floor = max(floor, scan.older_max + 1)
        planned = [_at_least(row, floor, "previous") if row.scope_key == "" else row for row in planned]
    else:  # a lazy scope's rows start above what each key ever reserved (journal, retired rows)
        planned = [_at_least(row, reserved.get(row.scope_key, 0), "reserved") for row in planned]
    if moving:
        _leave(batch, plan, rule, was_counter)
        after = dict(current)
        for row in planned:
            after[row.scope_key] = max(row.next_value, after.get(row.scope_key, 0))
    elif previous is not None and previous[1] != rule.scope:
        plan.retire = sorted(current)
        plan.retired = {key: current[key] for key in plan.retire}
        after = {row.scope_key: row.next_value for row in planned}
        if current:
            plan.lines.append(f"retired {len(current)} counter row(s) of scope {previous[1]}")
    else:
        after = dict(current)
        for row in planned:
            after[row.scope_key] = max(row.next_value, after.get(row.scope_key, 0))
    for key, nxt in sorted(after.items()):
        if nxt > largest:
            raise RuleChangeRefused(
                rule.name,
                f"counter width {fmt.counter_width} cannot hold the next "
                f"value {nxt} of scope {key or 'global'!r}; keep at least "
                f"{len(str(nxt))} digit(s)",
            )
    plan.values = values
    plan.previous = previous
    plan.counters = [
        r for r in planned if moving or plan.retire or r.next_value > current.get(r.scope_key, 0)
    ]
    batch.counters[cid] = after
    if values is None:
        if plan.counters:
            plan.lines.append(_counter_line(cid, after, scan))
        return
    was = f"{previous[0]} ({previous[1]}) → " if previous else ""
    extra = changed(plan.before, values)
    plan.lines.append(f"rule {rule.name}: {was}{rule.format} ({rule.scope}, start {rule.start}{extra})")
    plan.lines.append(_counter_line(cid, after, scan))
    batch.history[fid] = [*known, rule.format]
    info = batch.catalog.get_field(rule.object, rule.field) or FieldInfo(
        rule.object, rule.field, "autonumber"
    )
    batch.stored[rule.name] = StoredRule.of(fid, info, values)


def _check_shared(batch: Batch, plan: Plan, rule: RuleSpec, width: int, values: dict[str, Any]) -> None:
    """RuleChangeRefused when the rule does not fit the shared counter's other members."""
    assert rule.shared_counter is not None
    info = batch.catalog.get_field(rule.object, rule.field) or FieldInfo(
        rule.object, rule.field, "autonumber"
    )
    mine = StoredRule.of(plan.field_id, info, values)
    others = shared.members(batch.stored.values(), rule.shared_counter, but=plan.field_id)
    why = shared.mismatch(mine, width, [(o, parse_format(o.format or "").counter_width) for o in others])
    if why is not None:
        raise RuleChangeRefused(rule.name, why)
    names = ", ".join(o.name for o in others)
    plan.lines.append(
        f"shared counter {rule.shared_counter}: " + (f"with {names}" if names else "first member")
    )


def _carried(planned: list[CounterRow], cid: str, batch: Batch, was: str) -> list[CounterRow]:
    """The planned rows plus one for every key the counter the field leaves has a row or a floor
    for: a lazy scope's row would otherwise be created later without the old counter's values."""
    keys = {row.scope_key for row in planned}
    extra = sorted({*batch.floors_of(was), *batch.counters_of(was)} - keys)
    return [*planned, *(CounterRow(cid, key, 0, "moved") for key in extra)]


def _highest(*maps: dict[str, int]) -> dict[str, int]:
    """The greatest value per key over the maps."""
    out: dict[str, int] = {}
    for values in maps:
        for key, value in values.items():
            out[key] = max(out.get(key, 0), value)
    return out


def _leave(batch: Batch, plan: Plan, rule: RuleSpec, was: str) -> None:
    """The field stops drawing from counter `was`: its own rows, or a shared counter's once its last
    member leaves, are retired (kept as floors); a shared counter other members still use stays,
    and the field may leave it only with a format that renders none of their text (catalog/shared.py)."""
    old = dict(batch.counters_of(was))
    remaining = [
        r for r in batch.stored.values() if r.format and r.counter_id == was and r.field_id != plan.field_id
    ]
    if remaining and was.startswith(shared.PREFIX):
        why = shared.overlapping(rule.format, was[len(shared.PREFIX) :], remaining)
        if why is not None:
            raise RuleChangeRefused(rule.name, why)
    if remaining or not old:
        return
    plan.retire_counter = was
    plan.retire = sorted(old)
    plan.retired = old
    batch.counters[was] = {}
    plan.lines.append(f"retired {len(old)} counter row(s) of {was}")


def _at_least(row: CounterRow, floor: int, source: str) -> CounterRow:
    return row if row.next_value >= floor else CounterRow(row.field_id, row.scope_key, floor, source)


def _counter_line(fid: str, after: dict[str, int], scan: ColumnScan) -> str:
    shown = ", ".join(f"{k or 'global'}={v}" for k, v in sorted(after.items())[:5]) or "none yet (lazy scope)"
    older = f", {scan.older} under an earlier format" if scan.older else ""
    return f"counter(s) of {fid}: {shown} ({scan.rows} stored value(s){older})"


def _scan(batch: Batch, plan: Plan, target: Rule, known: Sequence[str]) -> ColumnScan:
    """Read the stored values with the new format; refuse one that no format of the field reads.

    A first rule on a platform column (`add`, the cut-over's formats phase) fails with the seed's
    own SeedParseError/SeedLimitError, as `seed_counters` would, but before anything is committed."""
    name = target.name
    if name in batch.empty_columns or target.field_name not in batch.columns_of(plan.table):
        return ColumnScan()
    if plan.adopted or target.object_name in batch.adopted:  # its own key column, any name or case
        table = sa.Table(plan.table, sa.MetaData(), autoload_with=batch.conn)
    else:
        fields = tuple(batch.catalog.fields_of(target.object_name))
        table = object_table(plan.table, [f for f in fields if f.name == target.field_name], sa.MetaData())
    try:
        return scan_rule(batch.conn, target, table, older=history.older_patterns(target.format.source, known))
    except SeedParseError as exc:
        if plan.request.kind == "add" and not plan.adopted:
            raise
        formats = ", ".join(repr(f) for f in dict.fromkeys([*known, target.format.source]))
        raise RuleChangeRefused(
            name,
            f"row {exc.row_id} holds {exc.value!r}, which none of the field's "
            f"formats ({formats}) can have produced; fix that row first",
        ) from None
    except SeedLimitError as exc:
        if plan.request.kind == "add" and not plan.adopted:
            raise
        raise RuleChangeRefused(name, str(exc)) from None


# --- writing ------------------------------------------------------------------------------------


def execute(conn: Connection, plans: Sequence[Plan], *, verify: bool = True) -> list[FieldChange]:
    """Write validated plans in the caller's transaction, then verify the touched fields (unless
    `verify` is False: `setup apply` verifies the whole database in its last phase).

    Where DDL commits at once, a failure after a column was added rolls the rows back to a
    savepoint and drops the column again, so the database ends exactly as it was.
    """
    dialect = dialect_for(conn)
    added: list[tuple[str, str]] = []
    resized: list[Resize] = []

    def undo() -> None:
        _drop_columns(conn, added)
        for resize in resized:
            undo_resize(conn, resize)

    with dialect.undoing_ddl(undo, "the columns this change added or resized"):
        for plan in plans:
            if plan.new_column is not None:
                table = object_table(plan.table, [plan.new_column], sa.MetaData())
                reconcile_tables(conn, [table])
                added.append((plan.table, plan.new_column.name))
            if plan.resize is not None and plan.resize.alter:
                apply_resize(conn, plan.resize)
                resized.append(plan.resize)
        with dialect.rows_after_ddl(conn) if added or resized else nullcontext():
            for plan in plans:
                if plan.adopted:
                    plan.lines += _adopt(conn, plan)
                _write(conn, plan)
                plan.lines += _move_prefix_keys(conn, plan)
            touched = {p.field_id for p in plans if p.writes}
            indexed_next = {p.field_id for p in plans if p.adopted or p.new_column is not None}
            findings = check(conn, touched, indexed_next) if touched and verify else []
            if findings:
                raise VerifyError(findings)
    for plan in plans:  # DDL last: on MariaDB it commits what came before
        if plan.adopted or plan.new_column is not None:
            plan.lines += ensure_unique_index(conn, plan)
    return [FieldChange(p.field_id, list(p.lines), p.rule) for p in plans]


def _adopt(conn: Connection, plan: Plan) -> list[str]:
    """Check the adopted table's column (text, no duplicates) and register it."""
    from autonumber.objects.adopt import adopt_column  # objects builds on rules: imported when used

    return adopt_column(conn, plan.rule, plan.table)


def _move_prefix_keys(conn: Connection, plan: Plan) -> list[str]:
    """Old token-value per_prefix rows of the field merged into rendered-text keys (rules/keys.py)."""
    if plan.values is None or plan.rule.scope != "per_prefix":
        return []
    moves = migrate_field_keys(conn, plan.field_id, parse_format(plan.rule.format))
    return [f"counter rows of {plan.field_id}: {len(moves)} token-value key(s) moved"] if moves else []


def _write(conn: Connection, plan: Plan) -> None:
    dialect = dialect_for(conn)
    now = dialect.utc_now(conn)
    rule = plan.rule
    if plan.new_row is not None:
        conn.execute(sa.insert(system_field).values(plan.new_row))
    if plan.resize is not None:
        write_length(conn, plan.resize)
    if plan.values is not None:
        write_rule(conn, plan.field_id, plan.values)
        history.log_rule(conn, plan.field_id, plan.before, plan.values, now)  # before record() moves rows
        if plan.previous is not None:
            history.remember_current(conn, plan.field_id, *plan.previous)
        history.record(conn, plan.field_id, rule.format, rule.scope, now)
        if plan.request.kind == "add":  # a removed rule added back: setup apply manages it again
            state.forget_removed(conn, plan.field_id)
    t = counter_table
    if plan.retire:
        owner = plan.retire_counter or counter_id(plan.field_id, rule.shared_counter)
        floor.remember_retired(conn, owner, plan.retired)
        conn.execute(sa.delete(t).where(t.c.field_id == owner, t.c.scope_key.in_(plan.retire)))
    stamps = {"created_date": now, "last_modified_date": now}
    for row in plan.counters:
        key = {"field_id": row.field_id, "scope_key": row.scope_key}
        dialect.upsert_greatest(conn, t, key, "next_value", row.next_value, stamps)


def ensure_unique_index(conn: Connection, plan: Plan) -> list[str]:
    """The UNIQUE index on the plan's column when it is missing (new and adopted columns alike)."""
    rule = plan.rule
    return ensure_unique_indexes(conn, [Target(rule.name, plan.table, rule.field)])


def _drop_columns(conn: Connection, added: Sequence[tuple[str, str]]) -> None:
    """Compensate DDL that committed at once: drop the columns this change added."""
    dialect = dialect_for(conn)
    for table, column in added:
        check_api_name(column, "field name")
        # validated names; Core has no DROP COLUMN construct
        conn.execute(
            sa.text(f"ALTER TABLE {dialect.quote(conn, table)} DROP COLUMN {dialect.quote(conn, column)}")
        )


def ensure_history_table(conn: Connection) -> None:
    """Create `_System_FieldFormatHistory` and `_System_SetupState` (where retired counter rows are
    kept as floors) on a database set up before they existed (idempotent)."""
    present = table_names(conn)
    missing = [t for t in (field_format_history, state.setup_state) if t.name not in present]
    if missing:
        reconcile_tables(conn, missing)


__all__ = ["EDIT_LOCK", "FieldChange", "Plan", "RuleRequest", "execute", "plan_requests"]
