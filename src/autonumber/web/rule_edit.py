"""Changing a rule's format from the console: the applier's parse + validate path, then invariant checks.

The change is stored with `autonumber.rules.store.store_rule` inside one transaction; the checks
below run in that transaction and roll it back when the new format would break an invariant:

- every counter row's next value must still fit the counter width (else the next insert overflows);
- no value already stored may be handed out again: for each live value the new format can read
  back, its scope's counter must be past it;
- then the binding `setup verify` checks (V1–V6, `autonumber.rules.verify.check`) must report nothing
  about this field.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from typing import Any

from sqlalchemy.engine import Connection

from autonumber.catalog import FieldRow
from autonumber.errors import AutonumberError, UnknownField, VerifyError
from autonumber.format import parse_format
from autonumber.platform import Platform
from autonumber.rules.store import RuleSpec, store_rule

from .state import all_counters, column_values


class RuleChangeRefused(AutonumberError):
    """A valid format the console refuses because it would break a counter invariant."""

    exit_code = 2

    def __init__(self, field_id: str, reason: str) -> None:
        self.field_id = field_id
        self.reason = reason
        super().__init__(f"change to {field_id} refused: {reason}")


def field_row(platform: Platform, field: str) -> FieldRow:
    """The `_System_Field` row of an autonumber field, or UnknownField."""
    snapshot = platform.catalog.current()
    fid = snapshot.field_id(field)
    for rows in snapshot.fields.values():
        for row in rows:
            if row.id == fid and row.format is not None:
                return row
    raise UnknownField(field, "field has no autonumber rule")


def carried_overrides(token_refs: str | None, new_format: str) -> tuple[Mapping[str, Any], ...]:
    """Keep the stored token refs (chains, directField) of the cross tokens the new format still has."""
    if not token_refs:
        return ()
    literals = {ref.literal for ref in parse_format(new_format).cross_refs}
    refs = json.loads(token_refs)
    return tuple(r for r in refs if isinstance(r, dict) and r.get("tokenLiteral") in literals)


def change_format(
    platform: Platform,
    field: str,
    new_format: str,
    *,
    numbering: str | None = None,
    time_zone: str | None = None,
) -> str:
    """Store `new_format` (and the numbering policy / time zone when given) for an autonumber field
    after validation and invariant checks; return its id."""
    row = field_row(platform, field)
    spec = RuleSpec(
        row.info.object,
        row.info.name,
        new_format,
        scope=row.scope,
        start=row.start,
        overrides=carried_overrides(row.token_refs, new_format),
        numbering=numbering or row.numbering,
        time_zone=time_zone or row.time_zone,
    )
    with platform.begin() as conn:
        fid = store_rule(conn, spec)
        check_invariants(conn, platform, fid, spec)
        run_verify(conn, fid)
    platform.catalog.refresh()
    return fid


def check_invariants(conn: Connection, platform: Platform, field_id: str, spec: RuleSpec) -> None:
    """Refuse (RuleChangeRefused) a stored format that overflows a counter or would reissue a value."""
    fmt = parse_format(spec.format)
    counters = all_counters(conn, field_id)
    largest = 10**fmt.counter_width - 1
    for key, next_value in sorted(counters.items()):
        if next_value > largest:
            raise RuleChangeRefused(
                field_id,
                f"counter width {fmt.counter_width} cannot hold the next value {next_value} of scope "
                f"{key or 'global'!r}; keep at least {len(str(next_value))} digit(s)",
            )
    table = platform.catalog.current().table(spec.object)
    pattern = fmt.scan_pattern()
    for record_id, value in column_values(conn, table, spec.field):
        match = pattern.match(value)
        if match is None:
            continue
        key = match.scope_key(spec.scope)
        current = counters.get(key)
        if current is not None and current <= match.counter:
            raise RuleChangeRefused(
                field_id,
                f"record {record_id} already holds {value!r}, which the new format would issue again "
                f"(counter of scope {key or 'global'!r} is at {current})",
            )


def run_verify(conn: Connection, field_id: str) -> None:
    """Run `setup verify` inside the change's transaction; VerifyError for violations naming the field.

    Violations about other fields are left to `autonumber setup verify`: they predate this change.
    """
    try:
        verify = importlib.import_module("autonumber.rules.verify")
    except ImportError:  # a build without the setup pipeline: the checks above still hold
        return
    violations = [v for v in verify.check(conn) if field_id in v]
    if violations:
        raise VerifyError(violations)
