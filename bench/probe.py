"""Read the engine's Prometheus metrics before and after a cell: attempts per reservation, fallbacks."""

from __future__ import annotations

from dataclasses import dataclass

from autonumber.engine import metrics

Buckets = dict[float, float]


def _attempt_buckets(strategy: str) -> tuple[Buckets, float]:
    """Cumulative bucket counts and the total count of `autonumber_reservation_attempts{strategy}`."""
    buckets: Buckets = {}
    total = 0.0
    for family in metrics.ATTEMPTS.collect():
        for sample in family.samples:
            if sample.labels.get("strategy") != strategy:
                continue
            if sample.name.endswith("_bucket"):
                buckets[float(sample.labels["le"])] = sample.value
            elif sample.name.endswith("_count"):
                total = sample.value
    return buckets, total


def _fallbacks() -> float:
    for family in metrics.FALLBACKS.collect():
        for sample in family.samples:
            if sample.name.endswith("_total"):
                return float(sample.value)
    return 0.0


@dataclass
class AttemptProbe:
    """A snapshot of the attempts histogram; `delta()` summarises what happened since."""

    strategy: str
    buckets: Buckets
    count: float
    fallbacks: float

    @classmethod
    def take(cls, strategy: str) -> AttemptProbe:
        """Snapshot now."""
        buckets, count = _attempt_buckets(strategy)
        return cls(strategy, buckets, count, _fallbacks())

    def delta(self) -> dict[str, float]:
        """Reservations since the snapshot, their attempts p99 (bucket bound) and fallbacks taken."""
        now, count = _attempt_buckets(self.strategy)
        reservations = count - self.count
        p99 = 0.0
        if reservations > 0:
            for bound in sorted(now):
                if now[bound] - self.buckets.get(bound, 0.0) >= 0.99 * reservations:
                    p99 = bound
                    break
        return {
            "reservations": reservations,
            "attempts_p99": p99,
            "fallbacks": _fallbacks() - self.fallbacks,
        }
