"""The connection budget under group commit: no wait for a connection ever closes a cycle.

Fifty threads insert records that carry a gapless and a standard per-day field, on the default
budget with group commit on: plain inserts (grouped, written on the group writer's own
connection), inserts in caller transactions (records pool, standard numbers on reservation
connections), rolled-back caller transactions, and a clock that walks through days so counter
rows are created lazily all along. Every call completes; every value is unique, and the gapless
numbers of each day are one unbroken run."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from engine_support import assert_unique_contiguous, make_platform, run_threads, store_rules
from sqlalchemy.engine import Connection

from autonumber.db.budget import DEFAULT_MAX_CONNECTIONS
from autonumber.rules.fields import add_field
from autonumber.rules.store import RuleSpec
from autonumber.runtime import Platform

THREADS, PER_THREAD, DAYS = 50, 8, 20
GAPLESS = RuleSpec("Case", "CaseNumber", "G-{YYYY}{MM}{DD}-{00000}", scope="per_day", numbering="gapless")
STANDARD = RuleSpec("Case", "Ref__c", "S-{YYYY}{MM}{DD}-{000000}", scope="per_day")


class Boom(Exception):
    """The caller's own failure after its insert: its transaction rolls back."""


@pytest.fixture
def platform(db_url: str) -> Iterator[Platform]:
    # a generous wait: fifty threads share five connections, and a loaded machine serves them slowly
    p = make_platform(db_url, group_commit=True, connection_timeout=90.0)
    store_rules(p, GAPLESS)
    with p.begin() as conn:
        add_field(conn, STANDARD)
    p.catalog.refresh()
    yield p
    p.close()


class WalkingClock:
    """The database clock a thread sees: the day its worker chose for its current call (every
    sample of one call agrees, and new days keep creating counter rows lazily)."""

    def __init__(self) -> None:
        self.local = threading.local()
        self.start = datetime(2031, 3, 1, 12, tzinfo=UTC)

    def day(self, n: int) -> None:
        self.local.day = n % DAYS

    def __call__(self, _conn: Connection) -> datetime:
        return self.start + timedelta(days=getattr(self.local, "day", 0))


def test_budget_split_gives_the_group_writer_its_own_connection(platform: Platform) -> None:
    budget = platform.budget
    assert budget.total == DEFAULT_MAX_CONNECTIONS
    assert budget.group == 1 and platform.group_db is not None
    assert budget.records + budget.reservations + budget.fresh + budget.group == budget.total
    assert platform.records.group_commit is not None


def test_fifty_threads_mixing_grouped_caller_and_rolled_back_inserts_all_complete(
    platform: Platform,
) -> None:
    if platform.dialect.name == "sqlite":
        pytest.skip("SQLite reserves on the caller's connection: no reservation pool to wait on")
    clock = WalkingClock()
    platform.engine.hooks.clock = clock

    def work(i: int) -> list[str]:
        out = []
        for k in range(PER_THREAD):
            clock.day(i * PER_THREAD + k)
            kind = (i + k) % 4
            if kind == 3:
                with pytest.raises(Boom), platform.begin() as conn:
                    platform.records.insert("Case", {"Subject": f"rb{i}-{k}"}, conn)
                    raise Boom()
                continue
            if kind == 2:
                with platform.begin() as conn:
                    rec = platform.records.insert("Case", {"Subject": f"tx{i}-{k}"}, conn)
            else:
                rec = platform.records.insert("Case", {"Subject": f"g{i}-{k}"})
            out.append(f"{rec['CaseNumber']}|{rec['Ref__c']}")
        return out

    pairs = run_threads(THREADS, work)
    expected = sum(1 for i in range(THREADS) for k in range(PER_THREAD) if (i + k) % 4 != 3)
    assert len(pairs) == expected
    gapless = [p.split("|")[0] for p in pairs]
    standard = [p.split("|")[1] for p in pairs]
    assert len(set(standard)) == len(standard), "standard numbers must never repeat"
    by_day: dict[str, list[str]] = defaultdict(list)
    for value in gapless:
        by_day[value.rsplit("-", 1)[0]].append(value)
    assert len(by_day) > 1, "the walking clock must have spread the numbers over several days"
    for values in by_day.values():
        assert assert_unique_contiguous(values)[0] == 1, "each day's gapless run starts at 1"
    assert platform.records.group_commit is not None
    stored = platform.records.count("Case")
    assert stored == len(pairs)
