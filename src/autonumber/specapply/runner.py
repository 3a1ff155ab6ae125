"""`spec apply`: guards, apply log, pre-flight, then the spec's operations.

Order of one attempt:
1. parse the spec (a malformed spec is a SpecError, exit 2, and is not logged: it has no trusted id);
2. decide from the status and the guards (guards.py) — a refusal logs one `refused` row and raises
   SpecRefused (exit 3); a draft rollback or an already-applied spec logs `skipped` and returns;
3. pre-flight: every operation's read-only plan runs first (backups present, rules readable, live
   values parseable) — a failure logs `failed` and nothing was changed;
4. apply under the bootstrap lock (so `setup apply` cannot interleave), then log `applied`.

Transactions: where DDL is transactional (PostgreSQL, SQLite) every operation runs in ONE
transaction — a failure leaves the database as it was. MariaDB/MySQL commit each DDL statement
implicitly, so there each operation runs in its own transaction after the pre-flight, and every
operation is idempotent: running the spec again after a failure finishes the job. Consecutive rule
operations (`add_autonumber_field`, `set_rule`) are planned together in the pre-flight and applied as
one batch by `autonumber.rules`, all or nothing on every backend (a column added on MariaDB is
dropped again when a later write of the batch fails).
A spec made of the setup sections (the canonical seed spec) runs `setup apply`'s phases, which manage
their own transactions and lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from sqlalchemy.engine import Connection, Engine

from autonumber.db import dialect_for
from autonumber.errors import AutonumberError, SpecRefused
from autonumber.progress import NullReporter, Reporter
from autonumber.rules import RuleRequest, apply_requests, ensure_history_table, plan_requests
from autonumber.setup import apply as setup_apply

from . import guards, log
from .document import Operation, SpecDocument, read_document
from .operations import OPERATIONS, RULE_OPERATIONS, resolve, rule_request

LOCK_TIMEOUT = 600.0


@dataclass
class ApplyResult:
    """What one attempt did."""

    spec_id: str
    env: str
    outcome: str
    message: str
    changes: list[str] = field(default_factory=list)


def apply_spec(
    engine: Engine,
    spec: str | Path | SpecDocument,
    env: str | None,
    *,
    staging_log: Engine | None = None,
    reporter: Reporter | None = None,
    lock_timeout: float = LOCK_TIMEOUT,
) -> ApplyResult:
    """Apply one data-spec to `engine` for `env` ("staging" or "production").

    `staging_log` is where staging's apply log lives when staging is another database (for the
    `pending-prod` same-day check); by default the target database's own log is read.
    """
    doc = spec if isinstance(spec, SpecDocument) else read_document(spec)
    target_env = guards.check_env(env)
    ops = resolve(doc.operations, doc.source)
    log.ensure_log(engine)
    try:
        decision = guards.decide(doc, target_env)
        if decision.action == "apply":
            guards.check_staging(
                doc, log.applied(staging_log or engine, doc.id, "staging", doc.digest), log.now(engine)
            )
    except SpecRefused as exc:
        log.start(engine, doc, target_env, "refused", str(exc))
        raise
    if decision.action == "skip":
        log.start(engine, doc, target_env, "skipped", decision.message)
        return ApplyResult(doc.id, target_env, "skipped", decision.message)
    done = log.applied(engine, doc.id, target_env)
    if done:
        message = (
            f"data-spec {doc.id} already applied to {target_env} at "
            f"{max(done):%Y-%m-%d %H:%M:%S} UTC: skipped"
        )
        log.start(engine, doc, target_env, "skipped", message)
        return ApplyResult(doc.id, target_env, "skipped", message)
    row = log.start(engine, doc, target_env)
    try:
        changes = _run(engine, doc, ops, reporter or NullReporter(), lock_timeout)
    except AutonumberError as exc:
        log.finish(engine, row, "failed", str(exc))
        raise
    except BaseException as exc:
        log.finish(engine, row, "failed", f"{type(exc).__name__}: {exc}")
        raise
    log.finish(engine, row, "applied")
    return ApplyResult(doc.id, target_env, "applied", f"data-spec {doc.id} applied to {target_env}", changes)


def _run(
    engine: Engine,
    doc: SpecDocument,
    ops: Sequence[Operation],
    reporter: Reporter,
    lock_timeout: float,
) -> list[str]:
    if doc.setup is not None:
        results = setup_apply.apply(engine, doc.setup, reporter=reporter, lock_timeout=lock_timeout)
        return [line for r in results for line in r.changes]
    dialect = dialect_for(engine)
    groups = _groups(ops)
    with engine.connect() as conn:  # pre-flight: read-only, all before anything changes
        for at, group in enumerate(groups):
            if at and group[0].name in RULE_OPERATIONS:
                continue  # it builds on what an earlier operation creates: planned when it runs
            for op, line in _plan(conn, group):
                reporter.detail(f"  plan {op.name}: {line}")
        conn.rollback()
    setup_apply.ensure_lock_table(engine)
    with engine.begin() as conn:  # where a scope change keeps its retired counter rows
        ensure_history_table(conn)
    with dialect.named_lock(engine, setup_apply.BOOTSTRAP_LOCK, lock_timeout):
        # one transaction for all, or one per (idempotent) operation or rule batch where DDL commits
        return dialect.ddl_steps(engine, [partial(_one, group=group, reporter=reporter) for group in groups])


Group = Sequence[Operation]


def _groups(ops: Sequence[Operation]) -> list[Group]:
    """Each run of consecutive rule operations as one group; every other operation on its own."""
    out: list[list[Operation]] = []
    for op in ops:
        if op.name in RULE_OPERATIONS and out and out[-1][0].name in RULE_OPERATIONS:
            out[-1].append(op)
        else:
            out.append([op])
    return list(out)


def _requests(conn: Connection, group: Group) -> list[RuleRequest]:
    return [rule_request(conn, op.name, op.args) for op in group]


def _plan(conn: Connection, group: Group) -> list[tuple[Operation, str]]:
    if group[0].name not in RULE_OPERATIONS:
        op = group[0]
        return [(op, line) for line in OPERATIONS[op.name].plan(conn, op.args)]
    plans = plan_requests(conn, _requests(conn, group))
    return [(op, line) for op, p in zip(group, plans, strict=True) for line in p.lines]


def _one(conn: Connection, group: Group, reporter: Reporter) -> list[str]:
    if group[0].name in RULE_OPERATIONS:
        done = apply_requests(conn, _requests(conn, group))
        lines = [line for d in done for line in d.changes]
        reporter.note(f"{len(group)} rule operation(s): {len(lines)} change(s)")
        return lines
    op = group[0]
    lines = OPERATIONS[op.name].run(conn, op.args)
    reporter.note(f"{op.name}: {len(lines)} change(s)")
    return lines
