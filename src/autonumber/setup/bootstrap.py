"""A quick bootstrap: schema, core objects, record types and codes, core rules, counter rows.

`autonumber setup apply` runs the full cut-over; this is the part that needs no legacy data.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.engine import Engine

from autonumber.db import dialect_for
from autonumber.db.schema import reconcile_system_schema

from .pack import (
    CONTRACT_RECORD_TYPES,
    CORE_OBJECTS,
    ObjectSpec,
    RecordTypeSpec,
    install_objects,
    install_record_types,
    seed_record_type_codes,
)
from .rules import RuleSpec, apply_rules
from .standard import CORE_RULES

BOOTSTRAP_LOCK = "autonumber_bootstrap"


def bootstrap(
    engine: Engine,
    objects: Sequence[ObjectSpec] = CORE_OBJECTS,
    record_types: Sequence[RecordTypeSpec] = CONTRACT_RECORD_TYPES,
    rules: Sequence[RuleSpec] = CORE_RULES,
    lock_timeout: float = 120.0,
) -> list[str]:
    """Create everything the core pack needs, idempotently, under the bootstrap lock."""
    dialect = dialect_for(engine)
    changes = reconcile_system_schema(engine)
    with dialect.named_lock(engine, BOOTSTRAP_LOCK, lock_timeout):
        with engine.connect() as conn, dialect.begin_write(conn):
            changes += install_objects(conn, objects)
            changes += install_record_types(conn, record_types)
            seed_record_type_codes(conn, record_types)
        with engine.connect() as conn, dialect.begin_write(conn):
            apply_rules(conn, rules)
    return changes
