"""The one retry policy of every reservation path and of the group writer (docs/engine.md, "Retry
policy"): how many times a lost race is retried, how long to sleep between tries, for how long.

A lost race (0 rows from a CAS, a deadlock, a serialization or Galera certification failure at a
statement or at COMMIT) rolled back everything it did, so it is always safe to try again; the
policy only decides when to stop and hand the caller a clear, retryable error.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

DEFAULT_MAX_RETRIES = 5
"""CAS attempts before the fallback lane: the seed's `max_retries` (docs/engine.md, Strategies)."""


@dataclass(frozen=True)
class RetryPolicy:
    """Budgets, jitter and time window of lost-race retries (every number: docs/engine.md, "Retry
    policy").

    - `attempts`: the public knob `max_retries` (default 5, the seed's CAS budget); every other
      budget is a multiple of it, so raising it (e.g. on a Galera cluster) raises them all;
    - `fallback_factor` (2), `atomic_factor` (4), `lazy_factor` (2): the fallback lane, the
      single-statement increment and the lazy row creation each get that many times `attempts`;
      the group writer's whole-transaction retry gets `attempts`;
    - `jitter_base_ms` (8 = 2^3) and `backoff_cap` (6): the k-th retry sleeps
      rand(0, 8 · 2^min(k, 6)) ms — the seed's rand(0, 2^(attempt+3)) ms, never above 512 ms;
    - `window_s` (20): a lane that has no further lane (fallback, atomic, lazy row, group writer)
      keeps retrying a lost race for at least this long even when its attempts are used up, so a
      Galera cluster that reconfigures after losing a node (a few seconds of refused COMMITs) does
      not turn into caller errors. The CAS path hands over to the fallback lane after `attempts`,
      without a window.
    """

    attempts: int = DEFAULT_MAX_RETRIES
    fallback_factor: int = 2
    atomic_factor: int = 4
    lazy_factor: int = 2
    jitter_base_ms: float = 8.0
    backoff_cap: int = 6
    window_s: float = 20.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"max_retries must be at least 1, got {self.attempts}")

    @property
    def cas_attempts(self) -> int:
        return self.attempts

    @property
    def fallback_attempts(self) -> int:
        return self.attempts * self.fallback_factor

    @property
    def atomic_attempts(self) -> int:
        return self.attempts * self.atomic_factor

    @property
    def lazy_attempts(self) -> int:
        return self.attempts * self.lazy_factor

    @property
    def group_attempts(self) -> int:
        return self.attempts

    def jitter(self, retry: int) -> float:
        """The sleep before retry number `retry` (0 = the first), in seconds."""
        return random.uniform(0, self.jitter_base_ms * 2 ** min(retry, self.backoff_cap)) / 1000.0

    def tries(
        self,
        attempts: int,
        sleep: Callable[[float], None],
        *,
        windowed: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> Tries:
        """A fresh count of lost races for one operation with `attempts` tries."""
        return Tries(self, attempts, sleep, self.window_s if windowed else 0.0, clock)


@dataclass
class Tries:
    """One operation's lost races, counted against its budget and its time window."""

    policy: RetryPolicy
    attempts: int
    sleep: Callable[[float], None]
    window_s: float
    clock: Callable[[], float] = time.monotonic
    losses: int = 0
    started: float = field(init=False)

    def __post_init__(self) -> None:
        self.started = self.clock()

    def again(self) -> bool:
        """Count one lost race; sleep the jitter and say True while another try is allowed."""
        self.losses += 1
        used_up = self.losses >= self.attempts
        if used_up and self.clock() - self.started >= self.window_s:
            return False
        self.sleep(self.policy.jitter(self.losses - 1))
        return True
