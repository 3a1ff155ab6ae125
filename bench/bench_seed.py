"""Counter-seed throughput and memory: seeding Account.Account_ID__c from 100k and 1M live rows.

Run: .venv/bin/python bench/bench_seed.py [--quick] --db mysql+pymysql://root@127.0.0.1/autonumber_h6_bench \
        --db postgresql+psycopg://postgres@127.0.0.1/autonumber_h6_bench
Every --db is a SCRATCH database: all its tables are dropped. Each measurement runs in a fresh child
process (so its peak RSS is its own); peak Python heap comes from tracemalloc in a second scan.
Target: >= 200,000 rows/s, and memory that does not grow with the row count.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import tracemalloc
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from autonumber.catalog.cache import load_snapshot
from autonumber.db import create_engine, mask
from autonumber.rules.scan import scan_rule
from autonumber.rules.seed import seed_counters
from autonumber.setup.apply import phase_named, run_phases
from autonumber.setup.dataspec import DataSpec, SpecMeta
from autonumber.setup.report import wipe
from autonumber.setup.standard import CORE_OBJECTS, CORE_RULES

TARGET_ROWS_PER_S = 200_000
RESULTS = Path(__file__).resolve().parent / "results"
FIELD = "Account.Account_ID__c"
CHUNK = 10_000
SPEC = DataSpec(
    SpecMeta("data-spec/v1", "bench-seed", "local", "pending", (), (), ()),
    tuple(o for o in CORE_OBJECTS if o.name == "Account"),
    tuple(r for r in CORE_RULES if r.name == FIELD),
    (),
    "bench",
)


def _fill(url: str, start: int, stop: int) -> float:
    """Insert Accounts start..stop-1 (values dated over the last years); seconds taken."""
    engine = create_engine(url)
    first_day = date(2020, 1, 1)
    began = time.perf_counter()
    with engine.connect() as conn:
        table = load_snapshot(conn).table("Account")
    for lo in range(start, stop, CHUNK):
        rows = [
            {
                "Id": f"001{i:012d}",
                "Account_ID__c": f"IBG-B-{first_day + timedelta(days=i // 500):%Y%m%d}-{i % 1_000_000:06d}",
            }
            for i in range(lo, min(stop, lo + CHUNK))
        ]
        with engine.begin() as conn:
            conn.execute(sa.insert(table), rows)
    engine.dispose()
    return time.perf_counter() - began


def measure(url: str) -> dict[str, Any]:
    """In a fresh process: time one full seed of the field, then the scan's peak heap."""
    engine = create_engine(url)
    began = time.perf_counter()
    result = seed_counters(engine, force=True)
    seconds = time.perf_counter() - began
    rows = result.scanned[FIELD]
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with engine.connect() as conn:
        snapshot = load_snapshot(conn)
        rule = snapshot.rule(FIELD)
        table = snapshot.table("Account")
        scan_began = time.perf_counter()
        scan_rule(conn, rule, table)
        scan_s = time.perf_counter() - scan_began
        tracemalloc.start()
        scan_rule(conn, rule, table)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    engine.dispose()
    return {
        "rows": rows,
        "seconds": round(seconds, 3),
        "rows_per_s": round(rows / seconds),
        "scan_rows_per_s": round(rows / scan_s),
        "peak_rss_mb": round(rss_mb, 1),
        "peak_heap_mb": round(peak / 2**20, 2),
    }


def _child(url: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--measure", url], check=True, capture_output=True, text=True
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def bench_backend(url: str, sizes: list[int]) -> dict[str, Any]:
    """Wipe, configure the one field, grow the table to each size and measure a seed at each."""
    engine = create_engine(url)
    wipe(engine)
    run_phases(engine, SPEC, [phase_named(p) for p in ("schema", "standard_pack", "formats")])
    backend = engine.dialect.name
    engine.dispose()
    points, have = [], 0
    for size in sizes:
        fill_s = _fill(url, have, size)
        have = size
        point = _child(url)
        point["fill_seconds"] = round(fill_s, 1)
        points.append(point)
        print(
            f"  {backend} {size:>9,} rows: seed {point['rows_per_s']:>9,} rows/s, "
            f"scan {point['scan_rows_per_s']:>9,} rows/s, "
            f"peak heap {point['peak_heap_mb']} MB, peak RSS {point['peak_rss_mb']} MB",
            flush=True,
        )
    small, large = points[0], points[-1]
    return {
        "backend": backend,
        "url": mask(url),
        "points": points,
        "heap_growth": round(large["peak_heap_mb"] / max(small["peak_heap_mb"], 0.01), 2),
        "meets_target": all(p["rows_per_s"] >= TARGET_ROWS_PER_S for p in points),
    }


def run(quick: bool, urls: dict[str, str]) -> dict[str, Any]:
    """Seed benchmark on each named scratch database: 100k vs 1M rows (10k vs 100k with quick)."""
    sizes = [10_000, 100_000] if quick else [100_000, 1_000_000]
    return {
        "benchmark": "seed_counters",
        "field": FIELD,
        "quick": quick,
        "target_rows_per_s": TARGET_ROWS_PER_S,
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "backends": {name: bench_backend(url, sizes) for name, url in urls.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10k vs 100k rows instead of 100k vs 1M")
    parser.add_argument("--db", action="append", default=[], help="a SCRATCH database URL (repeatable)")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure)))
        return
    if not args.db:
        parser.error("give at least one --db SCRATCH_URL (it is wiped)")
    urls = {sa.make_url(u).get_backend_name(): u for u in args.db}
    doc = run(args.quick, urls)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"seed-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
