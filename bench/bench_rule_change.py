"""What a rule change costs on a large column: `field set` (plan scan + the field's verify scan)
against one bare scan of the same column, and `setup apply`'s formats phase against its seed phase.

Run: .venv/bin/python bench/bench_rule_change.py [--rows 200000] [--db URL ...]
Every --db is a SCRATCH database: all its tables are dropped (default: a temporary SQLite file).
Prints one line per measurement and writes bench/results/rule_change.json. Compare the ratios, not
the absolute times, when the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from autonumber.catalog.cache import load_snapshot
from autonumber.db import create_engine, mask
from autonumber.rules import RuleEdit, set_rule
from autonumber.rules.scan import scan_rule
from autonumber.setup.apply import phase_named, run_phases
from autonumber.setup.dataspec import DataSpec, SpecMeta
from autonumber.setup.report import wipe
from autonumber.setup.standard import CONTRACT_RECORD_TYPES, CORE_OBJECTS, CORE_RULES

RESULTS = Path(__file__).resolve().parent / "results"
CHUNK = 10_000
SPEC = DataSpec(
    SpecMeta("data-spec/v1", "bench-rule-change", "local", "pending", (), (), ()),
    CORE_OBJECTS,
    CORE_RULES,
    CONTRACT_RECORD_TYPES,
    "bench",
)
PACK = ("schema", "standard_pack")
CUTOVER = ("formats", "record_type_codes", "seed_counters")


def fill_cases(url: str, rows: int) -> None:
    """The core pack without rules, then `rows` Cases numbered 1..rows under `{00000000}`."""
    engine = create_engine(url)
    try:
        wipe(engine)
        run_phases(engine, SPEC, [phase_named(p) for p in PACK])
        with engine.connect() as conn:
            case = load_snapshot(conn).table("Case")
        with engine.begin() as conn:
            for start in range(1, rows + 1, CHUNK):
                batch = range(start, min(start + CHUNK, rows + 1))
                conn.execute(sa.insert(case), [{"Id": f"c{n}", "CaseNumber": f"{n:08d}"} for n in batch])
    finally:
        engine.dispose()


def measure(url: str, rows: int) -> dict[str, Any]:
    fill_cases(url, rows)
    engine = create_engine(url)
    try:
        results = run_phases(engine, SPEC, [phase_named(p) for p in CUTOVER])
        phases = {r.name: r.seconds for r in results}
        with engine.connect() as conn:
            snapshot = load_snapshot(conn)
            started = time.perf_counter()
            scan_rule(conn, snapshot.rule("Case.CaseNumber"), snapshot.table("Case"))
            scan = time.perf_counter() - started
        started = time.perf_counter()
        set_rule(engine, RuleEdit("Case", "CaseNumber", format="C-{00000000}"))
        change = time.perf_counter() - started
    finally:
        engine.dispose()
    return {
        "db": mask(url),
        "rows": rows,
        "scan_s": round(scan, 3),
        "field_set_s": round(change, 3),
        "field_set_per_scan": round(change / scan, 2),
        "formats_phase_s": round(phases["formats"], 3),
        "seed_phase_s": round(phases["seed_counters"], 3),
        "formats_per_seed": round(phases["formats"] / phases["seed_counters"], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--db", action="append", default=[])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        urls = args.db or [f"sqlite:///{tmp}/bench_rule_change.db"]
        out = [measure(url, args.rows) for url in urls]
    for row in out:
        print(json.dumps(row))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "rule_change.json").write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
