"""What both ORM adapters share: registering an application table's column as an autonumber field."""

from __future__ import annotations

from autonumber.errors import AutonumberError, UnknownField
from autonumber.identifiers import check_api_name
from autonumber.objects.adopt import adopt_table
from autonumber.rules import RuleSpec, add_field
from autonumber.runtime import Platform


class ReadOnlyAutoNumber(AutonumberError):
    """An autonumber field changed on a saved instance (or left empty where nothing numbers it)."""

    exit_code = 2


def ensure_field(platform: Platform, object_name: str, table: str, rule: RuleSpec) -> str:
    """Adopt `table` as `object_name` and add the rule unless already there; return the field id.

    Idempotent: a second process binding the same column finds the object and rule and changes
    nothing; a different rule already stored is refused (change it with `autonumber field set`).
    """
    check_api_name(object_name, "object name")
    snapshot = platform.catalog.current()
    try:
        current = snapshot.stored(rule.name)
    except UnknownField:
        current = None  # not registered yet: the rules package below adds it
    if current is not None and current.field_id not in snapshot.quarantined and current.policy == rule.policy:
        return current.field_id
    with platform.begin() as conn:  # add_field: a no-op for the same rule, refused for another one
        adopt_table(conn, object_name, table)
        add_field(conn, rule)
    return platform.catalog.refresh().field_id(rule.name)
