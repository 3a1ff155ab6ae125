"""Adding an autonumber field and changing a rule without code (docs/changing-rules.md).

The one implementation behind `autonumber field add|set`, the data-spec operations
`add_autonumber_field` / `set_rule`, `setup apply`'s formats phase, the console rules page and
`PUT /api/autonumber/fields/{id}`: requests are planned (every check, no write) then executed
(change.py), so a refused change writes nothing on any backend.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from autonumber.db.tables import system_field, system_object
from autonumber.errors import UnknownField
from autonumber.format import parse_format

from .change import FieldChange, RuleRequest, ensure_history_table, execute, plan_requests
from .store import RuleSpec, metadata_view, rule_values, same_values, stored_values


@dataclass(frozen=True)
class StoredRule:
    """The rule columns of one `_System_Field` row (format None: not an autonumber field yet)."""

    field_id: str
    format: str | None
    scope: str
    start: int
    max_length: int | None
    numbering: str = "standard"
    time_zone: str = "UTC"
    token_refs: str | None = None


def stored_rule(conn: Connection, object_name: str, field_name: str) -> StoredRule | None:
    """The field's row by `Object.Field`, or None when the field is not registered."""
    f, o = system_field, system_object
    row = conn.execute(
        sa.select(
            f.c.Id,
            f.c.auto_number_format,
            f.c.auto_number_scope,
            f.c.auto_number_start,
            f.c.MaxLength,
            f.c.auto_number_numbering,
            f.c.auto_number_time_zone,
            f.c.auto_number_token_refs,
        )
        .join(o, o.c.Id == f.c.ObjectId)
        .where(o.c.ApiName == object_name, f.c.ApiName == field_name)
    ).first()
    if row is None:
        return None
    return StoredRule(
        row[0], row[1], row[2], int(row[3]), row[4], numbering=row[5], time_zone=row[6], token_refs=row[7]
    )


def carried_overrides(token_refs: str | None, new_format: str) -> tuple[Mapping[str, Any], ...]:
    """Keep the stored token refs (chains, directField) of the cross tokens the new format still has."""
    if not token_refs:
        return ()
    literals = {ref.literal for ref in parse_format(new_format).cross_refs}
    refs = json.loads(token_refs)
    return tuple(r for r in refs if isinstance(r, dict) and r.get("tokenLiteral") in literals)


def respec(
    conn: Connection,
    object_name: str,
    field_name: str,
    fmt: str | None = None,
    *,
    scope: str | None = None,
    start: int | None = None,
    numbering: str | None = None,
    time_zone: str | None = None,
) -> RuleSpec:
    """The rule a `set` asks for: what is given, the stored rule for the rest (token-ref chains of
    the cross tokens kept); UnknownField when the field has no rule yet."""
    stored = stored_rule(conn, object_name, field_name)
    if stored is None or stored.format is None:
        raise UnknownField(
            f"{object_name}.{field_name}", "field has no autonumber rule (add it with `autonumber field add`)"
        )
    new_format = stored.format if fmt is None else fmt
    return RuleSpec(
        object_name,
        field_name,
        new_format,
        scope=scope or stored.scope,
        start=stored.start if start is None else start,
        numbering=numbering or stored.numbering,
        time_zone=time_zone or stored.time_zone,
        overrides=carried_overrides(stored.token_refs, new_format),
    )


def apply_requests(
    conn: Connection, requests: Sequence[RuleRequest], *, verify: bool = True
) -> list[FieldChange]:
    """Plan every request (all checks, no write), then write them and verify the fields touched."""
    return execute(conn, plan_requests(conn, requests), verify=verify)


def add_field(conn: Connection, rule: RuleSpec, length: int | None = None) -> tuple[str, list[str]]:
    """Create the column if missing, store the rule, seed its counters; return (field id, changes).

    Re-adding the same rule is a no-op; another rule on the field is RuleChangeRefused.
    """
    if length is not None and length != rule.length:
        rule = RuleSpec(
            rule.object,
            rule.field,
            rule.format,
            scope=rule.scope,
            start=rule.start,
            date_src=rule.date_src,
            on_change=rule.on_change,
            overrides=rule.overrides,
            length=length,
        )
    [done] = apply_requests(conn, [RuleRequest("add", rule)])
    return done.field_id, done.changes


def change_rule(conn: Connection, rule: RuleSpec) -> tuple[str, list[str]]:
    """Store a new rule for an existing autonumber field (a quarantined one included)."""
    [done] = apply_requests(conn, [RuleRequest("set", rule)])
    return done.field_id, done.changes


def commit_requests(engine: Engine, requests: Sequence[RuleRequest]) -> list[FieldChange]:
    """apply_requests in a transaction of its own (committed when every request passed)."""
    with engine.connect() as conn:
        with conn.begin():
            ensure_history_table(conn)
        with conn.begin():
            return apply_requests(conn, requests)


def set_rule(
    engine: Engine,
    object_name: str,
    field_name: str,
    fmt: str | None = None,
    *,
    scope: str | None = None,
    start: int | None = None,
    numbering: str | None = None,
    time_zone: str | None = None,
) -> tuple[RuleSpec, FieldChange]:
    """Change one field's rule, keeping what is not given: the CLI's `field set` and the console's."""
    with engine.connect() as conn:
        rule = respec(
            conn,
            object_name,
            field_name,
            fmt,
            scope=scope,
            start=start,
            numbering=numbering,
            time_zone=time_zone,
        )
    [done] = commit_requests(engine, [RuleRequest("set", rule)])
    return rule, done


def sync_rules(conn: Connection, specs: Sequence[RuleSpec]) -> list[str]:
    """`setup apply`'s formats phase: store each declared rule that differs, all or nothing.

    A field without a rule is added in place; a changed rule goes through the change semantics.
    Values are scanned here, so the seed phase cannot fail on them later; verify is the last phase.
    """
    requests = []
    catalog, ids = metadata_view(conn)
    for spec in specs:
        stored = stored_rule(conn, spec.object, spec.field)
        if stored is None:
            raise UnknownField(spec.name, "autonumber rule names a field the standard pack did not create")
        if stored.format is not None and same_values(
            stored_values(conn, ids[spec.name]), rule_values(spec, catalog)
        ):
            continue  # unchanged: the seed phase re-reads its values when asked to
        requests.append(RuleRequest("add" if stored.format is None else "set", spec))
    return [line for done in apply_requests(conn, requests, verify=False) for line in done.changes]
