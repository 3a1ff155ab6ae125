"""A process of the connection-budget load test: default budget, threads inserting Cases."""

from __future__ import annotations

from engine_support import run_threads

import autonumber


def insert_with_defaults(url: str, threads: int, per_thread: int) -> list[str]:
    """Connect with every default (the budget included), insert threads × per_thread Cases."""
    p = autonumber.connect(url)
    try:
        return run_threads(
            threads,
            lambda i: [
                p.records.insert("Case", {"Subject": f"t{i}-{k}"})["CaseNumber"] for k in range(per_thread)
            ],
        )
    finally:
        p.close()
