"""Run one operation from N caller threads for a fixed time; measure throughput and latency.

Every caller starts at one barrier, warms up, then records each call that started inside the
measuring window. Every value handed out (warm-up included) is kept, so uniqueness is checked over
all of them afterwards.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

STUCK_AFTER = 60.0
"""Seconds a cell waits for its callers after the window closed before reporting them stuck."""

Op = Callable[[], Hashable]
"""One call by one caller; returns the value it was handed (or a tuple of values)."""
Log = Callable[[str], None]
"""Where progress lines go (print by default)."""


@dataclass
class CellResult:
    """One contestant at one caller count."""

    callers: int
    ops: int
    seconds: float
    latencies: list[float] = field(repr=False)
    values: int
    duplicates: int
    errors: int
    first_error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def throughput(self) -> float:
        """Calls per second inside the window."""
        return self.ops / self.seconds if self.seconds > 0 else 0.0

    def percentile(self, q: float) -> float:
        """Latency at quantile q (0..1), in seconds."""
        return percentile(self.latencies, q)

    def as_dict(self) -> dict[str, Any]:
        """Plain data for the JSON results."""
        return {
            "callers": self.callers,
            "ops": self.ops,
            "seconds": round(self.seconds, 4),
            "throughput": round(self.throughput, 1),
            "p50_ms": round(self.percentile(0.50) * 1000, 3),
            "p99_ms": round(self.percentile(0.99) * 1000, 3),
            "max_ms": round(max(self.latencies, default=0.0) * 1000, 3),
            "values": self.values,
            "duplicates": self.duplicates,
            "unique": self.duplicates == 0 and self.errors == 0,
            "errors": self.errors,
            "first_error": self.first_error,
            **self.extra,
        }


def percentile(samples: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of samples (0.0 when there are none)."""
    if not samples:
        return 0.0
    ordered = sorted(samples)
    rank = max(0, min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1))
    return ordered[rank]


def flatten(values: Sequence[Hashable]) -> list[Hashable]:
    """Values handed out: a call may return one value or a tuple/list of them (batches)."""
    out: list[Hashable] = []
    for value in values:
        if isinstance(value, tuple | list):
            out.extend(value)
        else:
            out.append(value)
    return out


def run_cell(
    op: Op,
    callers: int,
    duration: float,
    warmup: float = 0.2,
    thread_done: Callable[[], None] | None = None,
    max_errors: int = 50,
) -> CellResult:
    """Run `op` from `callers` threads for warmup + duration seconds; stop early on repeated errors."""
    barrier = threading.Barrier(callers + 1)
    stop = threading.Event()
    lock = threading.Lock()
    latencies: list[float] = []
    values: list[Hashable] = []
    errors: list[str] = []
    window: list[float] = [0.0, 0.0]

    def caller() -> None:
        mine_lat: list[float] = []
        mine_val: list[Hashable] = []
        try:
            barrier.wait()
            start = window[0]
            while not stop.is_set():
                t0 = time.perf_counter()
                try:
                    value = op()
                except Exception as exc:  # a failed call is counted and reported, never hidden
                    with lock:
                        errors.append(f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
                        if len(errors) >= max_errors:
                            stop.set()
                    continue
                t1 = time.perf_counter()
                mine_val.append(value)
                if t0 >= start:
                    mine_lat.append(t1 - t0)
        finally:
            with lock:
                latencies.extend(mine_lat)
                values.extend(mine_val)
            if thread_done is not None:
                thread_done()

    threads = [threading.Thread(target=caller, daemon=True) for _ in range(callers)]
    for t in threads:
        t.start()
    window[0] = time.perf_counter() + warmup
    barrier.wait()
    stop.wait(warmup + duration)
    stop.set()
    window[1] = time.perf_counter()
    deadline = time.perf_counter() + STUCK_AFTER
    stuck = 0
    for t in threads:
        t.join(max(0.0, deadline - time.perf_counter()))
        stuck += t.is_alive()
    if stuck:
        errors.append(f"{stuck} caller(s) still inside a call {STUCK_AFTER:g} s after the cell ended")
    with lock:
        latencies, values = list(latencies), list(values)
    handed = flatten(values)
    seconds = max(1e-9, min(duration, window[1] - window[0]))
    return CellResult(
        callers=callers,
        ops=len(latencies),
        seconds=seconds,
        latencies=latencies,
        values=len(handed),
        duplicates=len(handed) - len(set(handed)),
        errors=len(errors),
        first_error=errors[0] if errors else None,
    )
