"""A lost counter row never brings back a number the legacy counter passed.

Cut-over with the legacy `CurrentNumber` 500 above the live maximum 420; then the Case counter row
is deleted and `setup apply` is run, as the runbook says. The row must come back above 500 — from
the backup tables the legacy drop left, from the floor the seed recorded, or from both.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

import autonumber
import testdb
from autonumber.db import create_engine, dialect_for
from autonumber.db.schema import table_names
from autonumber.db.tables import counter_table, legacy_autonumber
from autonumber.rules import state
from autonumber.setup.apply import apply
from autonumber.setup.demo import fill_legacy
from autonumber.setup.generate import default_spec

pytestmark = pytest.mark.slow
"""Every test cuts over a demo legacy database of the full spec: out of `make check`, started
first by `make test`."""

SPEC = default_spec()
LIVE_MAX = 420
LEGACY = 500
CASE = "Case.CaseNumber"


def _cut_over(url: str) -> None:
    eng = create_engine(url)
    try:
        fill_legacy(eng, SPEC, LIVE_MAX)
        with eng.begin() as conn:
            t = legacy_autonumber
            conn.execute(
                sa.update(t)
                .where(t.c.ObjectApiName == "Case", t.c.FieldApiName == "CaseNumber")
                .values(CurrentNumber=LEGACY)
            )
        apply(eng, SPEC)
    finally:
        eng.dispose()


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    """The cut-over above, made once per backend in the run and copied for each test (tests/testdb/)."""
    testdb.restore_state(db_url, "floor_cut_over", _cut_over)
    eng = create_engine(db_url)
    yield eng
    eng.dispose()


def _next_case(db_url: str) -> int:
    p = autonumber.connect(db_url)
    try:
        return int(p.records.insert("Case", {"Subject": "after recovery"})["CaseNumber"])
    finally:
        p.close()


def _lose_the_counter_row(engine: Engine) -> None:
    with engine.begin() as conn:
        conn.execute(sa.delete(counter_table).where(counter_table.c.field_id == CASE))


def _backups(engine: Engine) -> list[str]:
    return sorted(t for t in table_names(engine) if "__bak_" in t)


def test_runbook_recovery_stays_above_the_legacy_floor(engine: Engine, db_url: str) -> None:
    _lose_the_counter_row(engine)  # live maximum 420, legacy counter 500
    apply(engine, SPEC)
    assert _next_case(db_url) == LEGACY + 1
    _lose_the_counter_row(engine)  # again, now that 501 is stored
    apply(engine, SPEC)
    assert _next_case(db_url) == LEGACY + 2


def test_backups_alone_keep_the_floor(engine: Engine, db_url: str) -> None:
    assert legacy_autonumber.name not in table_names(engine) and _backups(engine)
    with engine.begin() as conn:  # the recorded floor is gone too: only the backups know 500
        conn.execute(sa.delete(state.setup_state).where(state.setup_state.c.name.startswith(state.FLOOR)))
    _lose_the_counter_row(engine)
    apply(engine, SPEC)
    assert _next_case(db_url) == LEGACY + 1


def test_recorded_floor_outlives_dropped_backups(engine: Engine, db_url: str) -> None:
    backups = _backups(engine)
    assert backups
    with engine.begin() as conn:
        for name in backups:
            dialect_for(conn).drop_table_if_exists(conn, name)
    _lose_the_counter_row(engine)
    apply(engine, SPEC)
    assert _next_case(db_url) == LEGACY + 1
