"""Record Ids (autonumber/ids.py): version 4 UUIDs from OS randomness."""

from __future__ import annotations

import uuid

from autonumber.ids import new_id


def test_new_ids_are_random_version_4_uuids() -> None:
    ids = {new_id() for _ in range(1000)}
    assert len(ids) == 1000
    for value in ids:
        parsed = uuid.UUID(value)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122 and parsed.hex == value
