"""No path that (re)creates or moves a counter reissues a value that was ever reserved.

Values reserved by `engine.assign_one` and never stored (a caller that rolled back) are on no row of
the user's table; only the counter, the reservation journal and the rows a scope change retired know
them. A scope round trip, a lost lazy row and a re-seed must all start above them, on every backend.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa

import autonumber
from autonumber.db import create_engine
from autonumber.db.tables import counter_table, reservation_journal
from autonumber.rules import RuleEdit, set_rule, verify
from autonumber.rules.seed import seed_counters
from autonumber.runtime import Platform
from autonumber.setup.bootstrap import bootstrap

FIELD = "Case.CaseNumber"


@pytest.fixture
def platform(db_url: str) -> Iterator[Platform]:
    engine = create_engine(db_url)
    bootstrap(engine)
    engine.dispose()
    p = autonumber.connect(db_url)
    yield p
    p.close()


def insert(platform: Platform) -> str:
    return str(platform.records.insert("Case", {"Subject": "x"})["CaseNumber"])


def reserve(platform: Platform, n: int) -> list[str]:
    """Numbers handed out and never stored: the caller rolled back."""
    return [platform.engine.assign_one(FIELD, {"Subject": "x"}) for _ in range(n)]


def change(platform: Platform, fmt: str, scope: str) -> None:
    set_rule(platform.db, RuleEdit("Case", "CaseNumber", format=fmt, scope=scope))
    platform.catalog.refresh()


def forget_journal(platform: Platform) -> None:
    with platform.begin() as conn:
        conn.execute(sa.delete(reservation_journal))


def lose_rows(platform: Platform) -> None:
    with platform.begin() as conn:
        conn.execute(sa.delete(counter_table).where(counter_table.c.field_id == FIELD))


@pytest.mark.parametrize("journal", ["kept", "pruned"])
def test_a_global_per_day_global_round_trip_reissues_nothing(platform: Platform, journal: str) -> None:
    stored = [insert(platform) for _ in range(2)]
    handed_out = set(stored) | set(reserve(platform, 5))
    change(platform, "C-{YYYY}{MM}{DD}-{00000000}", "per_day")
    handed_out.add(insert(platform))
    if journal == "pruned":  # only the retired global row still knows 00000007
        forget_journal(platform)
    change(platform, "{00000000}", "global")
    after = [insert(platform) for _ in range(3)]
    assert not handed_out & set(after), after
    assert after[0] == "00000008"
    assert [str(f) for f in verify(platform.db)] == []


@pytest.mark.parametrize("journal", ["kept", "pruned"])
def test_a_per_prefix_global_per_prefix_round_trip_reissues_nothing(platform: Platform, journal: str) -> None:
    change(platform, "C-{00000000}", "per_prefix")
    handed_out = {insert(platform) for _ in range(2)} | set(reserve(platform, 3))
    assert max(handed_out) == "C-00000005"
    change(platform, "{00000000}", "global")
    handed_out.add(insert(platform))
    if journal == "pruned":
        forget_journal(platform)
    change(platform, "C-{00000000}", "per_prefix")
    after = [insert(platform) for _ in range(2)]
    assert not handed_out & set(after), after
    assert after[0] == "C-00000006"


@pytest.mark.parametrize("scope", ["per_day", "per_prefix"])
def test_a_lost_lazy_row_comes_back_above_every_reserved_value(platform: Platform, scope: str) -> None:
    fmt = "C-{YYYY}{MM}{DD}-{0000}" if scope == "per_day" else "C-{0000}"
    change(platform, fmt, scope)
    handed_out = {insert(platform) for _ in range(2)} | set(reserve(platform, 4))
    lose_rows(platform)  # no --reseed: the engine re-creates the row from the journal's floor
    after = insert(platform)
    assert after not in handed_out
    assert after.endswith("-0007")


def test_a_reseed_after_a_lost_global_row_stays_above_reserved_values(platform: Platform) -> None:
    handed_out = {insert(platform) for _ in range(2)} | set(reserve(platform, 5))
    lose_rows(platform)
    seed_counters(platform.db, force=True)
    assert insert(platform) not in handed_out
