"""`seed_counters` (docs/setup.md): counter rows from live values and the legacy tables, never lowering one.

next_value = GREATEST(max parsed + 1, legacy CurrentNumber + 1, compound CurrentNumber + 1,
IdentifierSeq CurrentValue + 1, auto_number_start), per row written:

- `global`: one row per field, always (Approach X), even with no data;
- `per_day` / `per_prefix`: one row per observed bucket (≤ 3,650 days for per_day; per_prefix
  has no cap);
- `per_prefix` reads the compound row whose Prefix is the bucket's rendered prefix (the value up to
  the counter), which is exactly what the legacy listener counted; a compound Prefix the format cannot
  have produced can never collide with a future value and is reported, not applied. Other scopes
  take the object's largest compound CurrentNumber (a conservative floor).

Every column is scanned before anything is written, so an unparseable value writes no counter.
Writes are upserts with GREATEST in batches of 200, the cutover lock released between batches.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from autonumber.catalog.cache import CatalogSnapshot, Rule, load_snapshot
from autonumber.db import dialect_for
from autonumber.db.tables import counter_table
from autonumber.errors import SeedLimitError, SetupError
from autonumber.format import TokenKind
from autonumber.progress import NullReporter, Reporter

from . import floor, state
from .history import older_by_field
from .keys import migrate_prefix_keys
from .legacy import LegacyState, read_backups, read_legacy
from .scan import MAX_BUCKETS, scan_rule

CUTOVER_LOCK = "autonumber_cutover"
CUTOVER_TIMEOUT = 600.0
BATCH = 200


@dataclass(frozen=True)
class CounterRow:
    """One counter row to upsert, with the floors it came from (for the report)."""

    field_id: str
    scope_key: str
    next_value: int
    sources: str


@dataclass
class SeedResult:
    """What a seed run did."""

    rows: list[CounterRow] = field(default_factory=list)
    scanned: dict[str, int] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def changes(self) -> list[str]:
        """One line per field seeded."""
        per_field: dict[str, list[CounterRow]] = {}
        for row in self.rows:
            per_field.setdefault(row.field_id, []).append(row)
        out = [
            f"seeded {fid}: {_describe(rows)} ({self.scanned.get(fid, 0)} live value(s))"
            for fid, rows in per_field.items()
        ]
        return out + self.notes


def _describe(rows: Sequence[CounterRow]) -> str:
    if len(rows) == 1 and rows[0].scope_key == "":
        return f"next {rows[0].next_value} [{rows[0].sources}]"
    return f"{len(rows)} bucket(s), max next {max(r.next_value for r in rows)}"


def _candidates(rule: Rule, prefix: str) -> list[str]:
    """Values with a zero counter that a compound Prefix would have produced (with or without the
    literal that separates it from the counter); [] when tokens after the counter are not literals."""
    tokens = rule.format.tokens
    at = next(i for i, t in enumerate(tokens) if t.kind is TokenKind.COUNTER)
    after = tokens[at + 1 :]
    if any(t.kind is not TokenKind.LITERAL for t in after):
        return []
    zeros = "0" * tokens[at].width
    suffix = "".join(t.text for t in after)
    out = [prefix + zeros + suffix]
    if at > 0 and tokens[at - 1].kind is TokenKind.LITERAL:
        out.append(prefix + tokens[at - 1].text + zeros + suffix)
    return out


def compound_buckets(rule: Rule, legacy: LegacyState) -> tuple[dict[str, int], list[str]]:
    """Compound rows of the rule's object by the per_prefix key their Prefix renders, and the
    prefixes that do not fit the format."""
    pattern = rule.format.scan_pattern()
    found: dict[str, int] = {}
    unmatched: list[str] = []
    for prefix, current in legacy.compound.get(rule.object_name, ()):
        match = next((m for c in _candidates(rule, prefix) if (m := pattern.match(c))), None)
        if match is None:
            unmatched.append(prefix)
            continue
        key = match.scope_key("per_prefix")
        found[key] = max(found.get(key, current), current)
    return found, unmatched


def plan_rows(
    rule: Rule, live: dict[str, int], legacy: LegacyState, reserved: Mapping[str, int] | None = None
) -> tuple[list[CounterRow], list[str]]:
    """The counter rows of one field from its live maxima, the legacy floors and what each scope key
    ever reserved (`reserved`, rules/floor.py: a global row stays above all of it)."""
    key = (rule.object_name, rule.field_name)
    reserved = reserved or {}
    floors: list[tuple[str, int]] = [("start", rule.start)]
    if rule.scope == "global" and reserved:
        floors.append(("reserved", max(reserved.values())))
    if key in legacy.numbers:
        floors.append(("legacy", legacy.numbers[key] + 1))
    if key in legacy.identifier:
        floors.append(("identifier", legacy.identifier[key] + 1))
    if rule.scope == "global" and rule.field_id in legacy.recorded:
        floors.append(("recorded", legacy.recorded[rule.field_id]))
    notes: list[str] = []
    compound: dict[str, int] = {}
    if rule.scope == "per_prefix":
        compound, unmatched = compound_buckets(rule, legacy)
        if unmatched:
            notes.append(
                f"{rule.name}: compound prefix(es) {', '.join(sorted(unmatched))} do not fit "
                f"{rule.format.source}; they cannot collide with new values and are not applied"
            )
    elif (cmax := legacy.compound_max(rule.object_name)) is not None:
        floors.append(("compound", cmax + 1))
    keys = set(live) | set(compound)
    if rule.scope == "global":
        keys.add("")
    if rule.scope == "per_day" and len(keys) > MAX_BUCKETS:
        raise SeedLimitError(
            f"autonumber seed: field {rule.name} (field_id={rule.field_id}) would get "
            f"{len(keys)} counter rows; the limit is {MAX_BUCKETS}"
        )
    base = max(value for _, value in floors)
    base_sources = "+".join(name for name, value in floors if value == base)
    rows = []
    for scope_key in sorted(keys):
        extra = [("live", live[scope_key] + 1)] if scope_key in live else []
        if rule.scope != "global" and scope_key in reserved:
            extra.append(("reserved", reserved[scope_key]))
        if scope_key in compound:
            extra.append(("compound", compound[scope_key] + 1))
        if not extra or all(value < base for _, value in extra):
            rows.append(CounterRow(rule.counter_id, scope_key, base, base_sources))
            continue
        parts = floors + extra
        best = max(value for _, value in parts)
        sources = "+".join(name for name, value in parts if value == best)
        rows.append(CounterRow(rule.counter_id, scope_key, best, sources))
    return rows, notes


def _has_global_row(conn: Connection) -> set[str]:
    t = counter_table
    return set(conn.execute(sa.select(t.c.field_id).where(t.c.scope_key == "")).scalars())


def plan_seed(conn: Connection, snapshot: CatalogSnapshot, *, force: bool, reporter: Reporter) -> SeedResult:
    """Scan every configured field that needs it and compute its counter rows (writes nothing)."""
    if snapshot.quarantined:
        bad = "; ".join(f"{fid}: {why}" for fid, why in sorted(snapshot.quarantined.items()))
        raise SetupError(f"autonumber seed: configured rule(s) do not validate: {bad}")
    legacy = read_backups(conn, read_legacy(conn))
    legacy.recorded = {fid: int(v) for fid, v in state.read(conn, state.FLOOR).items() if v.isdigit()}
    seeded = state.read(conn, state.SEEDED)
    have_row = _has_global_row(conn)
    older = older_by_field(conn, {r.field_id: r.format.source for r in snapshot.rules.values()})
    result = SeedResult()
    for rule in sorted(snapshot.rules.values(), key=lambda r: r.field_id):
        marker = state.seed_marker(rule.scope, rule.start, rule.format.source)
        done = seeded.get(rule.field_id) == marker and (rule.scope != "global" or rule.counter_id in have_row)
        if done and not force and not legacy.present:
            result.skipped.append(rule.field_id)
            continue
        table = snapshot.table(rule.object_name)
        with reporter.task(f"scan {rule.name}", None) as advance:
            scan = scan_rule(conn, rule, table, advance, older=older.get(rule.field_id, ()))
        result.scanned[rule.field_id] = scan.rows
        rows, notes = plan_rows(rule, scan.buckets, legacy, floor.floors(conn, rule.counter_id))
        result.rows.extend(rows)
        result.notes.extend(notes)
    result.rows = merged(result.rows)
    return result


def merged(rows: Sequence[CounterRow]) -> list[CounterRow]:
    """One row per counter key, the greatest: members of a shared counter each plan its rows, and
    one upsert may not name a key twice (PostgreSQL refuses it; the recorded floor would be lowered)."""
    best: dict[tuple[str, str], CounterRow] = {}
    for row in rows:
        key = (row.field_id, row.scope_key)
        if key not in best or row.next_value > best[key].next_value:
            best[key] = row
    return list(best.values())


@contextmanager
def _cutover(engine: Engine, timeout: float) -> Iterator[None]:
    with dialect_for(engine).named_lock(engine, CUTOVER_LOCK, timeout):
        yield


def write_rows(engine: Engine, rows: Sequence[CounterRow], timeout: float = CUTOVER_TIMEOUT) -> None:
    """Upsert with GREATEST in batches of 200 (one executemany each), re-taking the cutover lock
    for each batch."""
    dialect = dialect_for(engine)
    for start in range(0, len(rows), BATCH):
        with _cutover(engine, timeout), engine.begin() as conn:
            now = dialect.utc_now(conn)
            dialect.upsert_greatest_many(
                conn,
                counter_table,
                ("field_id", "scope_key"),
                "next_value",
                [
                    {
                        "field_id": row.field_id,
                        "scope_key": row.scope_key,
                        "next_value": row.next_value,
                        "created_date": now,
                        "last_modified_date": now,
                    }
                    for row in rows[start : start + BATCH]
                ],
            )


def migrate_keys(engine: Engine) -> list[str]:
    """Move every per_prefix field's token-value rows to rendered-text keys (one transaction per
    field, GREATEST merge); one line per field moved. A field is checked until a pass records it
    in `_System_SetupState` (`keys:<field id>`); later runs skip it."""
    with engine.connect() as conn:
        rules = [r for r in load_snapshot(conn).rules.values() if r.scope == "per_prefix"]
        done = state.read(conn, state.KEYS)
    out = []
    for rule in sorted(rules, key=lambda r: r.field_id):
        if done.get(rule.field_id) == state.KEYS_RENDERED:
            continue
        with engine.begin() as conn:
            moves = migrate_prefix_keys(conn, rule)
            state.put(conn, state.KEYS + rule.field_id, state.KEYS_RENDERED)
        if moves:
            out.append(
                f"{rule.name}: {len(moves)} per_prefix counter row(s) moved to rendered-text "
                f"keys (e.g. {moves[0].old!r} -> {moves[0].new!r})"
            )
    return out


def seed_counters(
    engine: Engine,
    *,
    force: bool = False,
    reporter: Reporter | None = None,
    timeout: float = CUTOVER_TIMEOUT,
) -> SeedResult:
    """Seed `_System_AutoNumberCounter` for every configured field (idempotent, never lowers)."""
    rep = reporter or NullReporter()
    with _cutover(engine, timeout):
        moved = migrate_keys(engine)
        with engine.connect() as conn:
            snapshot = load_snapshot(conn)
            result = plan_seed(conn, snapshot, force=force, reporter=rep)
    result.notes.extend(moved)
    write_rows(engine, result.rows, timeout)
    with engine.begin() as conn:
        for rule in snapshot.rules.values():
            if rule.field_id in result.scanned:
                state.put(
                    conn,
                    state.SEEDED + rule.field_id,
                    state.seed_marker(rule.scope, rule.start, rule.format.source),
                )
        record_floors(conn, result.rows)
    return result


def record_floors(conn: Connection, rows: Sequence[CounterRow]) -> None:
    """Keep each global row's seeded next value in `_System_SetupState` (never lowered): a floor
    that outlives the legacy tables, their backups and the counter row itself."""
    recorded = state.read(conn, state.FLOOR)
    for row in rows:
        if row.scope_key != "":
            continue
        known = recorded.get(row.field_id, "")
        if not known.isdigit() or int(known) < row.next_value:
            state.put(conn, state.FLOOR + row.field_id, str(row.next_value))
