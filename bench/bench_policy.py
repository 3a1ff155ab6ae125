"""Numbering policies side by side, every ratio from one run on one machine.

1. `gapless` vs django-sequences: `Records.insert` of a Case whose CaseNumber is gapless (number
   taken in the caller's transaction, counter row locked until COMMIT) against django-sequences'
   `get_next_value` + INSERT inside `transaction.atomic()` — the same approach. Target ≥ 1.0×.
2. The reservation journal's cost on the hot path: `Records.insert` with the default strategy,
   journal on vs journal off. Target: journal-on ≥ 0.95× journal-off at 100 callers.

The contestants are measured in alternating rounds (A B A B …) at each caller count and the median
of the rounds is kept, so a burst of load from elsewhere on the machine hits both sides.

Run: .venv/bin/python bench/bench_policy.py [--quick] [--rounds 3] --db sqlite:///bench/results/policy.db \
        --db mysql+pymysql://root@127.0.0.1/autonumber_t18_bench \
        --db postgresql+psycopg://postgres@127.0.0.1/autonumber_t18_bench
Every server --db is recreated (its name must contain "bench").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from autonumber.db import create_engine, mask
from autonumber.db.tables import reservation_journal
from autonumber.rules.store import RuleSpec, apply_rules
from autonumber.runtime import DEFAULT_STRATEGY

if not __package__:  # run as a file: import the `bench` package from the repository root
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench import django_peer
from bench.contestants import HOT_FIELD, Contestant, EngineContestant
from bench.database import backend_of, recreate
from bench.harness import run_cell

RESULTS = Path(__file__).resolve().parent / "results"
CALLERS = (1, 8, 100)
GAPLESS = RuleSpec("Case", "CaseNumber", "{00000000}", numbering="gapless")


def gapless_contestant(url: str) -> Contestant:
    """Records.insert on Case with CaseNumber made gapless (the rule is stored like `field set`)."""
    c = EngineContestant(url, DEFAULT_STRATEGY, records=True)
    with c.platform.begin() as conn:
        apply_rules(conn, [GAPLESS])
    c.platform.catalog.refresh()
    assert c.platform.catalog.current().rule(HOT_FIELD).gapless
    c.name = "records:gapless"
    return c


def standard_contestant(url: str, *, journal: bool) -> Contestant:
    """Records.insert on the standard CaseNumber, with or without the journal line."""
    c = EngineContestant(url, DEFAULT_STRATEGY, records=True)
    c.platform.engine.reserver.journal.enabled = journal
    c.name = f"records:{DEFAULT_STRATEGY}:{'journal' if journal else 'no-journal'}"
    return c


def _cell(c: Contestant, callers: int, seconds: float, warmup: float) -> dict[str, Any]:
    c.begin_cell()
    op = c.op_for(callers)
    cell = run_cell(op, callers, seconds, warmup, c.thread_done)
    c.end_cell()
    return cell.as_dict()


def duel(
    makers: Sequence[tuple[str, Callable[[], Contestant]]],
    callers: Sequence[int],
    rounds: int,
    seconds: float,
    warmup: float,
    log: Callable[[str], None],
) -> dict[str, Any]:
    """Each contestant at each caller count, in alternating rounds; medians and the raw rounds."""
    opened = [(name, make()) for name, make in makers]
    out: dict[str, Any] = {name: {} for name, _ in opened}
    try:
        for n in callers:
            runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in opened}
            for r in range(rounds):
                order = opened if r % 2 == 0 else list(reversed(opened))
                for name, c in order:
                    row = _cell(c, n, seconds, warmup)
                    runs[name].append(row)
                    out[name]["handed_out"] = out[name].get("handed_out", 0) + row["values"]
                    log(
                        f"    {name:<32} {n:>3} callers  round {r + 1}: {row['throughput']:>8.0f}/s  "
                        f"p99 {row['p99_ms']:>8.2f} ms  unique={row['unique']}"
                    )
            for name, rows in runs.items():
                out[name][str(n)] = {
                    "throughput": round(statistics.median(r["throughput"] for r in rows), 1),
                    "p99_ms": round(statistics.median(r["p99_ms"] for r in rows), 3),
                    "unique": all(r["unique"] for r in rows),
                    "errors": sum(r["errors"] for r in rows),
                    "rounds": [r["throughput"] for r in rows],
                }
        for name, c in opened:
            out[name]["verify"] = c.verify()
    finally:
        for _, c in opened:
            c.close()
    return out


def ratios(result: dict[str, Any], a: str, b: str, callers: Sequence[int]) -> dict[str, float]:
    """a/b throughput at each caller count."""
    return {
        str(n): round(result[a][str(n)]["throughput"] / max(result[b][str(n)]["throughput"], 1e-9), 3)
        for n in callers
    }


def journal_lines(url: str) -> int:
    """How many journal lines the database holds."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(reservation_journal)).scalar_one())
    finally:
        engine.dispose()


