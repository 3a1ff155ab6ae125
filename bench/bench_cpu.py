"""CPU per call of the hot paths, one caller: what the client process spends (user + system time
from getrusage) on `assign_one`, `records.insert` in a caller transaction, a grouped
`records.insert`, and the native-insert peer, in the same run. Unlike records/s this does not move
with what else the machine is doing, so it shows what a code change costs or saves.

Run: .venv/bin/python bench/bench_cpu.py [--backend postgresql|mysql|sqlite] [--url …] [--calls N]
The bench DROPS and recreates its database (its name must contain "bench").
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

import autonumber

if not __package__:  # run as a file: import the `bench` package from the repository root
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench.database import recreate
from bench.job import JOB_OBJECT, create_native_table

RESULTS = Path(__file__).resolve().parent / "results"
URLS = {
    "postgresql": "postgresql+psycopg://postgres@127.0.0.1:5432/autonumber_bench",
    "mysql": "mysql+pymysql://root@127.0.0.1:3306/autonumber_bench",
    "sqlite": "sqlite:///bench/results/cpu-bench.db",
}
REPEATS = 3


def cpu_ms_per_call(call: Callable[[], object], calls: int) -> float:
    """The least, over REPEATS runs of `calls` calls, of this process's CPU ms per call."""
    for _ in range(max(20, calls // 5)):  # warm-up: pools, statement caches
        call()
    best = float("inf")
    for _ in range(REPEATS):
        before = resource.getrusage(resource.RUSAGE_SELF)
        for _ in range(calls):
            call()
        after = resource.getrusage(resource.RUSAGE_SELF)
        spent = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best = min(best, spent / calls * 1000)
    return round(best, 3)


def measure(url: str, calls: int) -> dict[str, float]:
    """CPU ms per call of each path on a freshly recreated database."""
    recreate(url)
    table = create_native_table(url)
    native = sa.insert(table).values(subject="bench")
    with autonumber.connect(url) as p:
        field = p.catalog.current().rules_of(JOB_OBJECT)[0].field_id
        db = p.db

        def in_caller_txn() -> None:
            with p.begin() as conn:
                p.records.insert(JOB_OBJECT, {"Subject": "bench"}, conn)

        def native_insert() -> None:
            with db.begin() as conn:
                conn.execute(native)

        paths: dict[str, Callable[[], object]] = {
            "assign_one": lambda: p.engine.assign_one(field, {}),
            "records.insert (caller transaction)": in_caller_txn,
            "records.insert (grouped)": lambda: p.records.insert(JOB_OBJECT, {"Subject": "bench"}),
            "peer:native-insert": native_insert,
        }
        return {name: cpu_ms_per_call(call, calls) for name, call in paths.items()}


def run(url: str | None = None, quick: bool = False) -> dict[str, Any]:
    """bench/extras.py entry point: one backend's CPU per call."""
    return measure(url or URLS["postgresql"], 100 if quick else 500)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=sorted(URLS), default="postgresql")
    parser.add_argument("--url")
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args()
    rows = measure(args.url or URLS[args.backend], args.calls)
    peer = rows["peer:native-insert"]
    for name, ms in rows.items():
        print(f"{args.backend:10} {name:38} {ms:7.3f} CPU ms/call  ×{ms / peer:5.2f} the native insert")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"cpu-{args.backend}.json"
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    out.write_text(json.dumps({"measured_at": stamp, "backend": args.backend, "cpu_ms": rows}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
