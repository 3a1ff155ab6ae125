"""Galera scale-out: throughput and p99 of `records.insert` per strategy, one node vs three nodes.

Three caller processes × THREADS threads insert `Case` records (one global `{00000000}` counter,
the hottest case). Each variant — a strategy with `single` allocation, and `combining` with
`blocks:N` allocation (`--block N`, default 100; docs/engine.md) — runs against three targets in the
same run:

- `single`: the machine's own MariaDB (127.0.0.1:3306, database autonumber_h9), every caller on it;
- `galera-1node`: the three-node cluster, every caller on node 1;
- `galera-3nodes`: the cluster, caller process i on node i (conflicts surface at COMMIT as 1213).

The peer, `peer:native-insert`, runs on the same three targets: the bare INSERT of bench/job.py
(the row's number from AUTO_INCREMENT, which Galera interleaves across nodes), one transaction per
row. Spread over three nodes it pays the same certification and the same cores as the product, so
`combining, blocks:N` spread ÷ the peer spread is the scale-out goal (≥ 1.0×).

Run: .venv/bin/python bench/bench_galera.py [--quick] [--combining-only] [--block N] [--docs docs/scaling.md]
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
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import sqlalchemy as sa

from autonumber.engine import STRATEGIES, Strategy

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # tests/galera_cluster.py drives scripts/galera-cluster.sh
sys.path.insert(0, str(ROOT))  # run as a script: the peer comes from the bench package

import galera_cluster  # noqa: E402
from bench import job  # noqa: E402
from bench.docs import replace_block  # noqa: E402

PEER = "peer:native-insert"

SINGLE_URL = os.environ.get(
    "AUTONUMBER_GALERA_BENCH_SINGLE_URL", "mysql+pymysql://root@127.0.0.1:3306/autonumber_h9"
)
PROCESSES = 3
RETRIES = 20
FULL = {"threads": 4, "per_thread": 1000}
"""Per process: 12,000 numbers a cell, about 4 s on the cluster here (node CPU is read in 10-ms ticks)."""
QUICK = {"threads": 2, "per_thread": 25}


# ------------------------------------------------------------------------------------ caller process
def _inserter(url: str, strategy: str, threads: int) -> tuple[Callable[[], str], Callable[[], None]]:
    """One insert of this variant (the product's `records.insert`, or the bare INSERT peer) and
    how to close what it holds; pools and catalog warm before the clock."""
    if strategy == PEER:
        peer = job.NativeInsert(url)
        op = peer.op_for(threads)
        op()
        return lambda: f"{url}#{op()}", peer.close  # AUTO_INCREMENT values are unique per cluster

    import autonumber

    p = autonumber.connect(
        url,
        strategy=cast(Strategy, strategy),
        max_retries=RETRIES,
        pool_size=threads,
        reservation_pool_size=threads,
    )
    p.records.insert("Case", {"Subject": "warm-up"})
    return lambda: str(p.records.insert("Case", {"Subject": "bench"})["CaseNumber"]), p.close


def _worker(url: str, strategy: str, threads: int, count: int, start_at: float) -> dict[str, Any]:
    """One caller process: `threads` × `count` inserts; latency of each, errors counted."""
    from autonumber.errors import AutonumberError

    insert, close = _inserter(url, strategy, threads)
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
                number = insert()
            except (AutonumberError, sa.exc.DBAPIError) as exc:
                bad.append(type(exc).__name__)
                continue
            mine.append(time.perf_counter() - t)
            got.append(number)
        with lock:
            lat.extend(mine)
            numbers.extend(got)
            errors.extend(bad)

    time.sleep(max(0.0, start_at - time.time()))  # every process starts together
    began, cpu = time.time(), time.process_time()
    pool = [threading.Thread(target=run) for _ in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    ended, cpu = time.time(), time.process_time() - cpu
    close()
    return {
        "began": began,
        "ended": ended,
        "cpu_s": cpu,
        "latencies": lat,
        "numbers": numbers,
        "errors": errors,
    }


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
    job.create_native_table(url)
    if allocation not in ("single", "-"):
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


def measure(urls: list[str], strategy: str, threads: int, per_thread: int) -> dict[str, Any]:
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
        "caller_cpu_s": round(sum(r["cpu_s"] for r in reports), 2),
    }


def variants(combining_only: bool, block: int) -> list[tuple[str, str]]:
    """(strategy, allocation) pairs to measure: every strategy single (or only combining), then
    blocks, then the bare INSERT peer (allocation "-")."""
    singles: list[str] = [s for s in STRATEGIES if s == "combining" or not combining_only]
    return [(s, "single") for s in singles] + [("combining", f"blocks:{block}"), (PEER, "-")]


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
                before, cpu = wsrep_counters(watched), galera_cluster.node_cpu_seconds()
                row = measure(urls, strategy, shape["threads"], shape["per_thread"])
                if watched:
                    row["wsrep"] = _delta(before, wsrep_counters(watched))
                    spent = zip(galera_cluster.node_cpu_seconds(), cpu, strict=True)
                    row["node_cpu_s"] = [round(after - was, 2) for after, was in spent]
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
    """The Markdown table of docs/scaling.md."""
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
    peer = by.get((PEER, "-", "galera-3nodes"))
    blocks = [r for (s, alloc, t), r in by.items() if alloc.startswith("blocks:") and t == "galera-3nodes"]
    if peer and blocks:
        ratio = blocks[0]["throughput_per_s"] / peer["throughput_per_s"]
        verdict = "met" if ratio >= 1.0 else "missed"
        out.append(
            f"\nSpread over 3 nodes, combining with {blocks[0]['allocation']} ÷ the bare INSERT: "
            f"**{ratio:.2f}×** (goal ≥ 1.0×, {verdict})"
        )
    return "\n".join(out)


HOSTS = (3, 5, 7)
"""Cluster sizes of the scale-out estimate."""


def estimate(doc: dict[str, Any], cores: int = 2) -> str:
    """What N separate hosts of `cores` cores each would give, from the CPU each node spent here.

    From the run with every caller on node 1: `a` = node 1's CPU seconds per number (it executes
    and certifies), `b` = the other nodes' per number (they apply the writeset). Spread over N
    hosts each node executes 1/N of the numbers and applies the rest, so a CPU-bound cluster gives
    T(N) = cores ÷ (a/N + b·(N−1)/N) numbers/s. Assumes callers on hosts of their own, a network
    that adds latency but no CPU, no flow control and no certification conflicts (true with blocks,
    and for the bare INSERT)."""
    by = {(r["strategy"], r.get("allocation", "single"), r["target"]): r for r in doc["rows"]}
    hosts = " | ".join(f"{n} hosts" for n in HOSTS)
    lines = [
        f"| variant | node 1 CPU ms per number (a) | other nodes' (b) | {hosts} |",
        "|---|---:|---:|" + "---:|" * len(HOSTS),
    ]
    for (strategy, alloc, target), row in by.items():
        if target != "galera-1node" or "node_cpu_s" not in row or not row["numbers"]:
            continue
        if alloc == "single" and strategy != PEER:
            continue  # single allocation conflicts on the counter row: CPU is not its limit
        cpu = row["node_cpu_s"]
        a, b = cpu[0] / row["numbers"], sum(cpu[1:]) / len(cpu[1:]) / row["numbers"]
        if a <= 0 or b <= 0:
            continue
        per_n = [cores / (a / n + b * (n - 1) / n) for n in HOSTS]
        lines.append(
            f"| {strategy}, {alloc} | {a * 1000:.3f} | {b * 1000:.3f} | "
            + " | ".join(f"{t:,.0f}/s" for t in per_n)
            + " |"
        )
    return "\n".join(lines)


GALERA = ("<!-- galera:begin -->", "<!-- galera:end -->")
ESTIMATE = ("<!-- galera-estimate:begin -->", "<!-- galera-estimate:end -->")


def write_docs(doc: dict[str, Any], path: Path) -> None:
    """The run's table and the estimate into `path` (docs/scaling.md) between their markers."""
    load = doc["load_average"]
    shape = doc["shape"]
    measured = "\n".join(
        [
            GALERA[0],
            f"Run of {doc['when']} ({doc['network_mode']} mode; {shape['processes']} processes × "
            f"{shape['threads']} threads × {shape['per_thread']:,} inserts per cell; load average "
            f"{load['before'][0]:.1f} before, {load['after'][0]:.1f} after):",
            "",
            table(doc),
            GALERA[1],
        ]
    )
    text = replace_block(path.read_text(encoding="utf-8"), *GALERA, measured)
    text = replace_block(text, *ESTIMATE, "\n".join([ESTIMATE[0], estimate(doc), ESTIMATE[1]]))
    path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "_worker":
        url, strategy, threads, count, start_at = args[1:6]
        report = _worker(url, strategy, int(threads), int(count), float(start_at))
        json.dump(report, sys.stdout)
        return 0
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few calls per caller (harness check)")
    parser.add_argument("--combining-only", action="store_true", help="skip the cas and atomic strategies")
    parser.add_argument("--block", type=int, default=100, help="N of the blocks:N variant (default 100)")
    parser.add_argument(
        "--docs", type=Path, metavar="FILE", help="write the tables into FILE (docs/scaling.md)"
    )
    opts = parser.parse_args(args)
    doc = run(opts.quick, opts.combining_only, opts.block)
    print(table(doc))
    print()
    print(estimate(doc))
    if opts.docs:
        write_docs(doc, opts.docs)
        print(f"docs: {opts.docs}")
    print(f"\nwritten to {doc['path']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
