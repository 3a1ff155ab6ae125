"""An in-process event bus: `RecordBeforeCreate` is published after numbers are assigned and
before the row is inserted, so subscribers see the final values."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection


@dataclass(frozen=True)
class RecordBeforeCreate:
    """Records about to be inserted, with their autonumbers already assigned."""

    object_name: str
    records: Sequence[Mapping[str, Any]]
    conn: Connection


Handler = Callable[[Any], None]


class EventBus:
    """Synchronous publish/subscribe by event type; a handler's exception aborts the insert."""

    def __init__(self) -> None:
        self._handlers: dict[type, list[Handler]] = {}
        self._lock = threading.Lock()

    def subscribe(self, event_type: type, handler: Handler) -> None:
        """Call `handler(event)` for every published event of `event_type`."""
        with self._lock:
            self._handlers.setdefault(event_type, []).append(handler)

    def has_subscribers(self, event_type: type) -> bool:
        """Whether publishing an event of `event_type` would call anyone."""
        return bool(self._handlers.get(event_type))

    def publish(self, event: object) -> None:
        """Deliver to every subscriber, in subscription order."""
        for handler in list(self._handlers.get(type(event), ())):
            handler(event)
