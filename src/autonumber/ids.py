"""Record Ids for single inserts: random (version 4) UUIDs as 32 hex digits."""

from __future__ import annotations

import os


def new_id() -> str:
    """A platform-generated record Id: the same as `uuid.uuid4().hex` without building a UUID
    object (a fifth of the cost; an import makes one per row).

    One `os.urandom` call per Id. Buffering 256 Ids per call was measured (docs/performance.md,
    "The group writer's held connection"): a shared buffer under a lock made 100 threads queue on
    it, and a buffer per thread still lost 6–9 % at 100 callers while gaining 3–9 % at 8."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    return raw.hex()
