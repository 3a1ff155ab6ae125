"""`make check` leaves out every Galera and browser test, whatever its module declares: the
markers come from the folder (tests/conftest.py). The Galera partition tests once ran in the quick
loop, a third of its time, because their module lacked the `galera` mark."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _quick_selection() -> str:
    """The `-m` expression of the Makefile's `quick` target."""
    recipe = ROOT.joinpath("Makefile").read_text(encoding="utf-8").split("\nquick:", 1)[1]
    found = re.search(r'-m "([^"]+)"', recipe)
    assert found, "the quick target has no -m selection"
    return found.group(1)


def test_the_quick_selection_collects_no_galera_or_browser_test() -> None:
    collect = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [*collect, "-m", _quick_selection(), "tests/galera", "tests/e2e"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "no tests collected" in done.stdout, done.stdout[-2000:]
    assert "deselected" in done.stdout, done.stdout[-2000:]
