"""The rule life cycle of an autonumber field: model, store, scan, seed, verify, add and change.

Every path that changes a rule (CLI, data-spec, `setup apply`, console, HTTP) calls this package's
public API below; `autonumber.setup` holds only the cut-over pipeline built on it.
"""

from autonumber.errors import RuleChangeRefused

from .change import FieldChange, Plan, RuleRequest, plan_requests
from .fields import (
    StoredRule,
    add_field,
    apply_requests,
    carried_overrides,
    change_rule,
    commit_requests,
    respec,
    set_rule,
    stored_rule,
    sync_rules,
)
from .store import RuleSpec
from .verify import Finding, check, verify

__all__ = [
    "FieldChange",
    "Finding",
    "Plan",
    "RuleChangeRefused",
    "RuleRequest",
    "RuleSpec",
    "StoredRule",
    "add_field",
    "apply_requests",
    "carried_overrides",
    "change_rule",
    "check",
    "commit_requests",
    "plan_requests",
    "respec",
    "set_rule",
    "stored_rule",
    "sync_rules",
    "verify",
]
