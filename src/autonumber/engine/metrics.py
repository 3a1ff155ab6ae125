"""Prometheus metrics of the engine (docs/engine.md, docs/runbook.md): one set per process.

Made on first use, not at import: prometheus_client and what it imports (http, urllib, email)
cost a command that never counts anything, such as `field list`, about 20 ms of its start."""

from __future__ import annotations

import threading
from functools import cache
from typing import Any

_made: dict[str, Any] = {}
_lock = threading.Lock()


def _metrics() -> dict[str, Any]:
    """Every metric, made once (under a lock: a second registration of a name is an error)."""
    if not _made:
        with _lock:
            if not _made:
                _made.update(_make())
    return _made


def _make() -> dict[str, Any]:
    from prometheus_client import Counter, Gauge, Histogram

    return {
        "ATTEMPTS": Histogram(
            "autonumber_reservation_attempts",
            "Attempts one reservation took (CAS losses + 1); alert when p99 > 3.",
            ["strategy"],
            buckets=(1, 2, 3, 4, 5, 6, 8, 10, 16),
        ),
        "LATENCY": Histogram(
            "autonumber_reservation_seconds",
            "Wall time of one reservation, retries and fallback included.",
            ["strategy"],
            buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2, 5),
        ),
        "RESERVATIONS": Counter(
            "autonumber_reservations",
            "Committed reservations (one per assign_one, one per group of an assign_batch).",
            ["strategy"],
        ),
        "FALLBACKS": Counter(
            "autonumber_fallback",
            "Reservations that exhausted their CAS retries and took the FOR UPDATE fallback lane.",
        ),
        "FALLBACK_IN_FLIGHT": Gauge(
            "autonumber_fallback_in_flight",
            "Fallback-lane reservations running now (the per-counter semaphore keeps it ≤ 1 per counter).",
            multiprocess_mode="livesum",
        ),
        "QUARANTINED": Gauge(
            "autonumber_quarantined_fields",
            "Autonumber fields whose rule failed re-validation and refuse to assign numbers.",
            multiprocess_mode="max",
        ),
        "LAZY_ROWS": Counter(
            "autonumber_lazy_counter_rows",
            "Counter rows created at runtime for a new per_day/per_prefix scope.",
        ),
        "RECORDS_CREATED": Counter(
            "autonumber_records_created",
            "Records inserted (committed or handed to the caller's transaction), by object.",
            ["object"],
        ),
    }


def make_all() -> None:
    """Make every metric now: a server does before its first scrape, so every series shows, at 0."""
    _metrics()


def publish_quarantined(count: int) -> None:
    """Set the quarantine gauge; with nothing quarantined in a process that has made no metric yet,
    make none (a CLI command then never imports prometheus_client; a later gauge starts at 0)."""
    if count or _made:
        _metrics()["QUARANTINED"].set(count)


def __getattr__(name: str) -> Any:
    """`metrics.ATTEMPTS` and the others, made on first use."""
    found = _metrics().get(name) if name.isupper() else None
    if found is not None:
        return found
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@cache
def reservation_metrics(strategy: str) -> tuple[Any, Any, Any]:
    """ATTEMPTS, LATENCY and RESERVATIONS for one strategy (three strategies: the children are
    looked up once, not on every reservation)."""
    made = _metrics()
    return (
        made["ATTEMPTS"].labels(strategy),
        made["LATENCY"].labels(strategy),
        made["RESERVATIONS"].labels(strategy),
    )


@cache
def records_created(object_name: str) -> Any:
    """RECORDS_CREATED for one object (one child per object of the catalog, looked up once)."""
    return _metrics()["RECORDS_CREATED"].labels(object_name)
