"""Where a test run's time went: sums of the phase durations tests/conftest.py recorded.

    AUTONUMBER_TEST_TIMES=/tmp/times.jsonl make test
    .venv/bin/python scripts/test_times.py /tmp/times.jsonl [--top 40]

Prints each xdist worker's busy time and span, the time per backend (the test id's parameter), per
folder and per file, and the slowest tests with their phases summed.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

BACKEND = re.compile(r"\[(?:[^\]]*-)?(sqlite|mysql|postgresql)(?:-[^\]]*)?\]")


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _table(title: str, rows: Iterable[tuple[str, float]], total: float, top: int) -> None:
    print(f"\n{title}")
    for name, seconds in sorted(rows, key=lambda r: -r[1])[:top]:
        print(f"  {seconds:9.1f} s  {100 * seconds / total:5.1f} %  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("times", type=Path, help="the JSON-lines file AUTONUMBER_TEST_TIMES named")
    parser.add_argument("--top", type=int, default=30, help="rows per table")
    args = parser.parse_args()
    lines = _lines(args.times)
    if not lines:
        raise SystemExit(f"{args.times}: no test phases recorded")
    total = sum(float(r["seconds"]) for r in lines)
    phases: dict[str, list[tuple[float, float]]] = defaultdict(list)  # per worker: (start, end)
    per: dict[str, dict[str, float]] = {k: defaultdict(float) for k in ("backend", "folder", "file", "test")}
    for r in lines:
        seconds, test, start = float(r["seconds"]), str(r["test"]), float(r["start"])
        phases[str(r["worker"])].append((start, start + seconds))
        path = test.split("::", 1)[0]
        match = BACKEND.search(test)
        per["backend"][match.group(1) if match else "(none)"] += seconds
        per["folder"][str(Path(path).parent)] += seconds
        per["file"][path] += seconds
        per["test"][test] += seconds
    print(f"{len(per['test'])} tests, {total:.0f} s of test phases in all")
    for worker, spans in sorted(phases.items()):
        busy = sum(end - start for start, end in spans)
        span = max(end for _, end in spans) - min(start for start, _ in spans)
        print(f"  worker {worker}: busy {busy:.0f} s over a span of {span:.0f} s")
    _table("per backend", per["backend"].items(), total, args.top)
    _table("per folder", per["folder"].items(), total, args.top)
    _table("per file", per["file"].items(), total, args.top)
    _table("slowest tests (setup + call + teardown)", per["test"].items(), total, args.top)


if __name__ == "__main__":
    main()
