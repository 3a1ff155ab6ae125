"""Which write path runs, chosen in two functions and nowhere else (docs/design.md, "The write path").

A write is chosen twice. `choose_call` picks whose transaction the rows go in and who commits it,
from the call alone. Inside that transaction `choose_numbering` picks how the rows get their
numbers, from the rules, the records and what the backend can do on that connection. Each fast
path is one branch with what it needs; everything else takes `Numbering.RESERVED`, which every
backend and every rule can do. Every path keeps the same promises: a number is never handed out
twice, a number not stored is journalled as a gap with its reason, and bad input costs no number.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from sqlalchemy.engine import Connection

from ..catalog.cache import Rule
from ..db.base import Numbered
from ..db.bulk import by_fields
from ..engine import Engine


class Call(Enum):
    """Whose transaction the rows are written in, and who commits it."""

    GROUPED = "grouped"
    """Group commit (write/group_commit.py): concurrent single inserts of one object share one short
    transaction of ours, numbers reserved in it for up to `INSIDE_UP_TO` rows (one COMMIT), before
    it for more (the counter row is not held while many rows are written)."""
    OWN = "own"
    """One transaction of ours for the call, committed before it returns; numbers are reserved in
    short transactions of their own (SQLite: in it), so the counter row is held only that long."""
    CALLER = "caller"
    """The caller's `conn`: rows commit or roll back with the caller's work; numbers reserved off it
    (SQLite: on it) and journalled as given back if it rolls back."""
    STREAMED = "streamed"
    """Batches read from an iterable, one reservation per batch and counter, rows by the backend's
    bulk path (COPY, LOAD DATA), all in one transaction (ours or the caller's)."""
    STREAMED_EACH = "streamed_each"
    """As STREAMED, each batch its own transaction with its numbers reserved in it: a kill leaves
    whole batches (the import's `--commit-each`)."""


class Numbering(Enum):
    """How the rows of one transaction get their numbers."""

    NUMBERED_INSERT = "numbered_insert"
    """One statement reserves the numbers and inserts the rows, the values built in SQL from the
    format's fixed text around the counter (checked against the renderer once per rule)."""
    STAMPED = "stamped"
    """One record: the counter's increment leaves its clock sample on the counter row and the
    INSERT reads it back as CreatedDate, returning it (MariaDB: no UPDATE … RETURNING)."""
    RESERVED = "reserved"
    """Tokens resolved, numbers reserved per rule, rendered in Python, then the rows inserted
    (adopted tables row by row; streamed batches by the bulk path). Every rule and backend."""


def choose_call(
    *,
    conn: Connection | None,
    idempotent: bool,
    adopted: bool,
    grouping: bool,
    one: bool = False,
    streamed: bool = False,
    commit_each: bool = False,
) -> Call:
    """The transaction of a call: `one` (`insert`), `streamed` (an iterable or a batch size that is
    not idempotent), `grouping` (the platform's group commit is on). An adopted table's keys come
    from its own database, so its rows are never grouped; an idempotent call is one transaction."""
    if commit_each:
        return Call.STREAMED_EACH
    if streamed and not idempotent:
        return Call.STREAMED
    if conn is not None:
        return Call.CALLER
    if one and grouping and not (idempotent or adopted):
        return Call.GROUPED
    return Call.OWN


INSIDE_UP_TO = 16
"""Largest group-commit group that reserves its numbers in the transaction writing its rows."""


def reserve_inside(engine: Engine, records: Sequence[Mapping[str, Any]], c: Connection) -> bool:
    """Whether a group (`Call.GROUPED`) reserves its numbers in its own transaction `c`.

    A small group does: one COMMIT instead of two, and its multi-row INSERT adds little to the
    time the counter row stays locked. A larger group reserves first, in a reservation
    transaction of its own, so the counter row is not locked while its many rows are written:
    the group writers of other processes overlap instead of queueing on that lock. Where the
    backend reserves on the writing transaction anyway (SQLite, one writer at a time), inside."""
    return len(records) <= INSIDE_UP_TO or engine.dialect.reservation_conn(c) is not None


@dataclass(frozen=True)
class Choice:
    """`choose_numbering`'s answer: the path, the statement shape of a numbered insert, and whether
    the rows go in a savepoint of the caller's transaction (its numbers were reserved in it)."""

    numbering: Numbering
    number: Numbered | None = None
    savepoint: bool = False


def choose_numbering(
    engine: Engine,
    rules: Sequence[Rule],
    records: Sequence[Mapping[str, Any]],
    c: Connection,
    *,
    inside: bool,
    bulk: bool,
    adopted: bool,
    statements_watched: bool,
    event_listeners: bool,
) -> Choice:
    """How `records` in `c`'s transaction get their numbers. `inside`: the numbers are reserved in
    that transaction (the group writer, a committed-each batch); `bulk`: streamed batches;
    `statements_watched`: something listens to `c`'s statements (the numbered insert runs on the
    driver's cursor, unseen); `event_listeners`: RecordBeforeCreate has subscribers (they are shown
    the records, CreatedDate included, before the INSERT, so the clock is read first)."""
    on_caller = not (inside or bulk) and engine.reserves_on_caller(c)  # SQLite's caller transaction
    reserved = Choice(Numbering.RESERVED, savepoint=on_caller)
    numbered_here = inside or (on_caller and not statements_watched)
    if not numbered_here or adopted or bulk or len(rules) != 1 or event_listeners:
        return reserved
    number = engine.numbered_by_insert(rules[0], c)
    if number is not None and len(by_fields(records)) == 1:  # one INSERT … SELECT writes them all
        return Choice(Numbering.NUMBERED_INSERT, number, savepoint=on_caller)
    if inside and len(records) == 1 and engine.stamps_later(rules[0], c):
        return Choice(Numbering.STAMPED, savepoint=on_caller)
    return reserved
