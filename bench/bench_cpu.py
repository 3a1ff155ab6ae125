"""CPU per call of the hot paths, one caller: what the client process spends (user + system time
from getrusage) on `assign_one`, `records.insert` in a caller transaction, a grouped
`records.insert`, and the native-insert peer, in the same run. Unlike records/s this does not move
with what else the machine is doing, so it shows what a code change costs or saves.

With `--callers N`, the job's caller's-transaction cell instead: N threads, each record inserted
in a transaction that also holds `--work` ms of work, ours with the peer's connections against the
native INSERT, one after the other for `--seconds` each; the process's CPU per record, its share of
one core, and how many callers shared a reservation. Where both fill the core, the ratio of their
rates follows the ratio of their CPU per record.

Run: .venv/bin/python bench/bench_cpu.py [--backend postgresql|mysql|sqlite] [--url …] [--calls N]
     .venv/bin/python bench/bench_cpu.py --backend postgresql --callers 32 --work 2 [--block 100]
The bench DROPS and recreates its database (its name must contain "bench").
"""

from __future__ import annotations

import argparse
import itertools
import json
import resource
import sys
from collections.abc import Callable, Hashable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

import autonumber

if not __package__:  # run as a file: import the `bench` package from the repository root
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench.database import recreate
from bench.harness import Op, run_cell
from bench.job import BLOCK, JOB_OBJECT, PEER_POOL_MAX, NativeInsert, RecordsJob, create_native_table

