"""The counter floor: the greatest value a field ever reserved in a scope, whoever forgot it since.

A counter row is the only live record of the values it handed out; a value reserved but never
stored (a caller that rolled back, a process that died) is on no row of the user's table. So every
path that creates or moves a counter row — a scope change either way, a re-seed, lost-row recovery,
the engine creating a lazy `per_day`/`per_prefix` row — starts it above, per scope key:

- the end of every range the reservation journal holds for that key (`first_value + count`);
- the next value of every counter row a scope change retired for that key, kept in
  `_System_SetupState` as `retired:<field id>|<scope key>` (never lowered, never pruned);
- and, as before, the stored values and the legacy floors (seed.py, change.py).

A `global` counter must in addition stay above every value of the field under any scope or format
(`field_floor`), as a move to `global` always did.
"""

from __future__ import annotations

from collections.abc import Mapping

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from autonumber.db.schema import has_table
from autonumber.db.tables import reservation_journal

from . import state

RETIRED = "retired:"
_SEP = "|"
"""Field ids never hold `|` (an API name or `fit_id`), so the first one ends the id."""


def journal_ends(conn: Connection, field_id: str, scope_key: str | None = None) -> dict[str, int]:
    """One past the greatest journaled value of the field, by scope key (only `scope_key` if given)."""
    j = reservation_journal
    stmt = (
        sa.select(j.c.scope_key, sa.func.max(j.c.first_value + j.c.count))
        .where(j.c.field_id == field_id)
        .group_by(j.c.scope_key)
    )
    if scope_key is not None:
        stmt = stmt.where(j.c.scope_key == scope_key)
    return {key: int(end) for key, end in conn.execute(stmt) if end is not None}


def retired(conn: Connection, field_id: str) -> dict[str, int]:
    """The next values of the field's retired counter rows, by scope key."""
    found = state.read(conn, f"{RETIRED}{field_id}{_SEP}")
    return {key: int(value) for key, value in found.items() if value.isdigit()}


def remember_retired(conn: Connection, field_id: str, rows: Mapping[str, int]) -> None:
    """Keep the next value of counter rows about to be deleted (never lowering what is kept)."""
    if not rows:
        return
    kept = retired(conn, field_id)
    for key, nxt in rows.items():
        if nxt > kept.get(key, 0):
            state.put(conn, f"{RETIRED}{field_id}{_SEP}{key}", str(nxt))


def floors(conn: Connection, field_id: str) -> dict[str, int]:
    """The lowest safe next value per scope key from the journal and the retired rows."""
    out = retired(conn, field_id) if has_table(conn, state.setup_state.name) else {}
    if has_table(conn, reservation_journal.name):
        for key, end in journal_ends(conn, field_id).items():
            out[key] = max(out.get(key, 0), end)
    return out


def field_floor(conn: Connection, field_id: str) -> int:
    """The lowest safe next value of a `global` counter: above every value of every scope, plus the
    floor a seed recorded (`floor:<field id>`)."""
    recorded = state.read(conn, state.FLOOR).get(field_id, "")
    return max([*floors(conn, field_id).values(), int(recorded) if recorded.isdigit() else 0, 0])


def scope_floor(conn: Connection, field_id: str, scope_key: str) -> int:
    """floors() for one key (the engine's lazy row): 0 when nothing is known."""
    best = max(journal_ends(conn, field_id, scope_key).values(), default=0)
    if has_table(conn, state.setup_state.name):
        name = f"{RETIRED}{field_id}{_SEP}{scope_key}"
        value = state.read(conn, name).get("", "")
        best = max(best, int(value) if value.isdigit() else 0)
    return best
