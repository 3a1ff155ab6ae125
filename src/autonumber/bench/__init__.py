"""`autonumber bench`: the engine's strategies against native sequences and django-sequences.

The harness is importable so the CLI works from an installed package; the optional `bench` extra
brings matplotlib (plots), Django and django-sequences (the row-lock peer).
"""

from __future__ import annotations

from .runner import CALLERS, BenchConfig, run

__all__ = ["CALLERS", "BenchConfig", "run"]