RESULTS = Path(__file__).resolve().parent / "results"
URLS = {
    "postgresql": "postgresql+psycopg://postgres@127.0.0.1:5432/autonumber_bench",
    "mysql": "mysql+pymysql://root@127.0.0.1:3306/autonumber_bench",
    "sqlite": "sqlite:///bench/results/cpu-bench.db",
}
REPEATS = 3


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def cpu_ms_per_call(call: Callable[[], object], calls: int) -> float:
    """The least, over REPEATS runs of `calls` calls, of this process's CPU ms per call."""
    for _ in range(max(20, calls // 5)):  # warm-up: pools, statement caches
        call()
    best = float("inf")
    for _ in range(REPEATS):
        before = _cpu_seconds()
        for _ in range(calls):
            call()
        best = min(best, (_cpu_seconds() - before) / calls * 1000)
    return round(best, 3)


def measure(url: str, calls: int) -> dict[str, float]:
    """CPU ms per call of each path on a freshly recreated database; the caller's transaction
    also with the field's allocation `blocks:BLOCK` (no reservation per record)."""
    recreate(url)
    table = create_native_table(url)
    native = sa.insert(table).values(subject="bench")
    with autonumber.connect(url) as p:
        field = p.catalog.current().rules_of(JOB_OBJECT)[0].field_id
        db = p.db

        def native_insert() -> None:
            with db.begin() as conn:
                conn.execute(native)

        paths: dict[str, Callable[[], object]] = {
            "assign_one": lambda: p.engine.assign_one(field, {}),
            "records.insert (caller transaction)": _in_caller_txn(p),
            "records.insert (grouped)": lambda: p.records.insert(JOB_OBJECT, {"Subject": "bench"}),
            "peer:native-insert": native_insert,
        }
        rows = {name: cpu_ms_per_call(call, calls) for name, call in paths.items()}
    blocks = RecordsJob(url, block=BLOCK)
    try:
        path = f"records.insert (caller transaction, blocks:{BLOCK})"
        rows[path] = cpu_ms_per_call(_in_caller_txn(blocks.platform), calls)
    finally:
        blocks.close()
    return rows


def _in_caller_txn(p: autonumber.Platform) -> Callable[[], None]:
    def insert() -> None:
        with p.begin() as conn:
            p.records.insert(JOB_OBJECT, {"Subject": "bench"}, conn)

    return insert


def cell_cpu(op: Op, callers: int, seconds: float) -> dict[str, float]:
    """Run `op` from `callers` threads (bench/harness.py) and divide the process's CPU over the
    whole cell, warm-up included, by every call made in it."""
    made = itertools.count()

    def counted() -> Hashable:
        next(made)  # one C call: atomic under Python's lock
        return op()

    before = _cpu_seconds()
    result = run_cell(counted, callers, seconds, warmup=0.5)
    spent = _cpu_seconds() - before
    calls = next(made)
    return {
        "records_per_s": round(result.throughput),
        "cpu_us_per_record": round(spent / calls * 1e6),
        "core_share": round(spent / (seconds + 0.5), 2),
    }


def measure_cell(
    url: str, callers: int, work_ms: float, seconds: float, block: int | None = None
) -> dict[str, dict[str, float]]:
    """The caller's-transaction cell of the job, ours (the peer's connections; `block`: with the
    field's allocation `blocks:N`) and then the peer."""
    recreate(url)
    ours = RecordsJob(url, pool_size=PEER_POOL_MAX, block=block)
    reservations: list[int] = []
    reserve = ours.platform.engine.reserver.reserve_atomic

    def counting(rule: Any, n: int, *args: Any, **kwargs: Any) -> Any:
        reservations.append(n)
        return reserve(rule, n, *args, **kwargs)

    ours.platform.engine.reserver.reserve_atomic = counting  # type: ignore[method-assign]
    try:
        rows = {ours.name: cell_cpu(ours.op_for(callers, work_ms / 1000), callers, seconds)}
        if reservations:  # SQLite numbers a caller's record by its own statements: none to count
            rows[ours.name]["callers_per_reservation"] = round(sum(reservations) / len(reservations), 2)
    finally:
        ours.close()
    peer = NativeInsert(url, pool_max=PEER_POOL_MAX)
    try:
        rows[peer.name] = cell_cpu(peer.op_for(callers, work_ms / 1000), callers, seconds)
    finally:
        peer.close()
    return rows


def run(url: str | None = None, quick: bool = False) -> dict[str, Any]:
    """bench/extras.py entry point: one backend's CPU per call."""
    return measure(url or URLS["postgresql"], 100 if quick else 500)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=sorted(URLS), default="postgresql")
    parser.add_argument("--url")
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--callers", type=int, help="measure the caller's-transaction cell instead")
    parser.add_argument("--work", type=float, default=2.0, help="ms of work in each transaction (cell)")
    parser.add_argument("--seconds", type=float, default=3.0, help="measuring window per side (cell)")
    parser.add_argument("--block", type=int, help="ours with the field's allocation blocks:N (cell)")
    args = parser.parse_args()
    if args.callers:
        cell_main(args)
        return
    rows = measure(args.url or URLS[args.backend], args.calls)
    peer = rows["peer:native-insert"]
    for name, ms in rows.items():
        print(f"{args.backend:10} {name:38} {ms:7.3f} CPU ms/call  ×{ms / peer:5.2f} the native insert")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"cpu-{args.backend}.json"
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    out.write_text(json.dumps({"measured_at": stamp, "backend": args.backend, "cpu_ms": rows}, indent=2))
    print(f"wrote {out}")


def cell_main(args: argparse.Namespace) -> None:
    """Print and write the caller's-transaction cell (`--callers`)."""
    if args.callers < 1 or args.work < 0 or args.seconds <= 0 or (args.block is not None and args.block < 2):
        raise SystemExit(
            "--callers must be at least 1, --work at least 0, --seconds above 0 and --block at least 2"
        )
    rows = measure_cell(args.url or URLS[args.backend], args.callers, args.work, args.seconds, args.block)
    label = f"1×{args.callers} work {args.work:g} ms" + (f" blocks:{args.block}" if args.block else "")
    for name, row in rows.items():
        shared = row.get("callers_per_reservation")
        print(
            f"{args.backend:10} {name:36} {label}: {row['records_per_s']:>6}/s "
            f"{row['cpu_us_per_record']:>5} CPU µs/record, {row['core_share']:.0%} of a core"
            + (f", {shared} callers per reservation" if shared else "")
        )
    RESULTS.mkdir(exist_ok=True)
    blocks = f"-blocks{args.block}" if args.block else ""
    out = RESULTS / f"cpu-cell-{args.backend}-{args.callers}x{args.work:g}ms{blocks}.json"
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    out.write_text(
        json.dumps({"measured_at": stamp, "backend": args.backend, "cell": label, "rows": rows}, indent=2)
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
