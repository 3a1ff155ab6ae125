"""Ten years of per_prefix Contract numbers: seed and verify of 4 countries × 9 types × 3,650 days.

Run: .venv/bin/python bench/bench_buckets.py [--days 3650] --db sqlite:////tmp/buckets.db \
        --db mysql+pymysql://root@127.0.0.1/autonumber_bench --db postgresql+psycopg://postgres@127.0.0.1/autonumber_bench
Every --db is a SCRATCH database: all its tables are dropped. One Contract number per key
(131,400 keys at 3,650 days); each measurement runs in a fresh child process so its peak RSS is its
own; the peak Python heap comes from tracemalloc in a second, traced run. Prints the figures and
writes bench/results/buckets-<UTC time>.json.
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

from autonumber.db import create_engine, mask
from autonumber.rules.seed import seed_counters
from autonumber.rules.verify import verify
from autonumber.setup.apply import phase_named, run_phases
from autonumber.setup.dataspec import DataSpec, SpecMeta
from autonumber.setup.generate import default_spec
from autonumber.setup.report import wipe

RESULTS = Path(__file__).resolve().parent / "results"
FIELD = "Contract.Contract_Number__c"
COUNTRIES = ("SG", "US", "DE", "JP")
FIRST = date(2016, 1, 1)
CHUNK = 10_000
PHASES = ("schema", "standard_pack", "formats", "unique_indexes", "record_type_codes")


def _spec() -> DataSpec:
    full = default_spec()
    return DataSpec(
        SpecMeta("data-spec/v1", "bench-buckets", "local", "pending", (), (), ()),
        tuple(o for o in full.objects if o.name in ("Account", "Contract")),
        tuple(r for r in full.rules if r.name == FIELD),
        tuple(rt for rt in full.record_types if rt.object == "Contract"),
        "bench",
    )


def _fill(url: str, days: int) -> tuple[int, float]:
    """One Contract number per (country, type, day); (rows, seconds)."""
    engine = create_engine(url)
    codes = [rt.code for rt in _spec().record_types]
    table = sa.table("Contract", sa.column("Id"), sa.column("Contract_Number__c"))
    values = (
        f"{c}-{code}-{FIRST + timedelta(days=d):%y%m%d}-{1 + (d + i) % 3:02d}"
        for d in range(days)
        for i, code in enumerate(codes)
        for c in COUNTRIES
    )
    began, n, batch = time.perf_counter(), 0, []
    for value in values:
        batch.append({"Id": f"800b{n:010d}", "Contract_Number__c": value})
        n += 1
        if len(batch) == CHUNK:
            with engine.begin() as conn:
                conn.execute(sa.insert(table), batch)
            batch = []
    if batch:
        with engine.begin() as conn:
            conn.execute(sa.insert(table), batch)
    engine.dispose()
    return n, time.perf_counter() - began


def measure(url: str, what: str) -> dict[str, Any]:
    """In a fresh process: time one seed (scan + write every key) or one verify, then its heap."""
    engine = create_engine(url)

    def run() -> Any:
        return seed_counters(engine, force=True) if what == "seed" else verify(engine)

    began = time.perf_counter()
    out = run()
    seconds = time.perf_counter() - began
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    tracemalloc.start()
    run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    engine.dispose()
    result = {
        "seconds": round(seconds, 2),
        "peak_rss_mb": round(rss_mb, 1),
        "peak_heap_mb": round(peak / 2**20, 1),
    }
    if what == "seed":
        result["counter_rows"] = sum(1 for r in out.rows if r.field_id == FIELD)
    else:
        result["violations"] = len(out)
    return result


def _child(url: str, what: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--measure", what, url], check=True, capture_output=True, text=True
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def bench_backend(url: str, days: int) -> dict[str, Any]:
    """Wipe, configure the field, fill one value per key, then measure a seed and a verify."""
    engine = create_engine(url)
    wipe(engine)
    run_phases(engine, _spec(), [phase_named(p) for p in PHASES])
    backend = engine.dialect.name
    engine.dispose()
    rows, fill_s = _fill(url, days)
    seed = _child(url, "seed")
    check = _child(url, "verify")
    print(
        f"  {backend}: {rows:,} keys; seed {seed['seconds']} s (peak heap {seed['peak_heap_mb']} MB, "
        f"RSS {seed['peak_rss_mb']} MB); verify {check['seconds']} s (peak heap "
        f"{check['peak_heap_mb']} MB, RSS {check['peak_rss_mb']} MB), {check['violations']} violation(s)",
        flush=True,
    )
    return {
        "backend": backend,
        "url": mask(url),
        "keys": rows,
        "fill_seconds": round(fill_s, 1),
        "seed": seed,
        "verify": check,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=3650, help="days of Contract numbers (3650)")
    parser.add_argument("--db", action="append", default=[], help="a SCRATCH database URL (repeatable)")
    parser.add_argument("--measure", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure[1], args.measure[0])))
        return
    if not args.db:
        parser.error("give at least one --db SCRATCH_URL (it is wiped)")
    doc = {
        "benchmark": "per_prefix buckets: seed and verify",
        "field": FIELD,
        "days": args.days,
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "backends": [bench_backend(url, args.days) for url in args.db],
    }
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"buckets-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
