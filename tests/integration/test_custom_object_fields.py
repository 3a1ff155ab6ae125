"""Custom objects' lookups are checked (a `ref(X)` value must be a stored X record, in the insert's
own transaction, before any number is taken) and `object field add` adds a plain field, on every
backend; the standard pack's lookups keep accepting any value."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

import autonumber
from autonumber.db.tables import counter_table, system_field, system_object
from autonumber.errors import RecordError
from autonumber.web import create_app
from support import bootstrap_url, run_cli


@pytest.fixture
def engine(engine: Engine, db_url: str) -> Engine:
    """The shared engine, bootstrapped (naming `db_url` keeps the per-backend parameters)."""
    bootstrap_url(db_url)
    return engine


def snapshot_rows(engine: Engine) -> tuple[object, ...]:
    """Every metadata and counter row, to prove a refused command changed nothing."""
    with engine.connect() as conn:
        return tuple(
            sorted(map(tuple, conn.execute(sa.select(t))), key=repr)
            for t in (system_object, system_field, counter_table)
        )


def shipments(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    fields = ["Name:text(40)", "AccountId:ref(Account)", "ParentId:ref(Shipment__c)"]
    argv = ["object", "add", "Shipment__c", *[a for f in fields for a in ("--field", f)], "--db", db_url]
    code, out = run_cli(argv, capsys)
    assert code == 0, out
    argv = ["field", "add", "Shipment__c", "Shipment_No__c", "--format", "SHP-{000000}", "--db", db_url]
    code, out = run_cli(argv, capsys)
    assert code == 0, out


def test_a_lookup_to_a_missing_record_is_refused_before_a_number_is_taken(
    engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    shipments(db_url, capsys)
    with autonumber.connect(db_url) as p:
        acc = p.records.insert("Account", {"Name": "Acme"})["Id"]
        with pytest.raises(RecordError) as refused:
            p.records.insert("Shipment__c", {"Name": "box", "AccountId": "nope"})
        message = str(refused.value)
        assert "Shipment__c.AccountId" in message and "'nope'" in message and "Account" in message
        with pytest.raises(RecordError, match="'nope' is not the Id of a stored Account"):
            p.records.insert_many("Shipment__c", [{"AccountId": acc}, {"AccountId": "nope"}])
        code, out = run_cli(
            ["records", "insert", "Shipment__c", "--data", json.dumps({"AccountId": "gone"}), "--db", db_url],
            capsys,
        )
        assert code == 2 and "'gone'" in out and len(out.strip().splitlines()) == 1, out
        with TestClient(create_app(p)) as api:
            r = api.post("/api/records/Shipment__c", json={"AccountId": "missing"})
            assert r.status_code == 422 and "'missing'" in r.text, r.text
        assert p.records.count("Shipment__c") == 0
        first = p.records.insert("Shipment__c", {"Name": "box", "AccountId": acc})
        assert first["Shipment_No__c"] == "SHP-000001"  # no refused insert consumed a number
        child = p.records.insert("Shipment__c", {"ParentId": first["Id"], "AccountId": None})
        assert child["Shipment_No__c"] == "SHP-000002"  # a lookup to a custom object, and an empty one
        with pytest.raises(
            RecordError, match=r"Shipment__c\.ParentId: 'x' is not the Id of a stored Shipment__c"
        ):
            p.records.insert("Shipment__c", {"ParentId": "x"})
        with pytest.raises(RecordError, match=r"Shipment__c\.AccountId"):
            p.records.update("Shipment__c", first["Id"], {"AccountId": "nope"})
        assert p.records.get("Shipment__c", first["Id"])["AccountId"] == acc


def test_the_standard_packs_lookups_stay_unchecked(engine: Engine, db_url: str) -> None:
    with autonumber.connect(db_url) as p:
        made = p.records.insert("Opportunity", {"Name": "deal", "AccountId": "made-up"})
        assert p.records.get("Opportunity", made["Id"])["AccountId"] == "made-up"


def test_object_field_add_adds_a_plain_field_the_catalog_sees(
    engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    shipments(db_url, capsys)
    with autonumber.connect(db_url) as p:
        old = p.records.insert("Shipment__c", {"Name": "before"})
    carrier = ["object", "field", "add", "Shipment__c", "Carrier:text(20)", "--db", db_url]
    code, out = run_cli(carrier, capsys)
    assert code == 0 and "field added" in out, out
    code, out = run_cli(
        ["object", "field", "add", "Shipment__c", "Owner:ref(Account)", "--db", db_url], capsys
    )
    assert code == 0, out
    code, out = run_cli(carrier, capsys)
    assert code == 0 and "unchanged" in out, out
    with autonumber.connect(db_url) as p:
        info = p.catalog.current().get_field("Shipment__c", "Carrier")
        assert info is not None and (info.type, info.max_length) == ("text", 20)
        new = p.records.insert("Shipment__c", {"Name": "after", "Carrier": "DHL"})
        assert new["Carrier"] == "DHL" and new["Shipment_No__c"] == "SHP-000002"
        assert p.records.get("Shipment__c", old["Id"])["Carrier"] is None
        with pytest.raises(RecordError, match=r"Shipment__c\.Owner: 'nope'"):
            p.records.insert("Shipment__c", {"Owner": "nope"})
        with pytest.raises(RecordError, match="at most 20 fit"):
            p.records.insert("Shipment__c", {"Carrier": "x" * 21})


@pytest.mark.parametrize(
    ("object_name", "field", "match"),
    [
        ("Account", "Extra:number", "Account is not a custom object"),
        ("invoices_obj", "Extra:number", "invoices_obj is not a custom object"),
        ("Nope__c", "Extra:number", "unknown object"),
        ("Shipment__c", "Name:number", "already has a field named Name"),
        ("Shipment__c", "name:text(5)", "already has a field named name"),
        ("Shipment__c", "X:varchar(3)", "unknown type"),
        ("Shipment__c", "X:text", "text needs a length"),
        ("Shipment__c", "X:ref(Nope)", "unknown object 'Nope'"),
        ("Shipment__c", "CreatedDate:date", "set by the platform"),
        ("Shipment__c", "bad name:number", "invalid"),
    ],
)
def test_object_field_add_refuses_in_one_line_and_changes_nothing(
    engine: Engine,
    db_url: str,
    capsys: pytest.CaptureFixture[str],
    object_name: str,
    field: str,
    match: str,
) -> None:
    shipments(db_url, capsys)
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE invoices (id INTEGER PRIMARY KEY, customer VARCHAR(20))"))
    code, out = run_cli(["object", "adopt", "invoices_obj", "--table", "invoices", "--db", db_url], capsys)
    assert code == 0, out
    before = snapshot_rows(engine)
    columns = {c["name"] for c in sa.inspect(engine).get_columns("Shipment__c")}
    code, out = run_cli(["object", "field", "add", object_name, field, "--db", db_url], capsys)
    assert code == 2 and match in out and "Traceback" not in out, out
    assert len(out.strip().splitlines()) == 1, out
    assert snapshot_rows(engine) == before
    assert {c["name"] for c in sa.inspect(engine).get_columns("Shipment__c")} == columns
