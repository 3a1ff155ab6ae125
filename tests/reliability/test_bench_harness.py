"""The bench harness: it must catch duplicates and failures, and `autonumber bench` must run end to end."""

from __future__ import annotations

import itertools
import json
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from autonumber.bench.harness import percentile, run_cell
from autonumber.cli.app import app


def test_percentile_is_nearest_rank() -> None:
    samples = [float(i) for i in range(1, 101)]
    assert percentile(samples, 0.5) == 50.0
    assert percentile(samples, 0.99) == 99.0
    assert percentile([], 0.99) == 0.0


def test_a_cell_counts_duplicates_and_errors() -> None:
    counter = itertools.count()
    lock = threading.Lock()

    def flaky() -> int:
        with lock:
            n = next(counter)
        if n % 10 == 0:
            raise RuntimeError("boom")
        return n % 50  # repeats after 50 calls

    cell = run_cell(flaky, callers=4, duration=0.2, warmup=0.05)
    assert cell.errors > 0 and cell.first_error == "RuntimeError: boom"
    assert cell.duplicates > 0
    assert cell.as_dict()["unique"] is False


def test_a_cell_of_unique_values_is_unique() -> None:
    counter = itertools.count()
    lock = threading.Lock()

    def ok() -> int:
        with lock:
            return next(counter)

    cell = run_cell(ok, callers=8, duration=0.2, warmup=0.05)
    assert cell.ops > 0 and cell.duplicates == 0 and cell.errors == 0
    assert cell.as_dict()["unique"] is True


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_bench_command_writes_json_plots_and_docs(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "performance.md").write_text("# Performance\n\nhand-written text\n", encoding="utf-8")
    args = [
        "bench", "--quick", "--backend", "sqlite", "--callers", "1", "--callers", "4",
        "--seconds", "0.2", "--no-extras",
        "--sqlite-url", f"sqlite:///{tmp_path / 'bench.db'}",
        "--results", str(tmp_path / "results"), "--docs", str(docs),
    ]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "engine:combining" in result.output
    (path,) = (tmp_path / "results").glob("*.json")
    doc = json.loads(path.read_text(encoding="utf-8"))
    cells = doc["backends"]["sqlite"]["cells"]
    assert {"engine:cas", "engine:atomic", "engine:combining"} <= set(cells)
    assert all(row["unique"] for rows in cells.values() for row in rows)
    text = (docs / "performance.md").read_text(encoding="utf-8")
    assert "hand-written text" in text and "<!-- bench:end -->" in text
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0, again.output
    assert (docs / "performance.md").read_text(encoding="utf-8").count("<!-- bench:begin") == 1
