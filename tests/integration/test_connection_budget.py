"""The connection budget: one process holds at most N connections, all pools together (10 by
default); waiting is first come, first served and bounded by a clear error; 8 processes × 25
threads inserting on PostgreSQL stay within 8 × 10 connections, under the default limit of 100."""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager

import pytest
import sqlalchemy as sa
from budget_support import insert_with_defaults
from engine_support import assert_unique_contiguous, make_platform, run_threads

import autonumber
from autonumber.db.budget import DEFAULT_MAX_CONNECTIONS, ENV, FairGate
from autonumber.errors import ConfigError, ConnectionBudgetExhausted
from autonumber.runtime import Platform

PROCESSES, THREADS, PER_THREAD = 8, 25, 6
PG_DEFAULT_MAX_CONNECTIONS = 100


def test_fair_gate_serves_waiters_in_arrival_order() -> None:
    gate = FairGate(1)
    assert gate.acquire(1)
    order: list[int] = []

    def waiter(i: int) -> None:
        assert gate.acquire(10)
        order.append(i)
        gate.release()

    threads = []
    for i in range(8):
        t = threading.Thread(target=waiter, args=(i,))
        t.start()
        threads.append(t)
        deadline = time.monotonic() + 5
        while len(gate._waiters) < i + 1 and time.monotonic() < deadline:  # queued in this order
            time.sleep(0.001)
    gate.release()
    for t in threads:
        t.join(10)
    assert order == list(range(8))
    assert gate.acquire(0.01)  # every permit came back


def test_fair_gate_times_out_and_leaves_the_queue() -> None:
    gate = FairGate(1)
    assert gate.acquire(1)
    started = time.monotonic()
    assert gate.acquire(0.1) is False
    assert 0.09 <= time.monotonic() - started < 30  # it did wait; the upper bound only catches a hang
    gate.release()
    assert gate.acquire(0) and not gate._waiters


def test_fair_gate_keeps_a_permit_handed_over_as_the_wait_runs_out() -> None:
    """A permit handed to a waiter whose wait has just timed out is its own, never lost: the gate
    has none free afterwards, and the waiter's release gives it back."""
    gate = FairGate(1)
    assert gate.acquire(1)
    got: list[bool] = []
    waiter = threading.Thread(target=lambda: got.append(gate.acquire(0.05)))
    waiter.start()
    deadline = time.monotonic() + 5
    while not gate._waiters and time.monotonic() < deadline:
        time.sleep(0.001)
    with gate._lock:  # the waiter's wait runs out while `release` holds the gate's lock and hands
        time.sleep(0.2)  # the permit over (what `release` does under it)
        gate._waiters.popleft().release()
    waiter.join(10)
    assert got == [True] and gate._free == 0 and not gate._waiters
    gate.release()
    assert gate.acquire(0)


@contextmanager
def checked_out_peak(p: Platform) -> Iterator[list[int]]:
    """The most connections the Platform held at once, across its three pools."""
    lock = threading.Lock()
    state = [0, 0]  # now, peak

    def out(*_: object) -> None:
        with lock:
            state[0] += 1
            state[1] = max(state[1], state[0])

    def back(*_: object) -> None:
        with lock:
            state[0] -= 1

    pools = [e.pool for e in p.engines]
    for pool in pools:
        sa.event.listen(pool, "checkout", out)
        sa.event.listen(pool, "checkin", back)
    peak = [0]
    try:
        yield peak
    finally:
        for pool in pools:
            sa.event.remove(pool, "checkout", out)
            sa.event.remove(pool, "checkin", back)
        peak[0] = state[1]


