"""Limits that hold for ten years.

The 3,650 cap counts distinct days of a per_day field only. A database holding Contract numbers of
4 countries × 9 record types × 400 days (14,400 per_prefix keys) cuts over with `setup apply` and
verifies green; a per_day field past 3,650 days is still refused, naming the field, while the same
values under per_prefix are not.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, timedelta

import pytest
import sqlalchemy as sa
from engine_support import make_platform, store_rules
from sqlalchemy.engine import Engine

from autonumber.db import create_engine
from autonumber.db.tables import counter_table
from autonumber.errors import SeedLimitError
from autonumber.rules.scan import scan_rule
from autonumber.rules.store import RuleSpec
from autonumber.rules.verify import verify
from autonumber.setup.apply import apply
from autonumber.setup.demo import fill_legacy
from autonumber.setup.generate import default_spec

SPEC = default_spec()
COUNTRIES = ("SG", "US", "DE", "JP")
DAYS = 400
FIRST = date(2024, 1, 1)  # before the demo's own Contract days


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    eng = create_engine(db_url)
    fill_legacy(eng, SPEC, 60)
    yield eng
    eng.dispose()


def _contracts(engine: Engine, codes: list[str], days: int) -> dict[str, int]:
    """One Contract number per (country, type, day), counters 1-3; the largest per key."""
    table = sa.table("Contract", sa.column("Id"), sa.column("Contract_Number__c"))
    keys = [
        f"{c}-{code}-{FIRST + timedelta(days=d):%y%m%d}-"
        for d in range(days)
        for code in codes
        for c in COUNTRIES
    ]
    rows = [
        {"Id": f"800k{i:09d}", "Contract_Number__c": f"{key}{1 + i % 3:02d}"} for i, key in enumerate(keys)
    ]
    for start in range(0, len(rows), 2000):
        with engine.begin() as conn:
            conn.execute(sa.insert(table), rows[start : start + 2000])
    return {key: 1 + i % 3 for i, key in enumerate(keys)}


@pytest.mark.slow
def test_fourteen_thousand_per_prefix_keys_cut_over_and_verify(engine: Engine) -> None:
    codes = [rt.code for rt in SPEC.record_types if rt.object == "Contract"]
    assert len(codes) == 9
    stored = _contracts(engine, codes, DAYS)
    assert len(stored) == 4 * 9 * DAYS
    apply(engine, SPEC)  # binding verify inside
    assert verify(engine) == []
    t = counter_table
    with engine.connect() as conn:
        rows = dict(
            conn.execute(
                sa.select(t.c.scope_key, t.c.next_value).where(t.c.field_id == "Contract.Contract_Number__c")
            )
            .tuples()
            .all()
        )
    assert all(rows[key] == top + 1 for key, top in stored.items())
    apply(engine, SPEC)  # and again: nothing to do, still green
    assert verify(engine) == []


@pytest.mark.parametrize(("scope", "refused"), [("per_day", True), ("per_prefix", False)])
def test_only_per_day_counts_against_ten_years(db_url: str, scope: str, refused: bool) -> None:
    p = make_platform(db_url)
    try:
        store_rules(p, RuleSpec("Case", "CaseNumber", "C-{YYYY}{MM}{DD}-{0000}", scope=scope))
        table = sa.table("Case", sa.column("Id"), sa.column("CaseNumber"))
        with p.begin() as conn:
            conn.execute(
                sa.insert(table),
                [
                    {
                        "Id": f"500k{d:09d}",
                        "CaseNumber": f"C-{date(2000, 1, 1) + timedelta(days=d):%Y%m%d}-0001",
                    }
                    for d in range(3651)
                ],
            )
        snapshot = p.catalog.current()
        with p.db.connect() as conn:
            if refused:
                with pytest.raises(SeedLimitError, match=r"Case.CaseNumber .* spans more than 3650 per_day"):
                    scan_rule(conn, snapshot.rule("Case.CaseNumber"), snapshot.table("Case"))
            else:
                scan = scan_rule(conn, snapshot.rule("Case.CaseNumber"), snapshot.table("Case"))
                assert len(scan.buckets) == 3651
    finally:
        p.close()
