"""Record Ids for single inserts: time-ordered (version 7) UUIDs as 32 hex digits."""

from __future__ import annotations

import os
import time


def new_id() -> str:
    """A platform-generated record Id: UUID version 7 (RFC 9562), the Unix time in ms first and
    74 random bits after it, without building a UUID object.

    Time first, so consecutive inserts land on the right edge of the Id index (a clustered primary
    key on MariaDB) instead of a random page of it per record."""
    raw = bytearray(os.urandom(16))
    raw[:6] = (time.time_ns() // 1_000_000).to_bytes(6, "big")
    raw[6] = (raw[6] & 0x0F) | 0x70  # version 7
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 9562 variant
    return raw.hex()
