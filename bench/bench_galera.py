"""Galera scale-out: throughput and p99 of `records.insert` per strategy, one node vs three nodes.

Three caller processes × THREADS threads insert `Case` records (one global `{00000000}` counter,
the hottest case). Each variant — a strategy with `single` allocation, and `combining` with
`blocks:N` allocation (`--block N`, default 100; docs/engine.md) — runs against three targets in the
same run:

- `single`: the machine's own MariaDB (127.0.0.1:3306, database autonumber_h9), every caller on it;
- `galera-1node`: the three-node cluster, every caller on node 1;
- `galera-3nodes`: the cluster, caller process i on node i (conflicts surface at COMMIT as 1213).

Run: .venv/bin/python bench/bench_galera.py [--quick] [--combining-only] [--block N]
(single server: $AUTONUMBER_GALERA_BENCH_SINGLE_URL; the cluster's network mode and the load average
before and after are recorded, since the machine is shared: compare ratios within one run)
Writes bench/results/galera-<timestamp>.json and prints a Markdown table. Brings the cluster up
when it is not running (and down again afterwards); wipes autonumber_h9 and the cluster's
autonumber_test database. Callers use max_retries=20 (docs/compatibility.md: size the retry budget
for the number of nodes writing one counter); calls that still fail are counted, never hidden.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import sqlalchemy as sa

from autonumber.engine import STRATEGIES, Strategy

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # tests/galera_cluster.py drives scripts/galera-cluster.sh

import galera_cluster  # noqa: E402

SINGLE_URL = os.environ.get(
    "AUTONUMBER_GALERA_BENCH_SINGLE_URL", "mysql+pymysql://root@127.0.0.1:3306/autonumber_h9"
)
PROCESSES = 3
RETRIES = 20
FULL = {"threads": 4, "per_thread": 200}
QUICK = {"threads": 2, "per_thread": 25}


# ------------------------------------------------------------------------------------ caller process
def _worker(url: str, strategy: Strategy, threads: int, count: int, start_at: float) -> dict[str, Any]:
    """One caller process: `threads` × `count` inserts; latency of each, errors counted."""
    import autonumber
    from autonumber.errors import AutonumberError

    p = autonumber.connect(
        url, strategy=strategy, max_retries=RETRIES, pool_size=threads, reservation_pool_size=threads
    )
    p.records.insert("Case", {"Subject": "warm-up"})  # pools and catalog warm before the clock
    lat: list[float] = []
    numbers: list[str] = []
    errors: list[str] = []
    lock = threading.Lock()

    def run() -> None:
        mine: list[float] = []
        got: list[str] = []
        bad: list[str] = []
        for _ in range(count):
            t = time.perf_counter()
            try:
                rec = p.records.insert("Case", {"Subject": "bench"})
            except (AutonumberError, sa.exc.DBAPIError) as exc:
                bad.append(type(exc).__name__)
                continue
            mine.append(time.perf_counter() - t)
            got.append(str(rec["CaseNumber"]))
        with lock:
            lat.extend(mine)
            numbers.extend(got)
            errors.extend(bad)

    time.sleep(max(0.0, start_at - time.time()))  # every process starts together
    began = time.time()
    pool = [threading.Thread(target=run) for _ in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    ended = time.time()
    p.close()
    return {"began": began, "ended": ended, "latencies": lat, "numbers": numbers, "errors": errors}


# ------------------------------------------------------------------------------------ orchestration
def _prepare(url: str, allocation: str = "single") -> None:
    """Empty the database (creating it on the single server when missing), bootstrap the core pack,
    and give Case.CaseNumber the allocation."""
    from autonumber.db import create_engine
    from autonumber.setup.bootstrap import bootstrap

    parsed = sa.engine.make_url(url)
    admin = sa.create_engine(parsed._replace(database=None), poolclass=sa.pool.NullPool)
    try:
        with admin.connect() as raw:
            conn = raw.execution_options(isolation_level="AUTOCOMMIT")
            conn.execute(sa.text(f"CREATE DATABASE IF NOT EXISTS `{parsed.database}`"))
            names = [
                r[0]
                for r in conn.execute(
                    sa.text("SELECT table_name FROM information_schema.tables WHERE table_schema = :s"),
                    {"s": parsed.database},
                )
            ]
            conn.execute(sa.text("SET FOREIGN_KEY_CHECKS=0"))
            for name in names:
                conn.execute(sa.text(f"DROP TABLE IF EXISTS `{parsed.database}`.`{name}`"))
            conn.execute(sa.text("SET FOREIGN_KEY_CHECKS=1"))
    finally:
        admin.dispose()
    engine = create_engine(url, pool_size=2)
    try:
        bootstrap(engine)
    finally:
        engine.dispose()
    if allocation != "single":
        from autonumber.commands.fields import set_field
        from autonumber.rules import RuleEdit

        set_field(url, RuleEdit("Case", "CaseNumber", format="{00000000}", allocation=allocation))


WSREP = (
    "wsrep_local_cert_failures",
    "wsrep_local_bf_aborts",
    "wsrep_flow_control_paused_ns",
    "wsrep_flow_control_sent",
    "wsrep_replicated",
    "wsrep_received",
)
"""The Galera counters whose change over a cell says what held it back: certification failures and
brute-force aborts (lost races the callers retried), time paused by flow control, writesets."""


def wsrep_counters(urls: list[str]) -> dict[str, dict[str, int]]:
    """WSREP's current values on each of these nodes (none for a server without Galera)."""
    out: dict[str, dict[str, int]] = {}
    for url in urls:
        engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
        try:
            with engine.connect() as conn:
                rows = conn.execute(sa.text("SHOW GLOBAL STATUS LIKE 'wsrep_%'")).all()
        finally:
            engine.dispose()
        values = {str(name).lower(): str(value) for name, value in rows}
        out[url] = {k: int(values[k]) for k in WSREP if values.get(k, "").isdigit()}
    return out


