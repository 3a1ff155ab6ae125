"""Record Ids (autonumber/ids.py): version 4 UUIDs from buffered OS randomness, never shared with
a forked child."""

from __future__ import annotations

import os
import uuid

from autonumber.ids import new_id


def test_new_ids_are_random_version_4_uuids_across_refills_of_the_buffer() -> None:
    ids = {new_id() for _ in range(1000)}  # 256 Ids a refill: four refills
    assert len(ids) == 1000
    for value in ids:
        parsed = uuid.UUID(value)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122 and parsed.hex == value


def test_a_forked_child_never_hands_out_the_parents_buffered_ids() -> None:
    new_id()  # the buffer now holds 255 Ids the parent has not handed out yet
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next Ids, then leave without running the parent's test teardown
        os.close(read)
        os.write(write, "".join(new_id() for _ in range(5)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = pipe.read()
    os.waitpid(pid, 0)
    parent = [new_id() for _ in range(5)]
    assert len(child) == 5 * 32
    assert not {child[i : i + 32] for i in range(0, len(child), 32)} & set(parent)
