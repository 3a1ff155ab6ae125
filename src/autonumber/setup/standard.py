"""The core of the standard pack, taken from the generated seed (the data-spec is the one source)."""

from __future__ import annotations

from autonumber.rules.store import RuleSpec
from autonumber.seeds import autonumber_formats as _seed

from .pack import CORE_OBJECT_NAMES, ObjectSpec, RecordTypeSpec, objects_from_data

CORE_OBJECTS: tuple[ObjectSpec, ...] = tuple(
    o for o in objects_from_data(_seed.OBJECTS) if o.name in CORE_OBJECT_NAMES
)
"""Account, Opportunity, Contract, Quote, Order, Case as the data-spec declares them."""

CONTRACT_RECORD_TYPES: tuple[RecordTypeSpec, ...] = tuple(
    RecordTypeSpec(*row) for row in _seed.RECORD_TYPE_CODES
)
"""The nine Contract record types with their codes."""


def _core_rules() -> tuple[RuleSpec, ...]:
    from .generate import spec_from_module

    return tuple(r for r in spec_from_module(_seed).rules if r.object in CORE_OBJECT_NAMES)


CORE_RULES: tuple[RuleSpec, ...] = _core_rules()
"""The rules of the core objects (a subset of the generated seed)."""
