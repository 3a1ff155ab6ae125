"""Adding an autonumber field and changing its rule: the CLI's `field add|set`, the console, the API.

Every change goes through `autonumber.rules` (plan → write → verify in one transaction); these
functions only open the database, find the field and refresh a running platform's catalog.
"""

from __future__ import annotations

from autonumber.catalog import CatalogSnapshot, FieldRow
from autonumber.errors import UnknownField
from autonumber.rules import FieldChange, RuleEdit, RuleRequest, RuleSpec, commit_requests, set_rule
from autonumber.runtime import Platform

from .session import opened


def create_field(url: str, rule: RuleSpec) -> FieldChange:
    """Create the column if missing, store the validated rule and seed its counter."""
    with opened(url) as engine:
        [done] = commit_requests(engine, [RuleRequest("add", rule)])
    return done


def set_field(url: str, edit: RuleEdit) -> FieldChange:
    """Change a field's rule (what the edit does not give stays as stored); what changed."""
    with opened(url) as engine:
        return set_rule(engine, edit)


def field_row(snapshot: CatalogSnapshot, field: str, *, autonumber: bool = True) -> FieldRow:
    """The `_System_Field` row of a field (by id or `Object.Field`), or UnknownField.

    `autonumber`: only a field with a rule will do ("field has no autonumber rule" otherwise).
    """
    fid = snapshot.field_id(field)
    for rows in snapshot.fields.values():
        for row in rows:
            if row.id == fid and (row.format is not None or not autonumber):
                return row
    raise UnknownField(field, "field has no autonumber rule")


def change_field(platform: Platform, edit: RuleEdit) -> FieldChange:
    """Change a rule on a running platform (what is not given stays), then refresh its catalog."""
    done = set_rule(platform.db, edit)
    platform.catalog.refresh()
    return done
