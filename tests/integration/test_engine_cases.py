"""The engine on a real database (cases 1–4, 6, 16, 17, 17a, 17b, 19, 20, 27).

Dates are injected through the engine's `clock` hook, which replaces the database clock sample;
without the hook (every other test) the database clock drives the scope key and the date tokens.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta

import pytest
import sqlalchemy as sa
from engine_support import (
    CASE,
    ReservationLog,
    all_strategies,
    assert_unique_contiguous,
    counter_rows,
    make_platform,
    number,
    run_threads,
    set_next_value,
    store_rules,
)

from autonumber.catalog.cache import Rule
from autonumber.db.tables import counter_table
from autonumber.errors import CounterMissing, CounterOverflow
from autonumber.rules.store import RuleSpec
from autonumber.runtime import Platform

DAY_N = datetime(2026, 4, 17, 10, 0, 0, tzinfo=UTC)
DAY_N1 = DAY_N + timedelta(days=1)
PER_DAY = RuleSpec("Case", "CaseNumber", "D-{YYYY}{MM}{DD}-{000}", scope="per_day")


@pytest.fixture(params=all_strategies())
def platform(request: pytest.FixtureRequest, db_url: str) -> Iterator[Platform]:
    p = make_platform(db_url, strategy=request.param, pool_size=8)
    yield p
    p.close()


def at(moment: datetime) -> object:
    """A clock hook that always answers `moment`."""
    return lambda _conn: moment


def count(p: Platform, object_name: str) -> int:
    return p.records.count(object_name)


def test_case1_basic_render(platform: Platform) -> None:
    store_rules(platform, RuleSpec("Case", "CaseNumber", "{0000}"))
    values = [platform.records.insert("Case", {"Subject": "s"})["CaseNumber"] for _ in range(3)]
    values += platform.engine.assign_batch(CASE, [{}] * 996)
    assert values == [f"{i:04d}" for i in range(1, 1000)]


def test_case2_date_render(platform: Platform) -> None:
    set_next_value(platform, "Account.Account_ID__c", 3968)
    platform.engine.hooks.clock = at(datetime(2026, 4, 18, 9, 30, tzinfo=UTC))
    acc = platform.records.insert("Account", {"Name": "Acme", "BillingCountryCode": "SG"})
    assert acc["Account_ID__c"] == "IBG-B-20260418-003968"


def test_case3_per_day_restarts_each_day(platform: Platform) -> None:
    store_rules(platform, PER_DAY)
    platform.engine.hooks.clock = at(DAY_N)
    first = [platform.records.insert("Case", {"Subject": "a"})["CaseNumber"] for _ in range(2)]
    platform.engine.hooks.clock = at(DAY_N1)
    nxt = platform.records.insert("Case", {"Subject": "b"})["CaseNumber"]
    assert first == ["D-20260417-001", "D-20260417-002"]
    assert nxt == "D-20260418-001"
    assert counter_rows(platform, CASE) == {"": 1, "20260417": 3, "20260418": 2}


def test_case4_global_counter_runs_across_days(platform: Platform) -> None:
    values = []
    for day in range(3):
        platform.engine.hooks.clock = at(DAY_N + timedelta(days=day))
        acc = platform.records.insert("Account", {"Name": f"a{day}", "BillingCountryCode": "SG"})
        values.append(acc["Account_ID__c"])
    assert values == ["IBG-B-20260417-000001", "IBG-B-20260418-000002", "IBG-B-20260419-000003"]


def test_case6_overflow_is_an_error_and_writes_nothing(platform: Platform) -> None:
    store_rules(platform, RuleSpec("Case", "CaseNumber", "{00}"))
    set_next_value(platform, CASE, 99)
    assert platform.records.insert("Case", {"Subject": "last"})["CaseNumber"] == "99"
    with pytest.raises(CounterOverflow) as info:
        platform.records.insert("Case", {"Subject": "one too many"})
    err = info.value
    assert (err.field_id, err.scope_key, err.value, err.width) == ("Case.CaseNumber", "", 100, 2)
    assert "widen" in str(err)
    assert count(platform, "Case") == 1
    table = platform.catalog.current().table("Case")
    with platform.db.connect() as conn:
        assert conn.execute(sa.select(table.c.CaseNumber)).scalars().all() == ["99"]
    with pytest.raises(CounterOverflow):
        platform.engine.assign_batch(CASE, [{}, {}])


def test_case16_format_change_keeps_the_counter(platform: Platform) -> None:
    before = [platform.records.insert("Case", {"Subject": "s"})["CaseNumber"] for _ in range(3)]
    store_rules(platform, RuleSpec("Case", "CaseNumber", "CASE-{000000}"))
    after = platform.records.insert("Case", {"Subject": "s"})["CaseNumber"]
    assert before == ["00000001", "00000002", "00000003"]
    assert after == "CASE-000004"
    assert counter_rows(platform, CASE) == {"": 5}


def test_case17_concurrent_first_reservations_are_distinct(platform: Platform) -> None:
    """Both callers read the same next_value before either writes (on servers); one CAS loses."""
    if platform.dialect.name != "sqlite":
        # Hold both readers until each has read: only possible where writers can run side by side.
        meet = threading.Barrier(2)
        calls = iter(range(1_000_000))

        def both_read(_c: sa.Connection, _r: Rule, _k: str, _v: int) -> None:
            if next(calls) < 2:
                meet.wait(timeout=10)

        platform.engine.hooks.before_cas = both_read
    values = run_threads(2, lambda _i: [platform.engine.assign_one(CASE, {})])
    assert sorted(values) == ["00000001", "00000002"]
    assert counter_rows(platform, CASE) == {"": 3}


def test_case17a_first_request_of_a_new_day_creates_one_row(platform: Platform) -> None:
    store_rules(platform, PER_DAY)
    platform.engine.hooks.clock = at(DAY_N)
    assert platform.records.insert("Case", {"Subject": "n"})["CaseNumber"] == "D-20260417-001"
    platform.engine.hooks.clock = at(DAY_N1)
    # Both first requests of day N+1 see the row missing before either creates it. (Combining may
    # merge the two requests into one reservation of 2 first: then only one of them sees it.)
    meet = threading.Barrier(2)
    live_max = platform.engine.reserver.live_max
    met: list[bool] = []

    def together(*args: object) -> int:
        try:
            meet.wait(timeout=3)
            met.append(True)
        except threading.BrokenBarrierError:
            met.append(False)
        return live_max(*args)  # type: ignore[arg-type]

    platform.engine.reserver.live_max = together
    values = run_threads(2, lambda _i: [platform.engine.assign_one(CASE, {})])
    assert sorted(values) == ["D-20260418-001", "D-20260418-002"]
    assert counter_rows(platform, CASE) == {"": 1, "20260417": 2, "20260418": 3}
    if platform.engine.strategy != "combining":
        assert met == [True, True], "both requests must have raced the lazy creation"


def test_case17a_new_day_starts_above_live_values(platform: Platform) -> None:
    """A lazy row starts at GREATEST(start, live max of that day + 1) (docs/engine.md, lazy rows)."""
    store_rules(platform, PER_DAY)
    platform.engine.hooks.clock = at(DAY_N)
    for _ in range(4):
        platform.records.insert("Case", {"Subject": "n"})
    with platform.begin() as conn:  # the row vanished; the live values of the day remain
        conn.execute(sa.delete(counter_table).where(counter_table.c.scope_key == "20260417"))
    assert platform.engine.assign_one(CASE, {}) == "D-20260417-005"


def test_case17b_missing_global_row_is_corruption(platform: Platform) -> None:
    platform.records.insert("Case", {"Subject": "s"})
    with platform.begin() as conn:
        conn.execute(
            sa.delete(counter_table).where(
                counter_table.c.field_id == "Case.CaseNumber", counter_table.c.scope_key == ""
            )
        )
    with pytest.raises(CounterMissing) as info:
        platform.records.insert("Case", {"Subject": "s"})
    assert (info.value.field_id, info.value.scope_key) == ("Case.CaseNumber", "")
    assert "Case.CaseNumber" in str(info.value) and "scope_key=''" in str(info.value)
    assert counter_rows(platform, CASE) == {}, "a global row must never be reseeded"
    assert count(platform, "Case") == 1


def test_case19_batch_of_1000_is_one_contiguous_reservation(platform: Platform) -> None:
    platform.records.insert("Case", {"Subject": "first"})
    log = ReservationLog(platform)
    values = platform.engine.assign_batch(CASE, [{}] * 1000)
    assert len(log) == 1 and log.items[0].count == 1000
    assert assert_unique_contiguous(values) == list(range(2, 1002))
    rows = platform.records.insert_many("Case", [{"Subject": str(i)} for i in range(1000)])
    assert len(log) == 2
    assert [number(r["CaseNumber"]) for r in rows] == list(range(1002, 2002))


def test_case20_rolled_back_callers_leave_gaps(platform: Platform) -> None:
    prev = number(platform.records.insert("Case", {"Subject": "prev"})["CaseNumber"])
    committed = []
    for i, keep in enumerate([False, True, False, True, False]):
        with pytest.raises(RuntimeError) if not keep else _nothing(), platform.begin() as conn:
            row = platform.records.insert("Case", {"Subject": f"c{i}"}, conn=conn)
            if keep:
                committed.append(number(row["CaseNumber"]))
            else:
                raise RuntimeError("caller rolls back")
    nxt = number(platform.records.insert("Case", {"Subject": "next"})["CaseNumber"])
    assert count(platform, "Case") == 4
    if platform.dialect.name == "sqlite":
        # SQLite (docs/engine.md): the reservation ran on the caller's transaction, in a savepoint,
        # so a rolled-back caller returns its numbers: no gaps, still unique and increasing.
        assert committed == [prev + 1, prev + 2]
        assert nxt == prev + 3
    else:
        # Servers: every reservation committed on its own; three permanent gaps.
        assert committed == [prev + 2, prev + 4]
        assert nxt == prev + 6


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def test_case27_a_batch_shares_one_assigned_at_across_midnight(platform: Platform) -> None:
    """The clock crosses midnight while the batch runs; every group keeps the first group's sample."""
    ticks = itertools.count()
    base = datetime(2026, 4, 17, 23, 59, 59, 998000, tzinfo=UTC)
    platform.engine.hooks.clock = lambda _c: base + timedelta(milliseconds=next(ticks))
    log = ReservationLog(platform)
    countries, codes = ["SG", "MY", "TH"], ["CSA", "NDA"]
    rts = ["rt_Contract_Services_Agreement", "rt_Contract_Non_Disclosure_Agreement"]
    records = [{"Account_Country_Code__c": countries[i % 3], "RecordTypeId": rts[i % 2]} for i in range(500)]
    assigned = platform.engine.assign("Contract.Contract_Number__c", records)
    assert assigned.assigned_at.date() == date(2026, 4, 17)
    assert next(ticks) < 4, "later groups must reuse the sample, not read the clock again"
    assert {r.assigned_at for r in log.items} == {assigned.assigned_at}
    assert len(log) == 6, "one reservation per (country, record type) group"
    assert all("-260417-" in v for v in assigned.values)
    for i, value in enumerate(assigned.values):
        country, code = countries[i % 3], codes[i % 2]
        assert value.startswith(f"{country}-{code}-260417-")
    per_group = {}
    for value in assigned.values:
        per_group.setdefault(value.rsplit("-", 1)[0], []).append(value)
    assert sorted(len(v) for v in per_group.values()) == [83, 83, 83, 83, 84, 84]
    for values in per_group.values():
        assert assert_unique_contiguous(values)[0] == 1
