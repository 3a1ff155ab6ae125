"""A rule change while writers insert, on every backend: `field set` verifies the field it changed
in its own transaction, and that check reads the counter only after the column it compares it
with, so a number stored meanwhile is never taken for a write hole (a false refusal)."""

from __future__ import annotations

import threading

import sqlalchemy as sa

from autonumber.db import create_engine
from autonumber.rules import RuleEdit, set_rule
from autonumber.rules.verify import verify
from autonumber.runtime import Platform
from support import number, run_together

WRITERS = 8


def test_field_set_under_eight_writers_never_refuses_falsely(platform: Platform, db_url: str) -> None:
    """8 writers insert Cases while an admin changes only the literal text or the time zone of
    CaseNumber's format, 8 times: every change passes, and every number is distinct."""
    edits = [
        RuleEdit("Case", "CaseNumber", format=f"C{i % 2}-{{00000000}}")
        if i % 2
        else RuleEdit("Case", "CaseNumber", time_zone="Asia/Tokyo" if i % 4 else "UTC")
        for i in range(24)
    ]
    stored: list[str] = []
    lock = threading.Lock()
    done = threading.Event()
    admin = create_engine(db_url)

    def work(t: int) -> None:
        if t == WRITERS:
            try:
                for edit in edits:
                    set_rule(admin, edit)
            finally:
                done.set()
            return
        while not done.is_set():
            value = platform.records.insert("Case", {"Subject": f"w{t}"})["CaseNumber"]
            with lock:
                stored.append(value)

    try:
        assert run_together(work, WRITERS + 1) == []
    finally:
        admin.dispose()
    counters = [number(v) for v in stored]
    assert len(set(counters)) == len(counters) and len(counters) >= WRITERS
    platform.catalog.refresh()
    with platform.db.connect() as conn:
        table = platform.catalog.current().table("Case")
        in_column = set(conn.execute(sa.select(table.c.CaseNumber)).scalars())
    assert set(stored) <= in_column
    assert verify(platform.db) == []
