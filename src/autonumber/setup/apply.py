"""`setup apply`: the cut-over as named, ordered phases under the bootstrap lock (docs/setup.md).

Each phase is idempotent and records its last run in `_System_SetupState`; re-running after a
failure redoes only what is not done yet. `PHASES` is the read-only plan `setup plan` prints.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from autonumber.db import dialect_for
from autonumber.db.schema import reconcile_tables, table_names
from autonumber.db.tables import system_record_type
from autonumber.db.unique import Target, catalog_targets, check_no_duplicates, ensure_unique_indexes
from autonumber.errors import SetupError, VerifyError
from autonumber.progress import NullReporter, Reporter
from autonumber.rules import state, sync_rules
from autonumber.rules.legacy import backup_table, drop_legacy
from autonumber.rules.seed import seed_counters
from autonumber.rules.verify import verify

from .dataspec import DataSpec
from .lock import BOOTSTRAP_LOCK as BOOTSTRAP_LOCK
from .lock import BOOTSTRAP_TIMEOUT
from .lock import ensure_lock_table as ensure_lock_table
from .pack import autonumber_targets, install_objects, install_record_types, seed_record_type_codes
from .upgrade import run_migrations


@dataclass
class Context:
    """What the phases share during one apply run."""

    engine: Engine
    spec: DataSpec
    reporter: Reporter
    reseed: bool = False
    backups: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    """What a phase reports that is no change (a stored rule the data-spec differs from)."""


@dataclass(frozen=True)
class Phase:
    """One named step of the cut-over."""

    name: str
    summary: str
    run: Callable[[Context], list[str]]


@dataclass(frozen=True)
class PhaseResult:
    """A phase's outcome: what changed and how long it took."""

    name: str
    changes: list[str]
    seconds: float
    notes: list[str] = field(default_factory=list)
    """Lines that are no change: a rule the data-spec differs from, kept as stored."""


def _targets(ctx: Context, conn: sa.Connection) -> list[Target]:
    found = {t.field: t for t in autonumber_targets(ctx.spec.objects)}
    found.update({t.field: t for t in catalog_targets(conn)})
    return [found[k] for k in sorted(found)]


def _check_duplicates(ctx: Context) -> list[str]:
    """Fail closed, before anything is written, when an autonumber column holds a value twice."""
    with ctx.engine.connect() as conn:
        check_no_duplicates(conn, _targets(ctx, conn))
    return []


def _unique_indexes(ctx: Context) -> list[str]:
    """A UNIQUE index on every autonumber column (existing databases included; idempotent)."""
    with ctx.engine.begin() as conn:
        return ensure_unique_indexes(conn, _targets(ctx, conn))


def _schema(ctx: Context) -> list[str]:
    """The system tables at this release's schema version: a fresh database is created at it, an
    older one gets the numbered migrations (docs/upgrading.md); a newer one is refused."""
    changes = run_migrations(ctx.engine, ctx.reporter)
    with ctx.engine.begin() as conn:  # a database made by `demo legacy` is current but has none
        changes += reconcile_tables(conn, [state.setup_state])
    return changes


def _pack_digest(spec: DataSpec) -> str:
    return hashlib.blake2b(repr((spec.objects, spec.record_types)).encode(), digest_size=16).hexdigest()


def _standard_pack(ctx: Context) -> list[str]:
    """Install the pack, unless this exact pack was installed before and its tables all exist."""
    digest = _pack_digest(ctx.spec)
    with ctx.engine.begin() as conn:
        tables = {o.table_name for o in ctx.spec.objects}
        if state.read(conn, state.PACK).get("") == digest and tables <= table_names(conn):
            return []
        changes = install_objects(conn, ctx.spec.objects)
        changes += install_record_types(conn, ctx.spec.record_types)
        state.put(conn, state.PACK, digest)
        return changes


def _formats(ctx: Context) -> list[str]:
    with ctx.engine.begin() as conn:
        return sync_rules(conn, ctx.spec.rules, ctx.notes)


def _record_type_codes(ctx: Context) -> list[str]:
    """Record type codes, with their dependency assertion: codes need the record types to exist first."""
    users = [r.name for r in ctx.spec.rules if "{RecordType." in r.format]
    with ctx.engine.begin() as conn:
        count = conn.execute(sa.select(sa.func.count()).select_from(system_record_type)).scalar_one()
        if users and not count:
            raise SetupError(
                "setup phase record_type_codes: _System_RecordType is empty but format(s) of "
                f"{', '.join(users)} use {{RecordType.…}} tokens; the record-type pack must run first "
                "(record types before their codes)"
            )
        changed = seed_record_type_codes(conn, ctx.spec.record_types)
    return [f"set RecordTypeCode on {changed} record type(s)"] if changed else []


