"""Record Ids (autonumber/write/ids.py): time-ordered version 7 UUIDs, random after the time."""

from __future__ import annotations

import multiprocessing
import time
import uuid

from autonumber.write.ids import new_id


def test_new_ids_are_unique_version_7_uuids_of_the_current_millisecond() -> None:
    before = time.time_ns() // 1_000_000
    ids = [new_id() for _ in range(1000)]
    after = time.time_ns() // 1_000_000
    assert len(set(ids)) == 1000
    for value in ids:
        parsed = uuid.UUID(value)
        assert parsed.version == 7 and parsed.variant == uuid.RFC_4122 and parsed.hex == value
        assert before <= int(value[:12], 16) <= after


def test_ids_made_later_sort_after_earlier_ones() -> None:
    first = new_id()
    time.sleep(0.002)
    assert new_id() > first


def test_ids_of_one_millisecond_differ_in_their_random_bits() -> None:
    tails = {new_id()[13:] for _ in range(1000)}  # after the time and the version digit
    assert len(tails) == 1000


def test_a_forked_child_makes_other_ids_than_its_parent() -> None:
    """The generator is reseeded in a child: a pre-fork worker never repeats its parent's Ids."""
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as pool:
        theirs = pool.apply(_tails, (200,))
    ours = _tails(200)
    assert len(set(ours)) == len(set(theirs)) == 200 and not set(ours) & set(theirs)


def _tails(n: int) -> list[str]:
    return [new_id()[13:] for _ in range(n)]
