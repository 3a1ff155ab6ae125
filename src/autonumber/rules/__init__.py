"""The rule life cycle of an autonumber field: model, store, scan, seed, verify, add,
change, remove and rename.

Every path that changes a rule (CLI, data-spec, `setup apply`, console, HTTP) calls this package's
public API below; `autonumber.setup` holds only the cut-over pipeline built on it.
"""

from autonumber.catalog.stored import StoredRule
from autonumber.errors import RuleChangeRefused

from .change import EDIT_LOCK, FieldChange, Plan, RuleRequest, ensure_history_table, plan_requests
from .counters import (
    CounterMove,
    CounterState,
    already_moved,
    counter_states,
    move_counter,
    reserved_floor,
    set_next,
)
from .fields import (
    add_field,
    apply_requests,
    change_rule,
    commit_requests,
    set_rule,
    sync_rules,
)
from .life import remove_field, rename_field
from .store import RuleEdit, RuleSpec, carried_overrides, spec_of, stored_rule
from .verify import Finding, check, verify

__all__ = [
    "EDIT_LOCK",
    "CounterMove",
    "CounterState",
    "FieldChange",
    "Finding",
    "Plan",
    "RuleChangeRefused",
    "RuleEdit",
    "RuleRequest",
    "RuleSpec",
    "StoredRule",
    "add_field",
    "already_moved",
    "apply_requests",
    "carried_overrides",
    "change_rule",
    "check",
    "commit_requests",
    "counter_states",
    "ensure_history_table",
    "move_counter",
    "plan_requests",
    "remove_field",
    "rename_field",
    "reserved_floor",
    "set_next",
    "set_rule",
    "spec_of",
    "stored_rule",
    "sync_rules",
    "verify",
]
