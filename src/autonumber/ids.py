"""Record Ids for single inserts: random (version 4) UUIDs as 32 hex digits.

The random bytes are read from the OS 256 Ids at a time: `os.urandom` is a system call that lets go
of the GIL, and with many threads inserting, one call per Id cost more than the rest of the Id. A
forked child starts with an empty buffer (and a fresh lock), so no two processes ever hand out the same bytes.
"""

from __future__ import annotations

import os
import threading

_ID_BYTES = 16
_BLOCK = 256 * _ID_BYTES


class _Entropy:
    """Bytes from `os.urandom`, handed out once each, under a lock."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Empty, with a new lock: a forked child must not inherit a lock another thread held."""
        self.lock = threading.Lock()
        self.buffer = b""
        self.used = 0

    def take(self) -> bytearray:
        with self.lock:
            if self.used >= len(self.buffer):
                self.buffer, self.used = os.urandom(_BLOCK), 0
            start = self.used
            self.used += _ID_BYTES
            return bytearray(self.buffer[start : start + _ID_BYTES])


_entropy = _Entropy()
os.register_at_fork(after_in_child=_entropy.reset)


def new_id() -> str:
    """A platform-generated record Id: the same as `uuid.uuid4().hex` without building a UUID
    object."""
    raw = _entropy.take()
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    return raw.hex()
