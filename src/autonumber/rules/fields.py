"""Adding an autonumber field and changing a rule without code (docs/changing-rules.md).

The one implementation behind `autonumber field add|set`, the data-spec operations
`add_autonumber_field` / `set_rule`, `setup apply`'s formats phase, the console rules page and
`PUT /api/autonumber/fields/{id}`: requests are planned (every check, no write) then executed
(change.py), so a refused change writes nothing on any backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from sqlalchemy.engine import Connection, Engine

from autonumber.db import dialect_for
from autonumber.errors import UnknownField

from . import state
from .change import EDIT_LOCK, FieldChange, RuleRequest, ensure_history_table, execute, plan_requests
from .drift import drift_note
from .store import (
    RuleEdit,
    RuleSpec,
    metadata_view,
    rule_values,
    stored_rule,
)

EDIT_TIMEOUT = 30.0
"""How long an edit waits for another door's edit (or a `setup apply`) to finish."""


def apply_requests(
    conn: Connection, requests: Sequence[RuleRequest], *, verify: bool = True
) -> list[FieldChange]:
    """Plan every request (all checks, no write), then write them and verify the fields touched."""
    return execute(conn, plan_requests(conn, requests), verify=verify)


def add_field(conn: Connection, rule: RuleSpec, length: int | None = None) -> tuple[str, list[str]]:
    """Create the column if missing, store the rule, seed its counters; return (field id, changes).

    Re-adding the same rule is a no-op; another rule on the field is RuleChangeRefused.
    """
    if length is not None:  # every other attribute (numbering, time zone, …) kept as given
        rule = replace(rule, length=length)
    [done] = apply_requests(conn, [RuleRequest("add", rule)])
    return done.field_id, done.changes


def change_rule(conn: Connection, rule: RuleSpec) -> tuple[str, list[str]]:
    """Store a new rule for an existing autonumber field (a quarantined one included)."""
    [done] = apply_requests(conn, [RuleRequest("set", rule)])
    return done.field_id, done.changes


def commit_requests(
    engine: Engine, requests: Sequence[RuleRequest], *, timeout: float = EDIT_TIMEOUT
) -> list[FieldChange]:
    """apply_requests in a transaction of its own (committed when every request passed), under
    the edit lock every door takes, so a request's `base` is compared with what is stored now."""
    with engine.connect() as conn, conn.begin():
        ensure_history_table(conn)
    with dialect_for(engine).named_lock(engine, EDIT_LOCK, timeout), engine.begin() as conn:
        return apply_requests(conn, requests)


def set_rule(engine: Engine, edit: RuleEdit, base: str | None = None) -> FieldChange:
    """Change one field's rule, keeping what is not given: the CLI's `field set`, the console's and
    the HTTP API's. `base` is the token (StoredRule.token) of the rule the edit was made from (the
    console's form carries it; else the rule read first): had someone else changed the rule since,
    RuleChangedMeanwhile ("re-read and retry"), never a silent overwrite."""
    if base is None:
        with engine.connect() as conn:
            stored = stored_rule(conn, edit.object, edit.field)
        base = stored.token if stored is not None else None
    [done] = commit_requests(engine, [RuleRequest("set", edit, base=base)])
    return done


def sync_rules(conn: Connection, specs: Sequence[RuleSpec], notes: list[str] | None = None) -> list[str]:
    """`setup apply`'s formats phase: store the declared rule of every field that has none yet.

    The data-spec is the bootstrap's source, not a way to change a rule: once a field has a rule,
    changes go through `field set`, `spec apply` or the console, and apply keeps the stored rule
    (one line in `notes` names each real difference, rules/drift.py; a drift is no change). A rule
    removed with `field remove` stays removed. Values are scanned here, so the seed phase cannot
    fail on them later; verify is the last phase.
    """
    requests = []
    catalog, _ = metadata_view(conn)
    gone = state.removed(conn)
    for spec in specs:
        stored = stored_rule(conn, spec.object, spec.field)
        if stored is None:
            raise UnknownField(spec.name, "autonumber rule names a field the standard pack did not create")
        if stored.format is None and stored.field_id in gone:
            if notes is not None:
                notes.append(
                    f"left {spec.name} without a rule: it was removed with `autonumber field remove`"
                )
        elif stored.format is None:
            requests.append(RuleRequest("add", spec))
        elif notes is not None:
            note = drift_note(stored, spec, rule_values(spec, catalog))
            if note is not None:
                notes.append(note)
    return [line for done in apply_requests(conn, requests, verify=False) for line in done.changes]
