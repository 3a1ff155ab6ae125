"""What both ORM adapters share: registering an application table's column as an autonumber field."""

from __future__ import annotations

from autonumber.errors import AutonumberError, RuleQuarantined, UnknownField
from autonumber.identifiers import check_api_name
from autonumber.objects.adopt import adopt_table
from autonumber.rules.fields import add_field, stored_rule
from autonumber.rules.store import RuleSpec
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
        current = snapshot.rule(rule.name)
    except (UnknownField, RuleQuarantined):
        current = None  # not registered yet, or broken: the rules package below adds or refuses it
    if current is not None and (current.format.source, current.scope) == (rule.format, rule.scope):
        return current.field_id
    with platform.begin() as conn:
        adopt_table(conn, object_name, table)
        stored = stored_rule(conn, object_name, rule.field)
        if stored is None or stored.format is None or stored.format != rule.format:
            add_field(conn, rule)
    return platform.catalog.refresh().field_id(rule.name)
