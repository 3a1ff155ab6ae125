"""Rendering throughput on one core: compiled Format.render vs a hand-written f-string.

Run: .venv/bin/python bench/bench_render.py [--quick]
Target: >= 500,000 values/s for IBG-B-{YYYY}{MM}{DD}-{000000}, within 1.5x of the f-string.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from autonumber.format import parse_format

TARGET_PER_S = 500_000
TARGET_RATIO = 1.5
RESULTS = Path(__file__).resolve().parent / "results"
AT = datetime(2026, 4, 17, 9, 30, tzinfo=UTC)
CROSS = {"Account.BillingCountryCode": "SG"}


def _ibg(counter: int, d: datetime, cross: Mapping[str, str] | None = None) -> str:
    return f"IBG-B-{d.year:04d}{d.month:02d}{d.day:02d}-{counter:06d}"


def _compound(counter: int, d: datetime, cross: Mapping[str, str] | None = None) -> str:
    assert cross is not None
    code = cross["Account.BillingCountryCode"]
    return f"{code}-CSA-{d.year % 100:02d}{d.month:02d}{d.day:02d}-{counter:06d}"


CASES: list[tuple[str, Callable[..., str], Mapping[str, str] | None]] = [
    ("IBG-B-{YYYY}{MM}{DD}-{000000}", _ibg, None),
    ("{Account.BillingCountryCode}-CSA-{YY}{MM}{DD}-{000000}", _compound, CROSS),
]


def _time(fn: Callable[..., str], n: int, cross: Mapping[str, str] | None) -> float:
    """Seconds for n calls fn(counter, AT, cross), the loop as the only overhead."""
    at = AT
    start = time.perf_counter()
    for i in range(n):
        fn(i, at, cross)
    return time.perf_counter() - start


def _machine() -> dict[str, Any]:
    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            model = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), "")
    except OSError:
        pass
    return {
        "nproc": os.cpu_count(),
        "cpu": model or platform.processor(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
    }


def run(quick: bool = False) -> dict[str, Any]:
    """Measure every case (best of several interleaved repeats) and return the result document."""
    n, repeats = (100_000, 3) if quick else (1_000_000, 7)
    rows = []
    for fmt_text, hand, cross in CASES:
        fmt = parse_format(fmt_text)
        for i in (0, 1, 999_999):  # both paths must produce the same text
            if fmt.render(i, AT, cross) != hand(i, AT, cross):
                raise AssertionError(f"{fmt_text}: renderer and f-string disagree at {i}")
        best_render = best_hand = float("inf")
        for _ in range(repeats):
            best_render = min(best_render, _time(fmt.render, n, cross))
            best_hand = min(best_hand, _time(hand, n, cross))
        render_rate, hand_rate = n / best_render, n / best_hand
        rows.append(
            {
                "format": fmt_text,
                "render_per_s": round(render_rate),
                "fstring_per_s": round(hand_rate),
                "ratio": round(hand_rate / render_rate, 3),
                "meets_target": render_rate >= TARGET_PER_S and hand_rate / render_rate <= TARGET_RATIO,
            }
        )
    return {
        "benchmark": "render",
        "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "quick": quick,
        "n": n,
        "repeats": repeats,
        "targets": {"render_per_s": TARGET_PER_S, "ratio": TARGET_RATIO},
        "machine": _machine(),
        "results": rows,
    }


def table(result: Mapping[str, Any]) -> str:
    """A fixed-width table of a result document."""
    lines = [f"{'format':<58} {'render/s':>11} {'f-string/s':>11} {'ratio':>6}  target"]
    for row in result["results"]:
        lines.append(
            f"{row['format']:<58} {row['render_per_s']:>11,} {row['fstring_per_s']:>11,} "
            f"{row['ratio']:>6.2f}  {'ok' if row['meets_target'] else 'MISSED'}"
        )
    m = result["machine"]
    lines.append(
        f"{m['cpu']}, nproc={m['nproc']}, {m['implementation']} {m['python']}; "
        f"n={result['n']:,} best of {result['repeats']}"
    )
    return "\n".join(lines)


def write(result: Mapping[str, Any], directory: Path = RESULTS) -> Path:
    """Write the result as bench/results/render-<UTC timestamp>.json."""
    directory.mkdir(parents=True, exist_ok=True)
    stamp = str(result["timestamp"]).replace(":", "").replace("-", "")
    path = directory / f"render-{stamp}.json"
    path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="100k values, 3 repeats")
    args = parser.parse_args(argv)
    if hasattr(os, "sched_setaffinity"):  # one core, as the target says
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    result = run(quick=args.quick)
    print(table(result))
    print(f"wrote {write(result)}")
    return 0 if all(r["meets_target"] for r in result["results"]) else 1


if __name__ == "__main__":
    sys.exit(main())
