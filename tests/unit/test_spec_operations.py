"""The operation names a data-spec may use: the rule operations are known although they have no
entry of their own in OPERATIONS (the runner batches them through the rules package)."""

from __future__ import annotations

import pytest

from autonumber.errors import SpecError
from autonumber.specapply.document import Operation
from autonumber.specapply.operations import OPERATIONS, RULE_OPERATIONS, resolve


def test_rule_operations_resolve_without_an_operation_type() -> None:
    ops = [Operation(name, {"object": "Case"}, at) for at, name in enumerate(RULE_OPERATIONS, 10)]
    assert resolve(ops, "spec.md") == ops
    assert not set(RULE_OPERATIONS) & set(OPERATIONS)


def test_an_unknown_operation_names_its_line_and_every_known_one() -> None:
    with pytest.raises(SpecError) as info:
        resolve([Operation("set_rules", {}, 7)], "spec.md")
    message = str(info.value)
    assert message.startswith("spec.md line 7: unknown operation 'set_rules'; known: ")
    known = message.split("known: ")[1].split(", ")
    assert sorted(known) == sorted([*OPERATIONS, *RULE_OPERATIONS])