def test_default_budget_caps_every_pool_together(db_url: str) -> None:
    p = make_platform(db_url)
    try:
        assert p.budget.total == DEFAULT_MAX_CONNECTIONS
        sizes = [e.pool.size() for e in p.engines]  # type: ignore[attr-defined]
        assert sum(sizes) == DEFAULT_MAX_CONNECTIONS
        threads = 40 if p.dialect.name != "sqlite" else 8
        with checked_out_peak(p) as peak:
            values = run_threads(
                threads,
                lambda i: [p.records.insert("Case", {"Subject": f"{i}-{k}"})["CaseNumber"] for k in range(5)],
            )
        assert 1 <= peak[0] <= DEFAULT_MAX_CONNECTIONS
        assert assert_unique_contiguous(values) == list(range(1, threads * 5 + 1))
    finally:
        p.close()


def test_a_wait_past_the_timeout_is_a_clear_error_and_writes_nothing(db_url: str) -> None:
    p = make_platform(db_url, max_connections=3, connection_timeout=0.3)
    try:
        errors: list[BaseException] = []
        with p.db.connect():  # the one 'records' connection of a budget of 3
            t = threading.Thread(target=lambda: _insert_catching(p, errors))
            t.start()
            t.join(10)
        assert len(errors) == 1 and isinstance(errors[0], ConnectionBudgetExhausted)
        message = str(errors[0])
        assert "\n" not in message and "'records' pool" in message and ENV in message
        assert p.records.count("Case") == 0
        assert p.records.insert("Case", {"Subject": "after"})["CaseNumber"]  # the pool recovers
    finally:
        p.close()


def _insert_catching(p: Platform, errors: list[BaseException]) -> None:
    try:
        p.records.insert("Case", {"Subject": "waits"})
    except Exception as exc:
        errors.append(exc)


def test_the_budget_comes_from_the_environment(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    make_platform(sqlite_url).close()
    monkeypatch.setenv(ENV, "6")
    with autonumber.connect(sqlite_url) as p:
        assert p.budget.total == 6
    with autonumber.connect(sqlite_url, max_connections=4) as p:
        assert p.budget.total == 4
    for bad in ("abc", "2", "-1"):
        monkeypatch.setenv(ENV, bad)
        with pytest.raises(ConfigError):
            autonumber.connect(sqlite_url)


@pytest.mark.postgresql
@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_8_processes_x_25_threads_stay_within_the_default_budget(db_url: str) -> None:
    url = db_url
    make_platform(url).close()
    # the load must fit the PostgreSQL default (100, 3 kept for superusers) whatever this server has
    assert PROCESSES * DEFAULT_MAX_CONNECTIONS <= PG_DEFAULT_MAX_CONNECTIONS - 3
    app = "an_budget_"
    stop = threading.Event()
    peaks: dict[str, int] = {}

    def watch() -> None:
        engine = sa.create_engine(url)
        query = sa.text(
            "SELECT application_name, count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND application_name LIKE :p GROUP BY 1"
        )
        with engine.connect() as conn:
            while not stop.is_set():
                for name, count in conn.execute(query, {"p": app + "%"}):
                    peaks[name] = max(peaks.get(name, 0), int(count))
                conn.rollback()
                time.sleep(0.02)
        engine.dispose()

    watcher = threading.Thread(target=watch)
    watcher.start()
    spawn = multiprocessing.get_context("spawn")
    try:
        with ProcessPoolExecutor(PROCESSES, mp_context=spawn) as pool:
            futures = [
                pool.submit(insert_with_defaults, f"{url}?application_name={app}{i}", THREADS, PER_THREAD)
                for i in range(PROCESSES)
            ]
            per_process = [f.result(timeout=240) for f in futures]
    finally:
        stop.set()
        watcher.join(10)
    values = [v for chunk in per_process for v in chunk]
    assert assert_unique_contiguous(values) == list(range(1, PROCESSES * THREADS * PER_THREAD + 1))
    assert len(peaks) == PROCESSES, peaks  # every process was seen holding connections
    assert max(peaks.values()) <= DEFAULT_MAX_CONNECTIONS, peaks
    print(f"\nconnections per process, peak: {sorted(peaks.values())}")
