"""Test-only: counters back at their start before each test, on the test database only.

On SQLite a `TestCase` rolls its numbers back with its rows (they are taken inside the test's
transaction); on MariaDB and PostgreSQL they are committed on the platform's own connection and
outlive the test. `ResetAutoNumbers` (a TestCase mixin) and `autonumber_reset` (a pytest fixture,
django_pytest.py)
put every counter of the database back at its start before each test, so a suite that asserts
numbers passes the same on every backend. Both refuse, before writing anything, a database the
test runner did not create: its name must start with Django's `test_` prefix, be the `TEST`
`NAME` of its settings, or be SQLite's in-memory test database.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from django.db import connections
from django.db.backends.base.creation import TEST_DATABASE_PREFIX

from autonumber.db.fence import declare
from autonumber.db.tables import counter_table, reservation_journal
from autonumber.errors import AutonumberError

from .django_db import borrowed, platform_for
from .keep import keep


def check_test_database(alias: str = "default") -> None:
    """AutonumberError unless `alias` names a database the test runner created."""
    settings = connections[alias].settings_dict
    name = str(settings.get("NAME") or "")
    test_name = (settings.get("TEST") or {}).get("NAME")
    memory = name == ":memory:" or name.startswith("file:memorydb_")
    if not (memory or name.startswith(TEST_DATABASE_PREFIX) or (test_name and name == test_name)):
        raise AutonumberError(
            f"database {name!r} ({alias}) was not created by the test runner: counters are reset "
            f"only on a test database (a name starting with {TEST_DATABASE_PREFIX!r}, or TEST NAME)"
        )


def reset_counters(alias: str = "default") -> None:
    """Every counter of the database back at its start, its journal emptied, then moved past the
    numbers its rows hold (test database only)."""
    check_test_database(alias)
    platform = platform_for(alias)
    rules = list(platform.catalog.refresh().rules.values())
    wrapper = connections[alias]
    on_caller = wrapper.vendor == "sqlite" and wrapper.in_atomic_block  # SQLite: the test holds the lock
    with borrowed(alias) if on_caller else platform.db.begin() as conn:
        declare(conn)  # Django's own connection: the writer fence's declaration
        t, j = counter_table, reservation_journal
        for rule in rules:
            cid = rule.counter_id
            conn.execute(sa.delete(j).where(j.c.field_id == cid))
            conn.execute(sa.delete(t).where(t.c.field_id == cid, t.c.scope_key != ""))
            start = {"next_value": rule.start}
            conn.execute(sa.update(t).where(t.c.field_id == cid, t.c.scope_key == "").values(start))
    # rows the test database holds (TestCase.fixtures, setUpTestData: uncommitted, seen only on
    # Django's connection) keep their numbers: the counters move past them again
    snapshot = platform.catalog.current()
    with borrowed(alias) as reader:
        for rule in rules:
            column = snapshot.table(rule.object_name).c[rule.field_name]
            pattern = rule.format.scan_pattern()
            values = [
                str(v)
                for v in reader.execute(sa.select(column).where(column.is_not(None))).scalars()
                if pattern.match(str(v)) is not None
            ]
            if values:
                keep(platform, rule.field_id, values, None, reader if on_caller else None)


class ResetAutoNumbers:
    """TestCase mixin: every counter back at its start before each test (`databases` it uses)."""

    databases: Any

    def setUp(self) -> None:
        for alias in sorted(self.databases) if isinstance(self.databases, set | frozenset) else ["default"]:
            reset_counters(alias)
        super().setUp()  # type: ignore[misc]
