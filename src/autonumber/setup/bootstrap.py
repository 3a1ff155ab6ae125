"""A quick bootstrap: schema, objects, record types and codes, rules, counter rows — no legacy steps.

`autonumber setup apply` runs the full cut-over; this runs its first phases for a given pack
(by default the core objects of the data-spec), which is what tests and small tools need.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.engine import Engine

from autonumber.rules.store import RuleSpec

from .apply import BOOTSTRAP_LOCK, phase_named, run_phases
from .dataspec import DataSpec, SpecMeta
from .pack import ObjectSpec, RecordTypeSpec
from .standard import CONTRACT_RECORD_TYPES, CORE_OBJECTS, CORE_RULES

__all__ = ["BOOTSTRAP_LOCK", "bootstrap"]

BOOTSTRAP_PHASES = (
    "schema",
    "standard_pack",
    "formats",
    "unique_indexes",
    "record_type_codes",
    "seed_counters",
)


def bootstrap(
    engine: Engine,
    objects: Sequence[ObjectSpec] = CORE_OBJECTS,
    record_types: Sequence[RecordTypeSpec] = CONTRACT_RECORD_TYPES,
    rules: Sequence[RuleSpec] = CORE_RULES,
    lock_timeout: float = 120.0,
) -> list[str]:
    """Create everything the pack needs, idempotently, under the bootstrap lock; return the changes."""
    meta = SpecMeta("data-spec/v1", "bootstrap", "local", "applied", (), (), ())
    spec = DataSpec(meta, tuple(objects), tuple(rules), tuple(record_types), "bootstrap()")
    phases = [phase_named(name) for name in BOOTSTRAP_PHASES]
    results = run_phases(engine, spec, phases, lock_timeout=lock_timeout)
    return [line for result in results for line in result.changes]
