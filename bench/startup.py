"""CLI start-up: the wall time of short `autonumber` commands, each run as a fresh process.

Every command runs once to warm the OS file cache (not counted), then RUNS times; the best and the
median wall times are kept. The target is a median of at most TARGET_SECONDS.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .harness import Log

RUNS = 9
TARGET_SECONDS = 0.15
"""Commands that need no database: Python alone starts in about 0.015 s here, Typer in 0.08 s."""
COMMANDS: tuple[tuple[str, ...], ...] = (
    ("--help",),
    ("--version",),
    ("format", "check", "{YYYY}-{0000}"),
    ("format", "preview", "{YYYY}-{0000}", "--counter", "42"),
    ("field", "show", "--help"),
)


def executable() -> str | None:
    """The `autonumber` console script of this interpreter's environment, else the one on PATH."""
    beside = Path(sys.executable).parent / "autonumber"
    return str(beside) if beside.is_file() else shutil.which("autonumber")


def label(args: Sequence[str]) -> str:
    """The command as a user would type it."""
    return " ".join(["autonumber", *(f"'{a}'" if "{" in a else a for a in args)])


def _wall_time(command: Sequence[str], cwd: str) -> tuple[float, int]:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, timeout=60, check=False)
    return time.perf_counter() - started, done.returncode


def time_command(program: str, args: Sequence[str], runs: int = RUNS) -> dict[str, Any]:
    """One warm-up run, then `runs` timed runs of `program args` in an empty directory."""
    with tempfile.TemporaryDirectory(prefix="autonumber-bench-cli-") as cwd:
        _wall_time([program, *args], cwd)
        timed = [_wall_time([program, *args], cwd) for _ in range(runs)]
    seconds = [s for s, _ in timed]
    failed = [rc for _, rc in timed if rc != 0]
    return {
        "command": label(args),
        "runs": runs,
        "best_s": round(min(seconds), 3),
        "median_s": round(statistics.median(seconds), 3),
        "seconds": [round(s, 3) for s in seconds],
        "errors": len(failed),
        "first_error": f"exit code {failed[0]}" if failed else None,
    }


def run_startup(runs: int = RUNS, log: Log = print) -> dict[str, Any]:
    """Every command of COMMANDS, timed; `skipped` when no `autonumber` script is installed."""
    program = executable()
    if program is None:
        return {"skipped": "the `autonumber` console script is not installed (pip install -e .)"}
    rows = []
    for args in COMMANDS:
        row = time_command(program, args, runs)
        rows.append(row)
        log(
            f"  CLI start-up {row['command']:<40} best {row['best_s']:.3f} s  "
            f"median {row['median_s']:.3f} s" + (f"  errors={row['errors']}" if row["errors"] else "")
        )
    return {"program": program, "runs": runs, "target_s": TARGET_SECONDS, "rows": rows}


def meets_target(row: Mapping[str, Any]) -> bool:
    """Every run succeeded and the median start-up is within the target."""
    return float(row["median_s"]) <= TARGET_SECONDS and not row["errors"]
