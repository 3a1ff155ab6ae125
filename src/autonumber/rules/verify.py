"""`setup verify` (docs/setup.md), binding: V1–V7 as structured findings, one line each when printed.

Adapted to `per_prefix`, which is lazy like `per_day`: only `global` fields need a row up front.
V1 also fails a bucket whose `next_value` is not above the largest live value of that bucket
(`next_value == max` would hand out a number that already exists, so equality fails too), and reads
each stored value with the field's current format or any earlier one (history.py).
`check(conn, field_ids)` verifies only those fields: what a rule change runs for the field it changed.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from autonumber.catalog.cache import CatalogSnapshot, Rule, build_rule, load_snapshot
from autonumber.catalog.shared import members, mismatch
from autonumber.catalog.stored import StoredRule
from autonumber.db.tables import counter_table, system_object, system_record_type
from autonumber.db.unique import Target, find_duplicates, unindexed
from autonumber.errors import AutonumberError, FormatError, SeedLimitError, SeedParseError, VerifyError
from autonumber.format import parse_format
from autonumber.format.tokens import TAXONOMY_OBJECT
from autonumber.format.value_patterns import ScanPattern

from .history import older_by_field
from .numberless import numberless_after
from .scan import scan_rule

METADATA_RULES = frozenset({4, 6, 7, 8, 10})
"""Validation rules about token refs resolving against metadata (V2); the others are V4 (docs/formats.md)."""


@dataclass(frozen=True)
class Finding:
    """One violation: its code (V1..V7), the field and row it is about (when it is about one), the
    offending value, and the one-line message `setup verify` prints (it starts with the code)."""

    code: str
    field_id: str | None
    message: str
    row_id: str | None = None
    value: str | None = None

    def __str__(self) -> str:
        return self.message


def _finding(
    message: str, field_id: str | None, row_id: str | None = None, value: str | None = None
) -> Finding:
    return Finding(message.split(" ", 1)[0], field_id, message, row_id, value)


def verify(engine: Engine) -> list[Finding]:
    """Every violation of V1–V7 ([] when the database is sound)."""
    with engine.connect() as conn:
        return check(conn)


def verify_or_raise(engine: Engine) -> None:
    """Raise VerifyError carrying the violations, if any."""
    violations = verify(engine)
    if violations:
        raise VerifyError(violations)


def check(
    conn: Connection, field_ids: Collection[str] | None = None, index_pending: Collection[str] = ()
) -> list[Finding]:
    """V1–V7 against one connection's view of the database; only `field_ids` when given. The
    fields in `index_pending` get their UNIQUE index right after (a rule change's last DDL)."""
    snapshot = load_snapshot(conn)
    configured = [
        row
        for rows in snapshot.fields.values()
        for row in rows
        if row.format is not None and (field_ids is None or row.field_id in field_ids)
    ]
    # the fields' counters: their own, or the shared counter they draw from
    ids = None if field_ids is None else {*field_ids, *(row.counter_id for row in configured)}
    counters = _counter_rows(conn, ids)
    out: list[Finding] = []
    rules: list[Rule] = []
    for row in configured:
        rule = _rule_or_violation(row, snapshot, out)
        if rule is not None:
            rules.append(rule)
    out += _v3(configured, counters)
    out += _v5(configured, counters)
    out += _shared_members(configured, snapshot)
    older = older_by_field(conn, {r.field_id: r.format.source for r in rules})
    for rule in rules:
        out += _v1(conn, snapshot, rule, counters, older.get(rule.field_id, ()))
    if field_ids is None:  # `setup verify` only: a rule change is not refused for rows it did not write
        out += [f for rule in rules if (f := _numberless(conn, snapshot, rule)) is not None]
    out += _v6(conn, rules)
    out += v7_duplicates(conn, snapshot, rules)
    out += v7_unique_indexes(conn, snapshot, [r for r in rules if r.field_id not in index_pending])
    return out


def _counter_rows(conn: Connection, ids: Collection[str] | None) -> dict[tuple[str, str], int]:
    """The next value of every counter row (of the counter ids `ids` when given)."""
    stmt = sa.select(counter_table)
    if ids is not None:
        stmt = stmt.where(counter_table.c.field_id.in_(sorted(ids)))
    return {(r.field_id, r.scope_key): int(r.next_value) for r in conn.execute(stmt)}


def _rule_or_violation(row: StoredRule, snapshot: CatalogSnapshot, out: list[Finding]) -> Rule | None:
    """V4 (exactly one counter token, format rules) and V2 (token refs resolve and are canonical)."""
    where = f"field_id={row.field_id} format {row.format!r}"
    assert row.format is not None
    try:
        parse_format(row.format)
    except FormatError as exc:
        out.append(_finding(f"V4 {where}: {exc}", row.field_id))
        return None
    try:
        return build_rule(row, snapshot)
    except FormatError as exc:
        code = "V2" if exc.rule in METADATA_RULES else "V4"
        out.append(_finding(f"{code} {where}: {exc}", row.field_id))
    except (AutonumberError, ValueError) as exc:
        out.append(_finding(f"V2 {where}: auto_number_token_refs {row.token_refs!r}: {exc}", row.field_id))
    return None


def _v3(configured: Iterable[StoredRule], counters: dict[tuple[str, str], int]) -> list[Finding]:
    """V3: no counter row whose field is gone or no longer has a format (or, for a shared
    counter's row, that no configured field draws from)."""
    known = {row.counter_id for row in configured}
    return [
        _finding(
            f"V3 orphan counter row field_id={fid} scope_key={key!r} next_value={n}: no "
            "configured _System_Field with that Id",
            fid,
        )
        for (fid, key), n in sorted(counters.items())
        if fid not in known
    ]


def _v5(configured: Iterable[StoredRule], counters: dict[tuple[str, str], int]) -> list[Finding]:
    """V5: as many scope_key='' rows as global counters (a missing row here is CounterMissing
    later); the members of a shared counter have one between them."""
    scopes = {row.counter_id: row.scope for row in configured}
    global_ids = {fid for fid, scope in scopes.items() if scope == "global"}
    blank = {fid for fid, key in counters if key == ""}
    if len(blank) == len(global_ids) and blank == global_ids:
        return []
    missing = sorted(global_ids - blank)
    extra = sorted(blank - global_ids)
    detail = []
    if missing:
        detail.append(f"global field(s) without a row: {', '.join(missing)}")
    if extra:
        detail.append(f"rows with scope_key='' for non-global or unknown field(s): {', '.join(extra)}")
    about = [*missing, *extra]
    return [
        _finding(
            f"V5 {len(blank)} counter row(s) with scope_key='' but {len(global_ids)} global "
            "field(s); " + "; ".join(detail),
            about[0] if len(about) == 1 else None,
        )
    ]


def _v1(
    conn: Connection,
    snapshot: CatalogSnapshot,
    rule: Rule,
    counters: dict[tuple[str, str], int],
    older: Sequence[ScanPattern],
) -> list[Finding]:
    """V1: a global field has its row; every value reads under a format of the field's history; no
    row's next_value is at or below the live maximum of the current format."""
    fid, cid = rule.field_id, rule.counter_id
    out = []
    if rule.scope == "global" and (cid, "") not in counters:
        out.append(_finding(f"V1 field_id={fid} scope=global has no counter row ({cid}, '')", fid))
    try:
        scan = scan_rule(conn, rule, snapshot.table(rule.object_name), older=older)
    except SeedParseError as exc:
        return [*out, _finding(f"V1 field_id={fid}: {exc}", fid, exc.row_id, exc.value)]
    except SeedLimitError as exc:
        return [*out, _finding(f"V1 field_id={fid}: {exc}", fid)]
    # The counter is read again after the column: every number the scan saw was reserved before it,
    # so a counter read later is above it, also where each statement reads what has committed by
    # then (PostgreSQL's READ COMMITTED) and writers insert meanwhile: no write hole seen falsely.
    counters = _counter_rows(conn, [cid]) if scan.buckets else counters
    for key, best in sorted(scan.buckets.items()):
        nxt = counters.get((cid, key))
        if nxt is not None and nxt <= best:
            shared = f" (shared counter {rule.shared_counter})" if rule.shared_counter else ""
            scope = f" --scope-key {key!r}" if key else ""
            out.append(
                _finding(
                    f"V1 field_id={fid} scope_key={key!r} next_value={nxt}{shared} is not above "
                    f"the largest live value {best} (write hole: a row written outside autonumber "
                    "holds a number the counter has not reached; the insert that meets it skips past "
                    "the stored values, journaled as skipped; to move the counter now: autonumber "
                    f"counter set {rule.object_name} {rule.field_name} --next {best + 1}{scope})",
                    fid,
                )
            )
    return out


def _numberless(conn: Connection, snapshot: CatalogSnapshot, rule: Rule) -> Finding | None:
    """V1: rows left without a number after the field was numbering (rules/numberless.py)."""
    late = numberless_after(conn, snapshot, rule)
    if late is None:
        return None
    return _finding(
        f"V1 field_id={rule.field_id}: {late[0]} row(s) have no {rule.field_name} (NULL), written "
        f"after numbered rows (first key {late[1]}): inserted outside autonumber, e.g. a Core insert "
        "from a process that never bound the field; number them with autonumber field backfill "
        f"{rule.object_name} {rule.field_name}",
        rule.field_id,
        late[1],
    )


def _shared_members(configured: Sequence[StoredRule], snapshot: CatalogSnapshot) -> list[Finding]:
    """V4: the members of a shared counter still fit each other (a raw UPDATE can break that; a
    rule change refuses it: autonumber/catalog/shared.py)."""
    everyone = [row for rows in snapshot.fields.values() for row in rows if row.format is not None]
    out = []
    for row in configured:
        if row.shared_counter is None:
            continue
        others = [(o, _width(o)) for o in members(everyone, row.shared_counter, but=row.field_id)]
        why = mismatch(row, _width(row), others)
        if why is not None:
            out.append(_finding(f"V4 field_id={row.field_id}: {why}", row.field_id))
    return out


def _width(row: StoredRule) -> int:
    try:
        return parse_format(row.format or "").counter_width
    except FormatError:
        return 0  # a broken format is reported as V4 on its own


def _v6(conn: Connection, rules: Iterable[Rule]) -> list[Finding]:
    """V6: every record type a `{RecordType.X}` token can read has X set."""
    rt, obj = system_record_type, system_object
    out = []
    for rule in rules:
        for ref in rule.format.cross_refs:
            if ref.object != TAXONOMY_OBJECT or ref.field not in rt.c:
                continue
            column = rt.c[ref.field]
            stmt = (
                sa.select(rt.c.Id, rt.c.DeveloperName)
                .join(obj, obj.c.Id == rt.c.ObjectId)
                .where(obj.c.ApiName == rule.object_name, column.is_(None))
                .order_by(rt.c.Id)
            )
            for rt_id, name in conn.execute(stmt):
                out.append(
                    _finding(
                        f"V6 RecordType id={rt_id} ({name!r}) has NULL {ref.field}; consumed "
                        f"by field_id={rule.field_id} format {rule.format.source!r}",
                        rule.field_id,
                        str(rt_id),
                    )
                )
    return out


def v7_duplicates(conn: Connection, snapshot: CatalogSnapshot, rules: Iterable[Rule]) -> list[Finding]:
    """V7: no autonumber value is stored twice (the UNIQUE index makes this hold from cut-over on)."""
    out = []
    for rule in rules:
        table = snapshot.table(rule.object_name)
        for dup in find_duplicates(conn, table, rule.field_name, rule.name):
            out.append(
                _finding(
                    f"V7 field_id={rule.field_id}: {dup.describe()}",
                    rule.field_id,
                    dup.ids[0] if dup.ids else None,
                    dup.value,
                )
            )
    return out


def v7_unique_indexes(conn: Connection, snapshot: CatalogSnapshot, rules: Iterable[Rule]) -> list[Finding]:
    """V7 holds by construction only when the database refuses a second copy: each autonumber
    column needs a UNIQUE index on the whole column (missing on a database upgraded without `db
    upgrade`); a partial or expression unique index does not count. `db upgrade` creates it
    (it repairs the indexes of every autonumber column, nothing else)."""
    targets = {
        rule.field_id: Target(rule.name, snapshot.table(rule.object_name).name, rule.field_name)
        for rule in rules
    }
    missing = unindexed(conn, list(targets.values()))
    out = []
    for field_id, t in targets.items():
        if t not in missing:
            continue
        partial = missing[t]
        has = (
            f"only the partial or expression unique index {partial}, which does not refuse every second copy"
            if partial
            else "no UNIQUE index"
        )
        out.append(
            _finding(
                f"V7 field_id={field_id}: {t.field}: column {t.table}.{t.column} has {has}; "
                f"run autonumber db upgrade (it creates the index)",
                field_id,
            )
        )
    return out
