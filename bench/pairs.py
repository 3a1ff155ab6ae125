"""records.insert ÷ the native INSERT, measured in alternating rounds (one and few callers).

    .venv/bin/python -m bench.pairs -b postgresql --callers 1 --callers 8 --rounds 5

Each round measures `records.insert` and then `peer:native-insert` (bench/job.py) for `--seconds`
after `--warmup`, at each caller count, on a database recreated once per backend; the two sides
alternate so a change in the machine's load falls on both. Prints every round and the median ratio,
and writes bench/results/pairs-<time>.json. The databases' names must contain 'bench'.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from .cli import DEFAULT_URLS
from .contestants import measure
from .database import recreate
from .job import create_native_table, make

SIDES = ("records.insert", "peer:native-insert")


def run_pairs(
    url: str, backend: str, callers: list[int], rounds: int, seconds: float, warmup: float
) -> dict[str, Any]:
    """`rounds` alternating measurements of both sides at each caller count; rates and ratios."""
    recreate(url)
    create_native_table(url)
    contestants = {name: make(name, url, backend) for name in SIDES}
    out: dict[str, Any] = {"backend": backend, "url": url, "cells": {}}
    try:
        for n in callers:
            cell: dict[str, list[float]] = {name: [] for name in SIDES}
            for k in range(rounds):
                for name, contestant in contestants.items():
                    result = measure(contestant, n, seconds, warmup)
                    if result.errors or result.duplicates or not result.ops:
                        raise RuntimeError(
                            f"{name} at {n} callers: {result.errors} errors, {result.duplicates} "
                            f"duplicates, {result.ops} calls in {seconds:g} s (lengthen --seconds)"
                        )
                    cell[name].append(round(result.throughput, 1))
                ours, peer = cell[SIDES[0]][-1], cell[SIDES[1]][-1]
                ratio = ours / peer
                load = os.getloadavg()[0]
                head = f"{backend} 1×{n} round {k + 1}"
                print(f"{head}: {ours:,.0f}/s ÷ {peer:,.0f}/s = {ratio:.2f}×, load {load:.1f}")
            ratios = [a / b for a, b in zip(cell[SIDES[0]], cell[SIDES[1]], strict=True)]
            out["cells"][str(n)] = {
                **cell,
                "ratios": [round(r, 3) for r in ratios],
                "median_ratio": round(statistics.median(ratios), 3),
            }
            print(f"{backend} 1×{n}: median records.insert ÷ native INSERT {statistics.median(ratios):.2f}×")
    finally:
        for contestant in contestants.values():
            contestant.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "-b", "--backend", action="append", choices=sorted(DEFAULT_URLS), help="repeat it; default: all three"
    )
    parser.add_argument("--callers", type=int, action="append", help="repeat it; default 1 and 8")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--warmup", type=float, default=0.5)
    parser.add_argument("--results", type=Path, default=Path("bench/results"))
    args = parser.parse_args()
    started = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    doc: dict[str, Any] = {
        "timestamp": started,
        "load_start": os.getloadavg(),
        "rounds": args.rounds,
        "seconds": args.seconds,
        "runs": [],
    }
    for backend in args.backend or sorted(DEFAULT_URLS):
        doc["runs"].append(
            run_pairs(
                DEFAULT_URLS[backend], backend, args.callers or [1, 8], args.rounds, args.seconds, args.warmup
            )
        )
    doc["load_end"] = os.getloadavg()
    args.results.mkdir(parents=True, exist_ok=True)
    path = args.results / f"pairs-{started}.json"
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    print(f"results: {path}")


if __name__ == "__main__":
    main()
