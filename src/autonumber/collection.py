"""Python's garbage collector during a bulk import: paused, and run once per batch instead.

The collector runs a young pass every 700 new containers and each pass walks every live young
object, so it walked each row of a 5,000-row batch hundreds of times: 30 % of an import's time
(docs/import.md, "Speed"). The rows are freed by reference counting, not by the collector; only
reference cycles need it, and the young collection after each batch still frees those (the
import's and other threads'). Nested and concurrent imports share one pause: the collector is
restored when the last one ends, to what it was before the first.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_pauses = 0
_was_enabled = False


@contextmanager
def paused_collection() -> Iterator[None]:
    """Automatic collection off while the block runs; call `collect_young` after each batch."""
    global _pauses, _was_enabled
    with _lock:
        if _pauses == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _lock:
            _pauses -= 1
            if _pauses == 0 and _was_enabled:
                gc.enable()


def collect_young() -> None:
    """Free the reference cycles among objects made since the last collection."""
    gc.collect(1)
