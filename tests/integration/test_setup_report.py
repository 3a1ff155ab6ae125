"""`setup report` on a scratch SQLite database: three tables from real runs."""

from __future__ import annotations

import pytest

from autonumber.setup.report import run_report


@pytest.mark.slow
def test_report_runs_the_three_tables(sqlite_url: str) -> None:
    report = run_report(sqlite_url, rows=60)
    assert list(report.tables) == ["Idempotency", "Concurrency", "Multi-state startup"]
    failed = [r.check for rows in report.tables.values() for r in rows if not r.passed]
    # Wall-time ratios are measured, not asserted: tests check correctness, benchmarks speed.
    assert set(failed) <= {"2nd/3rd run < 10 % of 1st"}, failed
    text = report.markdown()
    assert "next Account IBG-B-" in text and "-003968" in text
    assert "| all exit 0 | 3 processes at once | exit codes [0, 0, 0]" in text