def run_backend(
    url: str,
    callers: Sequence[int],
    rounds: int,
    seconds: float,
    warmup: float,
    log: Callable[[str], None],
    only: str = "",
) -> dict[str, Any]:
    """Both comparisons on one backend (its database recreated before each)."""
    backend = backend_of(url)
    out: dict[str, Any] = {"url": mask(url)}
    skip = django_peer.available() if only != "journal" else "not asked for (--only journal)"
    if only == "gapless" or skip is None:
        recreate(url)
        log(f"  {backend}: gapless vs django-sequences")
        duel_1 = duel(
            [
                ("records:gapless", lambda: gapless_contestant(url)),
                ("peer:django-sequences", lambda: django_peer.DjangoSequences(url, f"policy_{backend}")),
            ],
            callers,
            rounds,
            seconds,
            warmup,
            log,
        )
        out["gapless_vs_django"] = {
            "cells": duel_1,
            "ratio": ratios(duel_1, "records:gapless", "peer:django-sequences", callers),
        }
        log(f"  {backend}: gapless / django-sequences = {out['gapless_vs_django']['ratio']}")
    else:
        out["gapless_vs_django"] = {"skipped": skip}
    if only == "gapless":
        return out
    recreate(url)
    log(f"  {backend}: journal on vs off")
    on, off = (f"records:{DEFAULT_STRATEGY}:journal", f"records:{DEFAULT_STRATEGY}:no-journal")
    duel_2 = duel(
        [
            (on, lambda: standard_contestant(url, journal=True)),
            (off, lambda: standard_contestant(url, journal=False)),
        ],
        callers,
        rounds,
        seconds,
        warmup,
        log,
    )
    lines = journal_lines(url)
    out["journal_cost"] = {
        "cells": duel_2,
        "ratio": ratios(duel_2, on, off, callers),
        "journal_lines": lines,
        "lines_per_number": round(lines / max(duel_2[on]["handed_out"], 1), 4),
    }
    log(
        f"  {backend}: journal on / off = {out['journal_cost']['ratio']}; {lines} journal line(s) for "
        f"{duel_2[on]['handed_out']} numbers handed out with it on"
    )
    return out


def run(
    urls: dict[str, str],
    quick: bool = False,
    rounds: int = 0,
    callers: Sequence[int] = CALLERS,
    only: str = "",
) -> dict[str, Any]:
    """Every backend; the result document (also written to bench/results/)."""
    seconds, warmup = (0.8, 0.2) if quick else (3.0, 0.5)
    rounds = rounds or (2 if quick else 3)
    doc: dict[str, Any] = {
        "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "cell_seconds": seconds,
        "rounds": rounds,
        "callers": list(callers),
        "strategy": DEFAULT_STRATEGY,
        "nproc": os.cpu_count(),
        "load_average_start": [round(x, 2) for x in os.getloadavg()],
        "backends": {},
    }
    started = time.perf_counter()
    for backend, url in urls.items():
        print(f"{backend}: {mask(url)}", flush=True)
        doc["backends"][backend] = run_backend(
            url, callers, rounds, seconds, warmup, lambda s: print(s, flush=True), only
        )
    doc["seconds"] = round(time.perf_counter() - started, 1)
    doc["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"policy-{doc['timestamp'].replace(':', '')}.json"
    path.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {path}")
    return doc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", action="append", required=True, help="database URL; repeat per backend")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=0)
    parser.add_argument("--callers", type=int, nargs="*", default=list(CALLERS))
    parser.add_argument("--only", choices=("gapless", "journal"), default="")
    args = parser.parse_args()
    urls = {backend_of(u): u for u in args.db}
    run(urls, args.quick, args.rounds, args.callers, args.only)


if __name__ == "__main__":
    main()
