"""Prometheus metrics of the engine (docs/engine.md, docs/runbook.md): one set per process."""

from __future__ import annotations

from functools import cache
from typing import Any

from prometheus_client import Counter, Gauge, Histogram

ATTEMPTS = Histogram(
    "autonumber_reservation_attempts",
    "Attempts one reservation took (CAS losses + 1); alert when p99 > 3.",
    ["strategy"],
    buckets=(1, 2, 3, 4, 5, 6, 8, 10, 16),
)
LATENCY = Histogram(
    "autonumber_reservation_seconds",
    "Wall time of one reservation, retries and fallback included.",
    ["strategy"],
    buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2, 5),
)
RESERVATIONS = Counter(
    "autonumber_reservations",
    "Committed reservations (one per assign_one, one per group of an assign_batch).",
    ["strategy"],
)
FALLBACKS = Counter(
    "autonumber_fallback",
    "Reservations that exhausted their CAS retries and took the FOR UPDATE fallback lane.",
)
FALLBACK_IN_FLIGHT = Gauge(
    "autonumber_fallback_in_flight",
    "Fallback-lane reservations running now (the per-counter semaphore keeps it ≤ 1 per counter).",
    multiprocess_mode="livesum",
)
QUARANTINED = Gauge(
    "autonumber_quarantined_fields",
    "Autonumber fields whose rule failed re-validation and refuse to assign numbers.",
    multiprocess_mode="max",
)
LAZY_ROWS = Counter(
    "autonumber_lazy_counter_rows",
    "Counter rows created at runtime for a new per_day/per_prefix scope.",
)
RECORDS_CREATED = Counter(
    "autonumber_records_created",
    "Records inserted (committed or handed to the caller's transaction), by object.",
    ["object"],
)


@cache
def reservation_metrics(strategy: str) -> tuple[Any, Any, Any]:
    """ATTEMPTS, LATENCY and RESERVATIONS for one strategy (three strategies: the children are
    looked up once, not on every reservation)."""
    return ATTEMPTS.labels(strategy), LATENCY.labels(strategy), RESERVATIONS.labels(strategy)


@cache
def records_created(object_name: str) -> Any:
    """RECORDS_CREATED for one object (one child per object of the catalog, looked up once)."""
    return RECORDS_CREATED.labels(object_name)
