"""The counter engine: reservations off the caller's transaction, cross-record resolution."""

from __future__ import annotations

from .engine import DEFAULT_STRATEGY, STRATEGIES, Assigned, Engine, Strategy
from .reservation import Hooks, Reservation
from .retry import DEFAULT_MAX_RETRIES, RetryPolicy

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_STRATEGY",
    "STRATEGIES",
    "Assigned",
    "Engine",
    "Hooks",
    "Reservation",
    "RetryPolicy",
    "Strategy",
]