def _db_day(engine: Engine) -> str:
    with engine.connect() as conn:
        return dialect_for(conn).utc_now(conn).strftime("%Y%m%d")


def _backup(ctx: Context) -> list[str]:
    present = table_names(ctx.engine)
    todo = [name for name in ctx.spec.meta.backup if name in present]
    if not todo:
        return []
    day = _db_day(ctx.engine)
    changes = []
    for name in todo:
        with ctx.engine.begin() as conn:
            target, what = backup_table(conn, name, day)
        ctx.backups[name] = target
        changes.append(what)
    return changes


def _seed(ctx: Context) -> list[str]:
    return seed_counters(ctx.engine, force=ctx.reseed, reporter=ctx.reporter).changes()


def _drop(ctx: Context) -> list[str]:
    with ctx.engine.begin() as conn:
        return drop_legacy(conn, ctx.backups, ctx.spec.meta.backup)


def _verify(ctx: Context) -> list[str]:
    violations = verify(ctx.engine)
    if violations:
        raise VerifyError(violations)
    return []


PHASES: tuple[Phase, ...] = (
    Phase(
        "check_duplicates",
        "refuse to start when an autonumber column holds a value twice (names field, value, row Ids)",
        _check_duplicates,
    ),
    Phase("schema", "create or reconcile the system tables", _schema),
    Phase("standard_pack", "objects, fields, record types and object tables", _standard_pack),
    Phase("formats", "parse, validate and store every autonumber rule with canonical token refs", _formats),
    Phase(
        "unique_indexes", "a UNIQUE index on every autonumber column (created when missing)", _unique_indexes
    ),
    Phase(
        "record_type_codes", "set RecordTypeCode where NULL; assert record types exist", _record_type_codes
    ),
    Phase(
        "backup_legacy", "copy each legacy table to <name>__bak_<YYYYMMDD> and compare row counts", _backup
    ),
    Phase(
        "seed_counters", "counter rows from live values and legacy tables under 'autonumber_cutover'", _seed
    ),
    Phase("drop_legacy", "drop the legacy tables whose backup matches", _drop),
    Phase("verify", "V1–V7; any violation fails the apply", _verify),
)


def run_phases(
    engine: Engine,
    spec: DataSpec,
    phases: Sequence[Phase] = PHASES,
    *,
    reporter: Reporter | None = None,
    reseed: bool = False,
    lock_timeout: float = BOOTSTRAP_TIMEOUT,
) -> list[PhaseResult]:
    """Run `phases` in order under the bootstrap lock, recording each; stop at the first failure."""
    ctx = Context(engine, spec, reporter or NullReporter(), reseed)
    run_id = uuid.uuid4().hex[:12]
    results: list[PhaseResult] = []
    ensure_lock_table(engine)
    with dialect_for(engine).named_lock(engine, BOOTSTRAP_LOCK, lock_timeout):
        for phase in phases:
            started = time.perf_counter()
            ctx.notes = []
            changes = phase.run(ctx)
            result = PhaseResult(phase.name, changes, time.perf_counter() - started, ctx.notes)
            results.append(result)
            _record(engine, run_id, result)
            ctx.reporter.note(f"phase {phase.name}: {len(changes)} change(s), {result.seconds:.2f} s")
            for line in changes:
                ctx.reporter.detail(f"  {line}")
            for line in result.notes:
                ctx.reporter.note(f"  note: {line}")
    return results


def _record(engine: Engine, run_id: str, result: PhaseResult) -> None:
    if state.setup_state.name not in table_names(engine):
        return
    with engine.begin() as conn:
        state.record_phase(
            conn,
            result.name,
            {
                "run": run_id,
                "seconds": round(result.seconds, 4),
                "changes": len(result.changes),
            },
        )


def apply(
    engine: Engine,
    spec: DataSpec,
    *,
    reporter: Reporter | None = None,
    reseed: bool = False,
    lock_timeout: float = BOOTSTRAP_TIMEOUT,
) -> list[PhaseResult]:
    """The whole cut-over; VerifyError (binding) when the result breaks V1–V7."""
    return run_phases(engine, spec, PHASES, reporter=reporter, reseed=reseed, lock_timeout=lock_timeout)


def phase_named(name: str) -> Phase:
    """A phase by name (KeyError otherwise)."""
    for phase in PHASES:
        if phase.name == name:
            return phase
    raise KeyError(name)
