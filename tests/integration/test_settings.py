"""A Platform is built from one Settings object: what `connect` was given is what the Platform
holds and what its parts run with."""

from __future__ import annotations

import autonumber
from autonumber import Settings
from support import bootstrap_url


def test_connect_options_become_the_platforms_settings(sqlite_url: str) -> None:
    bootstrap_url(sqlite_url)
    p = autonumber.connect(sqlite_url, journal=False, group_commit=False, caller="billing", poll_interval=5.0)
    try:
        assert p.settings == Settings(
            sqlite_url, journal=False, group_commit=False, caller="billing", poll_interval=5.0
        )
        assert p.engine.reserver.journal.enabled is False
        assert p.records.group_commit is None and p.group_db is None
        assert p.engine.reserver.journal.caller == "billing"
    finally:
        p.close()


def test_the_default_settings_are_connects_defaults(sqlite_url: str) -> None:
    bootstrap_url(sqlite_url)
    with autonumber.connect(sqlite_url) as p:
        assert p.settings == Settings(sqlite_url)
        assert p.records.group_commit is not None and p.engine.reserver.journal.enabled
