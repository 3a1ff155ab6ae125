"""CLI start-up: the wall time of short `autonumber` commands, each run as a fresh process.

Every command runs once to warm the OS file cache (not counted), then RUNS times; the best and the
median wall times are kept. The target is a median of at most TARGET_SECONDS for commands that need
no database, DB_TARGET_SECONDS for one that reads a small SQLite database (made before the clock by
`autonumber db init` in the command's empty directory).
"""

from __future__ import annotations

import os
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
DB_TARGET_SECONDS = 0.5
"""A command that reads the database: SQLAlchemy, the driver and the catalog come in too."""
DB = "sqlite:///startup.db"
COMMANDS: tuple[tuple[tuple[str, ...], float], ...] = (
    (("--help",), TARGET_SECONDS),
    (("--version",), TARGET_SECONDS),
    (("format", "check", "{YYYY}-{0000}"), TARGET_SECONDS),
    (("format", "preview", "{YYYY}-{0000}", "--counter", "42"), TARGET_SECONDS),
    (("field", "show", "--help"), TARGET_SECONDS),
    (("field", "list", "--db", DB), DB_TARGET_SECONDS),
)


USER_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
"""The commands run as on a user's machine, where the installed product has its bytecode (pip
compiles it; an editable install writes it on its first start, here the warm-up run). With
PYTHONDONTWRITEBYTECODE=1, which this machine's environment sets, every start would compile the
product's sources again: about 0.15 s of `field list`."""


def executable() -> str | None:
    """The `autonumber` console script of this interpreter's environment, else the one on PATH."""
    beside = Path(sys.executable).parent / "autonumber"
    return str(beside) if beside.is_file() else shutil.which("autonumber")


def label(args: Sequence[str]) -> str:
    """The command as a user would type it."""
    return " ".join(["autonumber", *(f"'{a}'" if "{" in a else a for a in args)])


def _wall_time(command: Sequence[str], cwd: str) -> tuple[float, int]:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, timeout=60, check=False, env=USER_ENV)
    return time.perf_counter() - started, done.returncode


def _runs(command: Sequence[str], cwd: str, runs: int) -> list[tuple[float, int]]:
    """One unmeasured run (the file cache, the bytecode), then `runs` timed ones."""
    _wall_time(command, cwd)
    return [_wall_time(command, cwd) for _ in range(runs)]


def time_command(
    program: str, args: Sequence[str], runs: int = RUNS, target: float = TARGET_SECONDS
) -> dict[str, Any]:
    """One warm-up run, then `runs` timed runs of `program args` in an empty directory (holding
    the bootstrapped SQLite database DB when the command names it)."""
    with tempfile.TemporaryDirectory(prefix="autonumber-bench-cli-") as cwd:
        if DB in args:
            subprocess.run(
                [program, "db", "init", "--db", DB],
                cwd=cwd,
                capture_output=True,
                timeout=120,
                check=True,
                env=USER_ENV,
            )
        timed = _runs([program, *args], cwd, runs)
    seconds = [s for s, _ in timed]
    failed = [rc for _, rc in timed if rc != 0]
    return {
        "command": label(args),
        "runs": runs,
        "best_s": round(min(seconds), 3),
        "median_s": round(statistics.median(seconds), 3),
        "seconds": [round(s, 3) for s in seconds],
        "target_s": target,
        "errors": len(failed),
        "first_error": f"exit code {failed[0]}" if failed else None,
    }


def run_startup(runs: int = RUNS, log: Log = print) -> dict[str, Any]:
    """Every command of COMMANDS, timed; `skipped` when no `autonumber` script is installed."""
    program = executable()
    if program is None:
        return {"skipped": "the `autonumber` console script is not installed (pip install -e .)"}
    rows = []
    reference = reference_s(runs)
    log(f"  CLI start-up reference: python -c 'import sqlalchemy'  median {reference:.3f} s")
    for args, target in COMMANDS:
        row = time_command(program, args, runs, target)
        rows.append(row)
        log(
            f"  CLI start-up {row['command']:<40} best {row['best_s']:.3f} s  "
            f"median {row['median_s']:.3f} s" + (f"  errors={row['errors']}" if row["errors"] else "")
        )
    return {"program": program, "runs": runs, "rows": rows, "import_sqlalchemy_s": reference}


def reference_s(runs: int = RUNS) -> float:
    """The median wall time of `python -c "import sqlalchemy"`: what any command that reads a
    database pays before its own work, printed beside the table because this machine's speed
    varies by up to 2× within an hour (0.10 to 0.27 s for this one line)."""
    command = [sys.executable, "-c", "import sqlalchemy"]
    with tempfile.TemporaryDirectory(prefix="autonumber-bench-cli-") as cwd:
        return round(statistics.median(s for s, _ in _runs(command, cwd, runs)), 3)


def target_of(row: Mapping[str, Any]) -> float:
    """The row's own target (results written before rows carried one: the no-database target)."""
    return float(row.get("target_s", TARGET_SECONDS))


def meets_target(row: Mapping[str, Any]) -> bool:
    """Every run succeeded and the median start-up is within the row's target."""
    return float(row["median_s"]) <= target_of(row) and not row["errors"]
