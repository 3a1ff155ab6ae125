"""records.insert latency with 100 threads in one process: the default connection budget (10
connections, all pools together) against wide pools (72 connections, what one process could open
before the budget), measured in the same run so the ratio means something on a shared machine.

Run: .venv/bin/python bench/bench_budget.py [--backend postgresql|mysql|sqlite] [--url …] [--per-thread N]
The bench DROPS and recreates its database (its name must contain "bench").
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import autonumber

if not __package__:  # run as a file: import the `bench` package from the repository root
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench.database import recreate

RESULTS = Path(__file__).resolve().parent / "results"
THREADS = 100
URLS = {
    "postgresql": "postgresql+psycopg://postgres@127.0.0.1:5432/autonumber_bench",
    "mysql": "mysql+pymysql://root@127.0.0.1:3306/autonumber_bench",
    "sqlite": "sqlite:///bench/results/budget-bench.db",
}
CONFIGS: dict[str, dict[str, Any]] = {
    "budget 10 (default)": {},
    "wide pools (24 + 24 + 24)": {"pool_size": 24, "reservation_pool_size": 24},
}


def measure(url: str, options: dict[str, Any], per_thread: int) -> dict[str, float]:
    """p50/p99/max of records.insert in ms, and throughput, with THREADS threads."""
    recreate(url)
    p = autonumber.connect(url, **options)
    latencies: list[float] = []
    lock = threading.Lock()
    start = threading.Barrier(THREADS)

    def work(i: int) -> None:
        mine = []
        start.wait()
        for k in range(per_thread):
            t0 = time.perf_counter()
            p.records.insert("Case", {"Subject": f"{i}-{k}"})
            mine.append((time.perf_counter() - t0) * 1000)
        with lock:
            latencies.extend(mine)

    try:
        threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
        began = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - began
    finally:
        connections = p.budget.total
        p.close()
    q = statistics.quantiles(latencies, n=100)
    return {
        "connections": connections,
        "inserts": len(latencies),
        "p50_ms": round(q[49], 2),
        "p99_ms": round(q[98], 2),
        "max_ms": round(max(latencies), 2),
        "inserts_per_s": round(len(latencies) / elapsed, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=sorted(URLS), default="postgresql")
    parser.add_argument("--url")
    parser.add_argument("--per-thread", type=int, default=20)
    args = parser.parse_args()
    url = args.url or URLS[args.backend]
    rows = {name: measure(url, options, args.per_thread) for name, options in CONFIGS.items()}
    for name, row in rows.items():
        print(f"{args.backend:10} {name:28} {row}")
    base, wide = rows["budget 10 (default)"], rows["wide pools (24 + 24 + 24)"]
    ratio = round(base["p99_ms"] / wide["p99_ms"], 2)
    print(f"p99 ratio budget/wide: {ratio}")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"budget-{args.backend}.json"
    out.write_text(
        json.dumps(
            {
                "backend": args.backend,
                "threads": THREADS,
                "results": rows,
                "p99_ratio_budget_over_wide": ratio,
                "at": datetime.now(UTC).isoformat(timespec="seconds"),
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
