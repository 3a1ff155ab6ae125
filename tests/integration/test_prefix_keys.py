"""`per_prefix` counts by the text a value shows, so no two values coincide.

Also: `INV-{YYYY}-{0000}` per_prefix restarts each year (database-clock seam), and rows keyed the
old way (token values joined by `|`) move to the new keys with GREATEST, idempotently.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa
from engine_support import counter_rows, make_platform, run_threads, store_rules

from autonumber.db.tables import counter_table, system_object, system_record_type
from autonumber.engine import STRATEGIES
from autonumber.rules import state
from autonumber.rules.seed import migrate_keys
from autonumber.rules.store import RuleSpec
from autonumber.runtime import Platform

DAY = datetime(2026, 4, 17, 9, 30, tzinfo=UTC)
CONTRACT = "Contract.Contract_Number__c"
CSA = "rt_Contract_Services_Agreement"
TCSA = "rt_Contract_T"


@pytest.fixture
def platform(db_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Platform]:
    p = make_platform(db_url)
    now = [DAY]
    monkeypatch.setattr(p.dialect, "utc_now", lambda conn: now[0])
    p.clock = now  # type: ignore[attr-defined]
    yield p
    p.close()


def _add_record_type(p: Platform, rt_id: str, code: str) -> None:
    with p.begin() as conn:
        o = system_object
        obj = conn.execute(sa.select(o.c.Id).where(o.c.ApiName == "Contract")).scalar_one()
        conn.execute(
            sa.insert(system_record_type).values(
                Id=rt_id, ObjectId=obj, DeveloperName=rt_id, Name=rt_id, RecordTypeCode=code
            )
        )


def _account(p: Platform, country: str) -> str:
    return str(p.records.insert("Account", {"Name": "Acme", "BillingCountryCode": country})["Id"])


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_same_text_from_different_values_shares_one_counter(
    db_url: str, strategy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SG + TCSA and SGT + CSA both render `SGTCSA-…`: they take turns on one counter."""
    platform = make_platform(db_url, strategy=strategy)
    monkeypatch.setattr(platform.dialect, "utc_now", lambda conn: DAY)
    try:
        _take_turns(platform)
    finally:
        platform.close()


def _take_turns(platform: Platform) -> None:
    fmt = "{Account.BillingCountryCode}{RecordType.RecordTypeCode}-{00}"
    store_rules(platform, RuleSpec("Contract", "Contract_Number__c", fmt, scope="per_prefix"))
    _add_record_type(platform, TCSA, "TCSA")
    sg, sgt = _account(platform, "SG"), _account(platform, "SGT")
    pairs = [(sg, TCSA), (sgt, CSA)] * 10

    def work(i: int) -> list[str]:
        acc, rt = pairs[i]
        return [
            str(
                platform.records.insert("Contract", {"AccountId": acc, "RecordTypeId": rt})[
                    "Contract_Number__c"
                ]
            )
        ]

    values = run_threads(len(pairs), work)
    assert sorted(values) == [f"SGTCSA-{n:02d}" for n in range(1, 21)]
    assert counter_rows(platform, CONTRACT) == {"SGTCSA-": 21}


def test_invoice_per_prefix_restarts_each_year(platform: Platform) -> None:
    store_rules(platform, RuleSpec("Case", "CaseNumber", "INV-{YYYY}-{0000}", scope="per_prefix"))
    clock = platform.clock  # type: ignore[attr-defined]
    clock[0] = datetime(2026, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    first = [platform.records.insert("Case", {"Subject": "s"})["CaseNumber"] for _ in range(2)]
    clock[0] = datetime(2027, 1, 1, 0, 0, 0, tzinfo=UTC)
    second = [platform.records.insert("Case", {"Subject": "s"})["CaseNumber"] for _ in range(2)]
    assert first == ["INV-2026-0001", "INV-2026-0002"]
    assert second == ["INV-2027-0001", "INV-2027-0002"]
    rows = counter_rows(platform, "Case.CaseNumber")
    assert {k: v for k, v in rows.items() if k} == {"INV-2026-": 3, "INV-2027-": 3}


def _put_rows(p: Platform, rows: dict[str, int]) -> None:
    """Rows as an older version wrote them (it kept no `keys:` entry in the setup state)."""
    with p.begin() as conn:
        conn.execute(sa.delete(state.setup_state).where(state.setup_state.c.name.startswith(state.KEYS)))
        for key, value in rows.items():
            conn.execute(
                sa.insert(counter_table).values(
                    field_id=CONTRACT,
                    scope_key=key,
                    next_value=value,
                    created_date=DAY,
                    last_modified_date=DAY,
                )
            )


def test_old_token_value_rows_move_to_rendered_keys(platform: Platform) -> None:
    """Old `|` rows merge into the new keys with GREATEST; a new row the engine made meanwhile
    (the lost race) is raised, never lowered; a re-run changes nothing."""
    _put_rows(
        platform,
        {
            "SG|CSA|20260417": 43,  # no new row yet: moved as it is
            "US|CSA|20260417": 5,  # the engine already went further on the new key: kept at 9
            "SG|NDA|20260417": 30,  # the engine created the new key lower: raised to 30
            "DE|a\\|b|20260417": 7,  # an escaped `|` inside a value
            "US-CSA-260417-": 9,
            "SG-NDA-260417-": 2,
        },
    )
    notes = migrate_keys(platform.db)
    assert len(notes) == 1 and "4 per_prefix counter row(s)" in notes[0]
    want = {"SG-CSA-260417-": 43, "US-CSA-260417-": 9, "SG-NDA-260417-": 30, "DE-a|b-260417-": 7}
    assert counter_rows(platform, CONTRACT) == want
    assert migrate_keys(platform.db) == []  # recorded as done: skipped
    assert counter_rows(platform, CONTRACT) == want
    with platform.begin() as conn:  # and when the record is lost, a second pass changes nothing
        conn.execute(sa.delete(state.setup_state).where(state.setup_state.c.name.startswith(state.KEYS)))
    assert migrate_keys(platform.db) == []
    assert counter_rows(platform, CONTRACT) == want
    sg = _account(platform, "SG")
    number = platform.records.insert("Contract", {"AccountId": sg, "RecordTypeId": CSA})
    assert number["Contract_Number__c"] == "SG-CSA-260417-43"
