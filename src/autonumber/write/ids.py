"""Record Ids for single inserts: time-ordered (version 7) UUIDs as 32 hex digits."""

from __future__ import annotations

import time
from random import getrandbits

_RAND_B_BITS = 62


def new_id() -> str:
    """A platform-generated record Id: UUID version 7 (RFC 9562), the Unix time in ms first and
    74 random bits after it, without building a UUID object.

    Time first, so consecutive inserts land on the right edge of the Id index (a clustered primary
    key on MariaDB) instead of a random page of it per record. The random bits come from Python's
    generator, seeded from the system and reseeded in a forked child: Ids are unique, not secret,
    and `os.urandom` cost a system call per record that let go of Python's lock."""
    bits = getrandbits(74)
    value = (
        (time.time_ns() // 1_000_000) << 80
        | 0x7 << 76  # version 7
        | (bits >> _RAND_B_BITS) << 64  # rand_a: 12 bits
        | 0b10 << 62  # RFC 9562 variant
        | bits & ((1 << _RAND_B_BITS) - 1)  # rand_b: 62 bits
    )
    return f"{value:032x}"
