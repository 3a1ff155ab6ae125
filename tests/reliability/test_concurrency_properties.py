"""Concurrency invariants as property tests: random interleavings on ONE counter.

Hypothesis draws, per caller thread, a script of assign_one / assign_batch / a caller that rolls
back after taking numbers / a format change; the threads run at once. Afterwards:
- every committed value is unique;
- each caller saw its numbers strictly increase (monotonic per scope — the counter is global);
- gaps only where a caller rolled back: committed ∪ rolled-back numbers is exactly the range the
  counter advanced over, and the two sets are disjoint. A backend that reserves on the caller's
  connection (SQLite, docs/engine.md) returns rolled-back numbers instead: there the committed
  numbers alone fill the range, without any gap.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rel_support import CASE, make_platform, next_value, number

from autonumber.engine import STRATEGIES
from autonumber.rules.store import RuleSpec, apply_rules
from autonumber.runtime import Platform

FORMATS = ("{00000000}", "CN-{00000000}", "{000000000}")


class Rollback(Exception):
    """Raised inside a caller transaction to roll it back on purpose."""


Action = tuple[str, int]
action = st.one_of(
    st.tuples(st.just("one"), st.just(1)),
    st.tuples(st.just("batch"), st.integers(2, 25)),
    st.tuples(st.just("rollback"), st.integers(1, 3)),
    st.tuples(st.just("format"), st.integers(0, len(FORMATS) - 1)),
)
scripts = st.lists(st.lists(action, min_size=1, max_size=6), min_size=1, max_size=4)


@dataclass
class Log:
    committed: list[int] = field(default_factory=list)
    rolled_back: list[int] = field(default_factory=list)
    per_caller: list[list[tuple[int, bool]]] = field(default_factory=list)
    """Per caller, in order: (number, committed)."""
    errors: list[BaseException] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _run(p: Platform, script: list[Action], log: Log, start: threading.Barrier) -> None:
    mine: list[tuple[int, bool]] = []
    try:
        start.wait()
        for kind, arg in script:
            if kind == "one":
                got = [number(p.engine.assign_one(CASE, {}))]
            elif kind == "batch":
                got = [number(v) for v in p.engine.assign_batch(CASE, [{}] * arg)]
                assert got == list(range(got[0], got[0] + arg)), f"batch not contiguous: {got}"
            elif kind == "rollback":
                taken: list[int] = []
                with pytest.raises(Rollback), p.begin() as conn:
                    for _ in range(arg):
                        taken.append(number(p.records.insert("Case", {"Subject": "rb"}, conn)["CaseNumber"]))
                    raise Rollback()
                mine.extend((n, False) for n in taken)
                with log.lock:
                    log.rolled_back.extend(taken)
                continue
            else:
                with p.begin() as conn:
                    apply_rules(conn, [RuleSpec("Case", "CaseNumber", FORMATS[arg])])
                p.catalog.refresh()
                continue
            mine.extend((n, True) for n in got)
            with log.lock:
                log.committed.extend(got)
    except BaseException as exc:
        with log.lock:
            log.errors.append(exc)
    with log.lock:
        log.per_caller.append(mine)


@pytest.fixture(params=STRATEGIES)
def platform(request: pytest.FixtureRequest, db_url: str) -> Iterator[Platform]:
    p = make_platform(db_url, strategy=request.param, poll_interval=0.05)
    yield p
    p.close()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_random_interleavings_keep_the_counter_invariants(platform: Platform) -> None:
    returns_rolled_back = platform.dialect.name == "sqlite"

    @settings(
        max_examples=15,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(scripts)
    def check(threads_scripts: list[list[Action]]) -> None:
        first = next_value(platform)
        log = Log()
        barrier = threading.Barrier(len(threads_scripts))
        threads = [threading.Thread(target=_run, args=(platform, s, log, barrier)) for s in threads_scripts]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not any(t.is_alive() for t in threads), "a caller hung"
        assert not log.errors, f"{log.errors[0]!r}"
        end = next_value(platform)

        assert len(log.committed) == len(set(log.committed)), "a committed number was handed out twice"
        for mine in log.per_caller:
            seen = [n for n, committed in mine if committed or not returns_rolled_back]
            assert seen == sorted(set(seen)), f"a caller's numbers went backwards: {mine}"
        if returns_rolled_back:
            assert sorted(log.committed) == list(range(first, end))
        else:
            assert not set(log.committed) & set(log.rolled_back)
            assert sorted(log.committed + log.rolled_back) == list(range(first, end))

    check()