def _delta(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]) -> dict[str, int]:
    """Each counter's change over the cell, summed over the nodes."""
    return {k: sum(after[u].get(k, 0) - before[u].get(k, 0) for u in before) for k in WSREP}


def _p(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def measure(urls: list[str], strategy: Strategy, threads: int, per_thread: int) -> dict[str, Any]:
    """Run PROCESSES caller processes (process i on urls[i]) and summarise them."""
    start_at = time.time() + 6.0  # room for the processes to import and warm up
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "_worker",
                url,
                strategy,
                str(threads),
                str(per_thread),
                str(start_at),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        for url in urls
    ]
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=900)
        if proc.returncode != 0:
            raise RuntimeError(f"bench caller failed:\n{err[-3000:]}")
        reports.append(json.loads(out))
    lat = sorted(x for r in reports for x in r["latencies"])
    numbers = [n for r in reports for n in r["numbers"]]
    errors = [e for r in reports for e in r["errors"]]
    if len(numbers) != len(set(numbers)):
        raise AssertionError(f"{strategy} on {urls}: a number was handed out twice")
    wall = max(r["ended"] for r in reports) - min(r["began"] for r in reports)
    return {
        "strategy": strategy,
        "calls": PROCESSES * threads * per_thread,
        "numbers": len(numbers),
        "errors": len(errors),
        "error_types": sorted(set(errors)),
        "seconds": round(wall, 3),
        "throughput_per_s": round(len(numbers) / wall, 1) if wall > 0 else None,
        "p50_ms": round(_p(lat, 0.50) * 1000, 2),
        "p99_ms": round(_p(lat, 0.99) * 1000, 2),
        "max_ms": round(lat[-1] * 1000, 2) if lat else None,
    }


def variants(combining_only: bool, block: int) -> list[tuple[Strategy, str]]:
    """(strategy, allocation) pairs to measure: every strategy single (or only combining), then blocks."""
    singles = [s for s in STRATEGIES if s == "combining" or not combining_only]
    return [(s, "single") for s in singles] + [("combining", f"blocks:{block}")]


