"""The counter engine: reservations off the caller's transaction, cross-record resolution."""

from __future__ import annotations

from .engine import STRATEGIES, Assigned, Engine, Strategy
from .reservation import Hooks, Reservation

__all__ = ["STRATEGIES", "Assigned", "Engine", "Hooks", "Reservation", "Strategy"]
