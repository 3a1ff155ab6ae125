"""The two fast paths `choose_numbering` may pick (write/strategy.py): a numbered insert, one
statement that reserves the numbers and inserts the rows; a stamped write, whose INSERT reads
back the clock sample its increment left on the counter row."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..catalog.cache import Rule
from ..db.base import Numbered
from ..engine import Engine
from ..engine.reservation import STAMPED_AT, stamp_params
from ..errors import CommitOutcomeUnknown, CounterMissing
from .rows import first_line, record_ids


def insert_numbered(
    engine: Engine,
    object_name: str,
    c: Connection,
    table: sa.Table,
    rule: Rule,
    records: list[dict[str, Any]],
    number: Numbered,
    commit: bool,
) -> list[tuple[str, datetime]]:
    """Engine.insert_numbered; with `commit` the statement commits by itself (no BEGIN or
    COMMIT round trip of its own), so a connection lost while it runs leaves the COMMIT's
    outcome unknown: CommitOutcomeUnknown naming the records' Ids (the group writer then looks)."""
    try:
        return engine.insert_numbered(rule, c, table, records, number, commit=commit)
    except sa.exc.DBAPIError as exc:
        if commit and engine.dialect.is_unavailable(exc):
            raise CommitOutcomeUnknown(object_name, record_ids(records), first_line(exc)) from exc
        raise


def write_stamped(engine: Engine, c: Connection, table: sa.Table, rule: Rule, record: dict[str, Any]) -> None:
    """The number reserved without reading the clock back, then the row INSERTed with its
    CreatedDate read from the counter row this transaction stamped and holds locked, returned
    by the INSERT itself: UPDATE, INSERT … RETURNING, COMMIT on MariaDB instead of UPDATE,
    SELECT, INSERT, COMMIT. CreatedDate is the reservation's one clock sample, as elsewhere."""
    record[rule.field_name] = engine.assign_stamped(rule, c)
    created = engine.dialect.insert_stamped(c, table, record, "CreatedDate", STAMPED_AT, stamp_params(rule))
    if created is None:  # the stamped counter row is gone: never store a record without its date
        raise CounterMissing(rule.field_id, "", rule.counter_id)
    record["CreatedDate"] = created
