"""`autonumber spec apply` and `autonumber field add|set`: the only sanctioned way to change rules
and to roll the cut-over back. See docs/changing-rules.md and docs/runbook.md."""

from __future__ import annotations

from autonumber.rules import RuleChangeRefused as RuleChangeRefused
from autonumber.rules import add_field as add_field
from autonumber.rules import change_rule as change_rule

from .runner import ApplyResult as ApplyResult
from .runner import apply_spec as apply_spec
from .trigger import install_guard_trigger as install_guard_trigger

__all__ = [
    "ApplyResult",
    "RuleChangeRefused",
    "add_field",
    "apply_spec",
    "change_rule",
    "install_guard_trigger",
]
