"""Record persistence: numbers are assigned, `RecordBeforeCreate` is published, then
the row is inserted; autonumber fields can be neither supplied nor changed; bad input is one
clear error and writes nothing."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from engine_support import CASE, ReservationLog, counter_rows

from autonumber.errors import RecordError, RecordNotFound, UnknownObject
from autonumber.events import RecordBeforeCreate
from autonumber.runtime import Platform


def test_supplied_autonumber_value_is_refused_and_nothing_is_written(platform: Platform) -> None:
    with pytest.raises(RecordError, match=r"Case\.CaseNumber is an autonumber field"):
        platform.records.insert("Case", {"Subject": "x", "CaseNumber": "00000042"})
    with pytest.raises(RecordError, match=r"record #2: Case\.CaseNumber"):
        platform.records.insert_many("Case", [{"Subject": "ok"}, {"CaseNumber": "1"}])
    assert platform.records.count("Case") == 0
    assert counter_rows(platform, CASE) == {"": 1}, "no number may be consumed by a refused insert"


def test_update_refuses_autonumber_fields_and_changes_others(platform: Platform) -> None:
    case = platform.records.insert("Case", {"Subject": "before"})
    with pytest.raises(RecordError, match="CaseNumber"):
        platform.records.update("Case", case["Id"], {"CaseNumber": "99999999"})
    updated = platform.records.update("Case", case["Id"], {"Subject": "after"})
    assert updated["Subject"] == "after"
    stored = platform.records.get("Case", case["Id"])
    assert updated["CaseNumber"] == case["CaseNumber"] == stored["CaseNumber"]
    with pytest.raises(RecordNotFound, match="nope"):
        platform.records.update("Case", "nope", {"Subject": "x"})


def test_unknown_object_and_field_are_clear_errors(platform: Platform) -> None:
    with pytest.raises(UnknownObject, match="'Widget'"):
        platform.records.insert("Widget", {"Name": "x"})
    with pytest.raises(RecordError, match="Case has no field 'Colour'"):
        platform.records.insert("Case", {"Subject": "x", "Colour": "red"})
    with pytest.raises(RecordError, match="Id is set by the platform"):
        platform.records.insert("Case", {"Id": "mine"})
    with pytest.raises(RecordNotFound, match="Case record 'missing' not found"):
        platform.records.get("Case", "missing")
    assert platform.records.count("Case") == 0


def test_before_create_sees_assigned_numbers_before_the_row_exists(platform: Platform) -> None:
    seen: list[tuple[list[str], int]] = []
    table = platform.catalog.current().table("Case")

    def on_create(event: RecordBeforeCreate) -> None:
        in_txn = event.conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()
        seen.append(([r["CaseNumber"] for r in event.records], in_txn))

    platform.events.subscribe(RecordBeforeCreate, on_create)
    platform.records.insert_many("Case", [{"Subject": "a"}, {"Subject": "b"}])
    assert seen == [(["00000001", "00000002"], 0)]


def test_a_failing_subscriber_aborts_the_insert(platform: Platform) -> None:
    def veto(event: RecordBeforeCreate) -> None:
        raise RuntimeError(f"veto {event.records[0]['CaseNumber']}")

    platform.events.subscribe(RecordBeforeCreate, veto)
    with pytest.raises(RuntimeError, match="veto 00000001"):
        platform.records.insert("Case", {"Subject": "x"})
    with pytest.raises(RuntimeError), platform.begin() as conn:
        platform.records.insert("Case", {"Subject": "y"}, conn=conn)
    assert platform.records.count("Case") == 0


def test_insert_many_reserves_once_per_field(platform: Platform) -> None:
    log = ReservationLog(platform)
    rows: list[dict[str, Any]] = [
        {"Account_Country_Code__c": "SG", "RecordTypeId": "rt_Contract_Services_Agreement"} for _ in range(25)
    ]
    stored = platform.records.insert_many("Contract", rows)
    assert len(log) == 2, "ContractNumber and Contract_Number__c: one reservation each"
    assert sorted(r.count for r in log.items) == [25, 25]
    assert [r["ContractNumber"] for r in stored] == [f"{i:08d}" for i in range(1, 26)]
    assert [r["Contract_Number__c"][-2:] for r in stored] == [f"{i:02d}" for i in range(1, 26)]
    assert {r["Id"] for r in stored} == {r["Id"] for r in platform.records.list("Contract", limit=100)}


def test_get_and_list_return_stored_records(platform: Platform) -> None:
    ids = [platform.records.insert("Case", {"Subject": f"s{i}"})["Id"] for i in range(3)]
    assert platform.records.get("Case", ids[1])["Subject"] == "s1"
    listed = platform.records.list("Case", limit=2)
    assert len(listed) == 2 and all(r["Id"] in ids for r in listed)
