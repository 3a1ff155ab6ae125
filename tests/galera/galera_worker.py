"""One caller process of the Galera tests, run as `python tests/galera/galera_worker.py COMMAND …`.

Each command prints ONE JSON object on stdout (the tests parse it) and exits 0 unless the worker
itself broke. Running callers as separate processes, each with its own pools and its own node,
is what a scaled-out deployment looks like; threads of one process would share the GIL and the
in-process combiner.

    insert URL STRATEGY THREADS COUNT RETRIES
        THREADS threads × COUNT `records.insert("Case", …)`; every number and every error.
    insert-until URL STRATEGY THREADS RETRIES STOPFILE
        insert until STOPFILE exists; each number and each error with when it happened (epoch
        seconds) and how long the failing call took. STOPFILE.ready-PID appears once the caller is connected;
        STOPFILE.got-PID's mtime is the time stamp of the latest number handed out (the test waits on it).
    apply URL
        `setup apply` of the default spec; a clear, retryable refusal is retried within
        APPLY_BUDGET_S, each recorded; each phase's progress goes to stderr.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa

import autonumber
from autonumber.db import create_engine, dialect_for
from autonumber.errors import AutonumberError
from autonumber.progress import NullReporter
from autonumber.setup.apply import apply
from autonumber.setup.generate import load_spec

OBJECT = "Case"
FIELD = "CaseNumber"
CALL_BUDGET_S = 60.0
"""A single insert that takes longer than this counts as a hang."""


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"


def insert(url: str, strategy: str, threads: int, count: int, retries: int) -> dict[str, Any]:
    platform = autonumber.connect(url, strategy=strategy, max_retries=retries)
    numbers: list[str] = []
    errors: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(threads)

    def run(t: int) -> None:
        start.wait()
        for i in range(count):
            try:
                rec = platform.records.insert(OBJECT, {"Subject": f"t{t}-{i}"})
            except (AutonumberError, sa.exc.DBAPIError) as exc:
                with lock:
                    errors.append(_error_text(exc))
                continue
            with lock:
                numbers.append(str(rec[FIELD]))

    began = time.perf_counter()
    pool = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    elapsed = time.perf_counter() - began
    platform.close()
    return {"numbers": numbers, "errors": errors, "seconds": elapsed}


def insert_until(url: str, strategy: str, threads: int, retries: int, stop_file: str) -> dict[str, Any]:
    """Insert until the stop file appears; a call that errs is recorded with its duration."""
    platform = autonumber.connect(
        url, strategy=strategy, max_retries=retries, pool_size=threads, reservation_pool_size=threads
    )
    numbers: list[tuple[float, str]] = []
    errors: list[tuple[float, float, str]] = []
    lock = threading.Lock()
    Path(f"{stop_file}.ready-{os.getpid()}").touch()  # connected: the test may start its clock
    got = Path(f"{stop_file}.got-{os.getpid()}")

    def run(t: int) -> None:
        i = 0
        while not os.path.exists(stop_file):
            i += 1
            began, clock = time.time(), time.monotonic()
            try:
                rec = platform.records.insert(OBJECT, {"Subject": f"k{t}-{i}"})
            except (AutonumberError, sa.exc.DBAPIError) as exc:
                took = time.monotonic() - clock
                with lock:
                    errors.append((began, took, _error_text(exc)))
                time.sleep(0.2)  # a caller backs off before trying again
                continue
            with lock:
                at = time.time()
                numbers.append((at, str(rec[FIELD])))
                got.touch()
                os.utime(got, (at, at))  # mtime = the number's own time stamp

    pool = [threading.Thread(target=run, args=(t,), daemon=True) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join(timeout=CALL_BUDGET_S * 2)
    hung = sum(th.is_alive() for th in pool)
    if not hung:
        platform.close()
    return {"numbers": numbers, "errors": errors, "hung_threads": hung}


APPLY_BUDGET_S = 120.0
"""How long one node's caller keeps retrying the setup; below finish_workers' 150 s, so a slow
cluster fails with this caller's own account of its attempts instead of a bare kill."""
APPLY_LOCK_WAIT_S = 60.0
"""How long one attempt waits for the setup lease that another node's apply holds (the product's
default is 600 s: a waiting apply would outlive the test)."""


class _StderrReporter(NullReporter):
    """Each phase's progress on stderr with the time since the caller started, for the failure text."""

    def __init__(self, began: float) -> None:
        self.began = began

    def note(self, message: str) -> None:
        print(f"{time.perf_counter() - self.began:7.1f}s {message}", file=sys.stderr, flush=True)


def apply_setup(url: str) -> dict[str, Any]:
    """Run the setup until it succeeds, retrying a clear, retryable refusal within APPLY_BUDGET_S."""
    engine = create_engine(url, pool_size=2)
    refusals: list[str] = []
    ok = False
    began = time.perf_counter()
    reporter = _StderrReporter(began)
    try:
        while not ok and time.perf_counter() - began < APPLY_BUDGET_S:
            try:
                apply(engine, load_spec(), reporter=reporter, lock_timeout=APPLY_LOCK_WAIT_S)
            except AutonumberError as exc:
                refusals.append(_error_text(exc))
            except sa.exc.DBAPIError as exc:
                if not dialect_for(engine).is_retryable(exc):
                    raise
                refusals.append(_error_text(exc))
            else:
                ok = True
                break
            reporter.note(f"refused: {refusals[-1]}")
            time.sleep(0.5)
    finally:
        engine.dispose()
    return {"ok": ok, "refusals": refusals, "seconds": time.perf_counter() - began}


def main(argv: list[str]) -> int:
    command, args = argv[0], argv[1:]
    if command == "insert":
        out = insert(args[0], args[1], int(args[2]), int(args[3]), int(args[4]))
    elif command == "insert-until":
        out = insert_until(args[0], args[1], int(args[2]), int(args[3]), args[4])
    elif command == "apply":
        out = apply_setup(args[0])
    else:
        print(f"unknown command {command!r}", file=sys.stderr)
        return 2
    json.dump(out, sys.stdout)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
