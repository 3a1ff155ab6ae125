"""The MariaDB copy of the platform heals itself: a test that timed out can leave a thread that still
changes tables after the next test began, and one broken spare must cost one fresh copy, not fail
every later test of the worker at setup (CI saw 80 setups fail on `…_spare.Account` that way)."""

from __future__ import annotations

import os

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

import testdb

pytestmark = pytest.mark.mysql
BASE = os.environ.get("AUTONUMBER_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/autonumber_test")


def _heal_url() -> str:
    """A MariaDB test database of this worker's own for this test (`…_heal`), managed like the rest."""
    worker = make_url(testdb.worker_url(BASE))
    url = worker.set(database=f"{worker.database}_heal").render_as_string(hide_password=False)
    testdb.ensure_database(url)
    testdb.manage(url)
    testdb.make_empty(url)
    return url


def _tables(engine: sa.Engine, database: str) -> set[str]:
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = :d"),
            {"d": database},
        )
        return {str(r[0]) for r in rows}


def test_a_spare_that_lost_a_table_is_replaced_by_a_fresh_copy() -> None:
    url = _heal_url()
    database = str(make_url(url).database)
    assert testdb.restore_platform(url)
    testdb.make_empty(url)  # the unchanged platform moves to <name>_spare
    snap = testdb.mysql.snapshots[url]
    assert snap.spare_ready
    admin = sa.create_engine(make_url(url).set(database=None))
    try:
        with admin.begin() as conn:
            conn.execute(sa.text(f"DROP TABLE `{snap.spare}`.`Account`"))
        assert testdb.restore_platform(url)
        assert _tables(admin, database) == set(snap.tables)
        testdb.make_empty(url)
        assert testdb.restore_platform(url)  # and the copies after it work as before
        assert _tables(admin, database) == set(snap.tables)
    finally:
        admin.dispose()
        testdb.make_empty(url)