def run(quick: bool, combining_only: bool = False, block: int = 100) -> dict[str, Any]:
    """Measure every variant on the three targets; write bench/results/galera-<ts>.json."""
    shape = QUICK if quick else FULL
    load_before = os.getloadavg()
    started_cluster = not galera_cluster.is_up()
    if started_cluster:
        galera_cluster.up()
    nodes = galera_cluster.node_urls()
    targets = {
        "single": [SINGLE_URL] * PROCESSES,
        "galera-1node": [nodes[0]] * PROCESSES,
        "galera-3nodes": nodes[:PROCESSES],
    }
    mode = galera_cluster.mode()
    rows: list[dict[str, Any]] = []
    try:
        for strategy, allocation in variants(combining_only, block):
            for target, urls in targets.items():
                _prepare(urls[0], allocation)
                watched = nodes if target.startswith("galera") else []
                before = wsrep_counters(watched)
                row = measure(urls, strategy, shape["threads"], shape["per_thread"])
                if watched:
                    row["wsrep"] = _delta(before, wsrep_counters(watched))
                row["target"] = target
                row["allocation"] = allocation
                rows.append(row)
                print(_line(row), file=sys.stderr, flush=True)
    finally:
        if started_cluster:
            galera_cluster.down()
    doc = {
        "bench": "galera",
        "quick": quick,
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "host": platform.node()},
        "shape": {"processes": PROCESSES, **shape, "max_retries": RETRIES},
        "single_url": sa.engine.make_url(SINGLE_URL).render_as_string(hide_password=True),
        "network_mode": mode,
        "load_average": {"before": load_before, "after": os.getloadavg()},
        "note": "one run; the machine is shared (2 cores), numbers are noisy: compare ratios",
        "rows": rows,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path = RESULTS / f"galera-{stamp}.json"
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    doc["path"] = str(path)
    return doc


def _line(row: dict[str, Any]) -> str:
    return (
        f"{row['strategy']:9} {row.get('allocation', 'single'):10} {row['target']:13} "
        f"{row['throughput_per_s']:>8}/s "
        f"p50 {row['p50_ms']:>7} ms  p99 {row['p99_ms']:>8} ms  errors {row['errors']}"
        + (
            "  cert failures {wsrep_local_cert_failures}, bf aborts {wsrep_local_bf_aborts}, "
            "flow control paused {paused:.1f} s, sent {wsrep_flow_control_sent}".format(
                paused=row["wsrep"]["wsrep_flow_control_paused_ns"] / 1e9, **row["wsrep"]
            )
            if "wsrep" in row
            else ""
        )
    )


def table(doc: dict[str, Any]) -> str:
    """The Markdown table of docs/galera.md."""
    by = {(r["strategy"], r.get("allocation", "single"), r["target"]): r for r in doc["rows"]}
    out = [
        "| strategy, allocation | single MariaDB: numbers/s | p99 ms | Galera, all on node 1: numbers/s "
        "| p99 ms | Galera, spread over 3 nodes: numbers/s | p99 ms | spread ÷ single | spread ÷ node 1 "
        "| failed calls (1 / 3 nodes) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s, alloc in dict.fromkeys((r["strategy"], r.get("allocation", "single")) for r in doc["rows"]):
        a, b, c = (by[(s, alloc, t)] for t in ("single", "galera-1node", "galera-3nodes"))
        out.append(
            f"| {s}, {alloc} | {a['throughput_per_s']:,.0f} | {a['p99_ms']:.1f} "
            f"| {b['throughput_per_s']:,.0f} "
            f"| {b['p99_ms']:.1f} | {c['throughput_per_s']:,.0f} | {c['p99_ms']:.1f} "
            f"| {c['throughput_per_s'] / a['throughput_per_s']:.2f}× "
            f"| {c['throughput_per_s'] / b['throughput_per_s']:.2f}× | {b['errors']} / {c['errors']} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "_worker":
        url, strategy, threads, count, start_at = args[1:6]
        report = _worker(url, cast(Strategy, strategy), int(threads), int(count), float(start_at))
        json.dump(report, sys.stdout)
        return 0
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few calls per caller (harness check)")
    parser.add_argument("--combining-only", action="store_true", help="skip the cas and atomic strategies")
    parser.add_argument("--block", type=int, default=100, help="N of the blocks:N variant (default 100)")
    opts = parser.parse_args(args)
    doc = run(opts.quick, opts.combining_only, opts.block)
    print(table(doc))
    print(f"\nwritten to {doc['path']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
