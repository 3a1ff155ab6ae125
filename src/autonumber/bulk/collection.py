"""Two process-wide settings of the interpreter while a bulk import runs (docs/import.md, "Speed").

The garbage collector is paused, and run every COLLECT_EVERY_ROWS rows instead. It runs a young
pass every 700 new containers and each pass walks every live young object, so it walked each row
of a 5,000-row batch hundreds of times: 30 % of an import's time. The rows are freed by reference
counting, not by the collector; only reference cycles need it, and the young collection every
COLLECT_EVERY_ROWS rows still frees those (the import's and other threads').

Threads switch every SWITCH_INTERVAL (half a millisecond) instead of every five milliseconds.
The batch sender's thread needs Python's lock for a moment each time the server answers, while
the importing thread holds it to read the next batch: at five milliseconds a wait, the server sat
idle between its steps.

Nested and concurrent imports share each change: it is undone when the last one ends, back to what
it was before the first.
"""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

SWITCH_INTERVAL = 0.0005
"""Seconds a thread runs before another one waiting for Python's lock gets it, during an import.
The batch sender needs the lock at each step of a statement (binding its values, taking its
result); on SQLite, at 1 ms the importing thread waited 0.41-0.51 s in all for 1M rows, at 0.5 ms
0.23-0.25 s (docs/performance.md)."""
COLLECT_EVERY_ROWS = 100_000
"""Rows an import writes between two young collections. Each walks the live objects of the batch in
hand (up to 20,000 line labels), about 3 ms, and a plain import makes no cycle for it to free: once
per 20,000-row batch it was 4 % of a SQLite import's time."""


class _Shared:
    """A process-wide setting changed while anyone holds it, restored when the last holder ends."""

    def __init__(self, change: Callable[[], Any], restore: Callable[[Any], None]) -> None:
        self._change, self._restore = change, restore
        self._lock = threading.Lock()
        self._holders = 0
        self._before: Any = None

    @contextmanager
    def held(self) -> Iterator[None]:
        with self._lock:
            if self._holders == 0:
                self._before = self._change()
            self._holders += 1
        try:
            yield
        finally:
            with self._lock:
                self._holders -= 1
                if self._holders == 0:
                    self._restore(self._before)


def _pause() -> bool:
    was = gc.isenabled()
    gc.disable()
    return was


def _resume(was: bool) -> None:
    if was:
        gc.enable()


def _quicken() -> float:
    was = sys.getswitchinterval()
    sys.setswitchinterval(min(was, SWITCH_INTERVAL))
    return was


_collector = _Shared(_pause, _resume)
_switching = _Shared(_quicken, sys.setswitchinterval)


@contextmanager
def paused_collection() -> Iterator[None]:
    """Automatic collection off while the block runs; a `YoungCollections` collects instead."""
    with _collector.held():
        yield


@contextmanager
def quick_switches() -> Iterator[None]:
    """Threads switch at least every SWITCH_INTERVAL while the block runs."""
    with _switching.held():
        yield


def collect_young() -> None:
    """Free the reference cycles among objects made since the last collection."""
    gc.collect(1)


class YoungCollections:
    """`collect_young` each time `every` rows have been written since the last one."""

    def __init__(self, every: int = COLLECT_EVERY_ROWS) -> None:
        self._every = every
        self._since = 0

    def after(self, rows: int) -> None:
        """`rows` more rows were written."""
        self._since += rows
        if self._since >= self._every:
            self._since = 0
            collect_young()
