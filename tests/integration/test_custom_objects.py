"""Custom objects (`object add`) and adopted application tables (`object adopt`) on every backend:
numbers through the CLI, the API and the console, cross-record tokens through a `ref` field, an
adopted table that continues its own sequence and refuses an unreadable value before changing anything,
lookups checked against their target, and `object field add`."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

import autonumber
from autonumber.cli import main
from autonumber.db.tables import counter_table, system_field, system_object
from autonumber.errors import AutonumberError, RecordError
from autonumber.web import create_app
from support import FormClient, bootstrap_url, run_cli

TOKEN = "t19-admin"


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


SHIPMENT = [
    "--field",
    "Name:text(80)",
    "--field",
    "AccountId:ref(Account)",
    "--field",
    "Weight:number",
    "--field",
    "ShipDate:date",
]


def test_custom_object_numbers_with_cross_record_token_through_cli_api_and_console(
    engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run_cli(["object", "add", "Shipment__c", *SHIPMENT, "--db", db_url], capsys)
    assert code == 0, out
    code, out = run_cli(
        [
            "field",
            "add",
            "Shipment__c",
            "Shipment_No__c",
            "--format",
            "SHP-{Account.BillingCountryCode}-{000000}",
            "--scope",
            "per_prefix",
            "--db",
            db_url,
        ],
        capsys,
    )
    assert code == 0, out
    with autonumber.connect(db_url) as p:
        acc = p.records.insert("Account", {"Name": "Acme", "BillingCountryCode": "SG"})["Id"]
        with FormClient(create_app(p, admin_token=TOKEN)) as api:
            code, out = run_cli(
                [
                    "records",
                    "insert",
                    "Shipment__c",
                    "--data",
                    json.dumps({"Name": "box", "AccountId": acc, "Weight": 2.5}),
                    "--db",
                    db_url,
                ],
                capsys,
            )
            assert code == 0, out
            assert json.loads(out.strip().splitlines()[-1])["Shipment_No__c"] == "SHP-SG-000001"
            r = api.post("/api/records/Shipment__c", json={"Name": "crate", "AccountId": acc})
            assert r.status_code == 201, r.text
            assert r.json()["Shipment_No__c"] == "SHP-SG-000002"
            page = api.post(
                "/o/Shipment__c/new",
                data={"Name": "pallet", "AccountId": acc},
                headers={"Accept": "text/html"},
                follow_redirects=False,
            )
            assert page.status_code == 303, page.text
            view = api.get(page.headers["location"], headers={"Accept": "text/html"}).text
            assert re.search(r"SHP-SG-000003", view)
        numbers = sorted(r["Shipment_No__c"] for r in p.records.list("Shipment__c"))
    assert numbers == ["SHP-SG-000001", "SHP-SG-000002", "SHP-SG-000003"]
    code, out = run_cli(["object", "add", "Shipment__c", *SHIPMENT, "--db", db_url], capsys)
    assert code == 0 and "unchanged" in out  # the same definition again is a no-op


def test_console_rules_page_creates_an_object_the_api_serves_at_once(db_url: str, engine: Engine) -> None:
    with (
        autonumber.connect(db_url) as p,
        FormClient(create_app(p, admin_token=TOKEN), follow_redirects=False) as web,
    ):
        assert web.post("/login", data={"token": TOKEN}).status_code == 303
        assert "New custom object" in web.get("/rules", headers={"Accept": "text/html"}).text
        r = web.post(
            "/rules/objects/new",
            data={"object": "Crate__c", "fields": "Label:text(20)\nAccountId:ref(Account)"},
        )
        assert r.status_code == 303 and r.headers["location"] == "/o/Crate__c"
        made = web.post("/api/records/Crate__c", json={"Label": "c1"})
        assert made.status_code == 201, made.text
        bad = web.post("/rules/objects/new", data={"object": "Bad__c", "fields": "X:ref(Nope)"})
        assert "unknown object" in web.get(bad.headers["location"], headers={"Accept": "text/html"}).text


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        (["--field", "Name:text"], "text needs a length"),
        (["--field", "Name:varchar(9)"], "unknown type"),
        (["--field", "bad name:text(5)"], "invalid"),
        (["--field", "A:ref(Nope)"], "unknown object 'Nope'"),
        (["--field", "Id:text(5)"], "set by the platform"),
        (["--field", "A:number", "--field", "a:number"], "given twice"),
    ],
)
def test_object_add_refuses_bad_definitions_and_writes_nothing(
    engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str], fields: list[str], match: str
) -> None:
    before = snapshot_rows(engine)
    code, out = run_cli(["object", "add", "Thing__c", *fields, "--db", db_url], capsys)
    assert code == 2 and match in out and "Traceback" not in out and len(out.strip().splitlines()) == 1
    assert snapshot_rows(engine) == before
    assert "Thing__c" not in sa.inspect(engine).get_table_names()


def test_object_add_refuses_an_existing_table(
    engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run_cli(["object", "add", "_System_Lock", "--field", "A:number", "--db", db_url], capsys)
    assert code == 2 and "invalid" in out
    code, out = run_cli(["object", "add", "Account", "--field", "Other:number", "--db", db_url], capsys)
    assert code == 2 and "already exists" in out


def invoices(engine: Engine, values: list[str | None]) -> sa.Table:
    """The application's own table: an integer autoincrement key and its own invoice numbers."""
    md = sa.MetaData()
    table = sa.Table(
        "invoices",
        md,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("customer", sa.String(40)),
        sa.Column("invoice_no", sa.String(20)),
    )
    md.create_all(engine)
    with engine.begin() as conn:
        for i, v in enumerate(values):
            conn.execute(sa.insert(table).values(customer=f"c{i}", invoice_no=v))
    return table


def unique_on(engine: Engine, column: str) -> bool:
    inspector = sa.inspect(engine)
    idx = [i for i in inspector.get_indexes("invoices") if i.get("unique")]
    cons = inspector.get_unique_constraints("invoices")
    return any(list(x["column_names"]) == [column] for x in (*idx, *cons))


def test_adopted_table_continues_its_sequence_through_library_cli_and_api(
    engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    table = invoices(engine, ["INV-000041", "INV-000042", None])
    code, out = run_cli(["object", "adopt", "Invoice__c", "--table", "invoices", "--db", db_url], capsys)
    assert code == 0, out
    code, out = run_cli(
        ["field", "add", "Invoice__c", "invoice_no", "--format", "INV-{000000}", "--db", db_url], capsys
    )
    assert code == 0, out
    assert unique_on(engine, "invoice_no")
    code, out = run_cli(
        ["field", "add", "Invoice__c", "invoice_no", "--format", "INV-{000000}", "--db", db_url], capsys
    )
    assert code == 0, out  # again: the rule and the index are already there
    with autonumber.connect(db_url) as p:
        first = p.records.insert("Invoice__c", {"customer": "lib"})
        assert first["invoice_no"] == "INV-000043" and isinstance(first["id"], int)
        assert p.records.get("Invoice__c", str(first["id"]))["customer"] == "lib"
        code, out = run_cli(
            ["records", "insert", "Invoice__c", "--data", '{"customer": "cli"}', "--db", db_url], capsys
        )
        assert code == 0, out
        assert json.loads(out.strip().splitlines()[-1])["invoice_no"] == "INV-000044"
        with engine.begin() as conn:  # the application keeps inserting rows of its own
            conn.execute(sa.insert(table).values(customer="app"))
        with FormClient(create_app(p, admin_token=TOKEN)) as api:
            r = api.post("/api/records/Invoice__c", json={"customer": "api"})
            assert r.status_code == 201, r.text
            assert r.json()["invoice_no"] == "INV-000045"
            got = api.get(f"/api/records/Invoice__c/{r.json()['id']}")
            assert got.status_code == 200 and got.json()["customer"] == "api"
        batch = p.records.insert_many("Invoice__c", [{"customer": f"b{i}"} for i in range(3)])
        assert [b["invoice_no"] for b in batch] == ["INV-000046", "INV-000047", "INV-000048"]
    with engine.connect() as conn:
        cols = {c["name"] for c in sa.inspect(conn).get_columns("invoices")}
        stored = conn.execute(sa.select(table.c.invoice_no).order_by(table.c.id)).scalars().all()
    assert cols == {"id", "customer", "invoice_no"}  # nothing added to the application's table
    assert stored == [
        "INV-000041",
        "INV-000042",
        None,
        "INV-000043",
        "INV-000044",
        None,
        "INV-000045",
        "INV-000046",
        "INV-000047",
        "INV-000048",
    ]


def test_adopting_a_column_with_an_unreadable_value_changes_nothing(
    engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    invoices(engine, ["INV-000041", "INV-000042", "INV-42X"])
    code, out = run_cli(["object", "adopt", "Invoice__c", "--table", "invoices", "--db", db_url], capsys)
    assert code == 0, out
    before = snapshot_rows(engine)
    code, out = run_cli(
        ["field", "add", "Invoice__c", "invoice_no", "--format", "INV-{000000}", "--db", db_url], capsys
    )
    assert code == 2, out
    assert "'INV-42X'" in out and "row 3" in out and len(out.strip().splitlines()) == 1
    assert snapshot_rows(engine) == before
    assert not unique_on(engine, "invoice_no")


def test_adopting_a_column_with_duplicates_is_refused(
    engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    invoices(engine, ["INV-000041", "INV-000041"])
    assert run_cli(["object", "adopt", "Invoice__c", "--table", "invoices", "--db", db_url], capsys)[0] == 0
    before = snapshot_rows(engine)
    code, out = run_cli(
        ["field", "add", "Invoice__c", "invoice_no", "--format", "INV-{000000}", "--db", db_url], capsys
    )
    assert code == 2 and "'INV-000041' is stored more than once" in out
    assert snapshot_rows(engine) == before


def test_adopt_refuses_missing_table_and_keyless_table(
    engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run_cli(["object", "adopt", "X__c", "--table", "nope", "--db", db_url], capsys)
    assert code == 2 and "'nope' does not exist" in out
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE keyless (a INTEGER)"))
    code, out = run_cli(["object", "adopt", "X__c", "--table", "keyless", "--db", db_url], capsys)
    assert code == 2 and "single-column primary key" in out
    code, out = run_cli(["object", "adopt", "X__c", "--table", "Account", "--db", db_url], capsys)
    assert code == 2 and "already belongs to object Account" in out


def test_object_added_by_the_cli_is_served_by_a_running_api_and_console(
    engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with autonumber.connect(db_url, poll_interval=0.05) as p, TestClient(create_app(p)) as web:
        assert web.post("/api/records/Parcel__c", json={"Label": "x"}).status_code == 404
        code, out = run_cli(
            ["object", "add", "Parcel__c", "--field", "Label:text(20)", "--db", db_url], capsys
        )
        assert code == 0, out
        code, out = run_cli(
            ["field", "add", "Parcel__c", "Parcel_No__c", "--format", "P-{0000}", "--db", db_url], capsys
        )
        assert code == 0, out
        deadline = time.monotonic() + 30  # until a catalog poll has seen the new metadata version
        while (r := web.post("/api/records/Parcel__c", json={"Label": "x"})).status_code == 404:
            assert time.monotonic() < deadline, "the new object never became visible"
            time.sleep(0.05)
        assert r.status_code == 201 and r.json()["Parcel_No__c"] == "P-0001", r.text
        assert "Parcel__c" in web.get("/", headers={"Accept": "text/html"}).text


def test_object_add_failing_at_the_ddl_leaves_nothing_behind(
    engine: Engine, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MariaDB commits the metadata rows at CREATE TABLE: a failure there is compensated."""
    from autonumber.setup import pack

    real = pack.reconcile_tables

    def create_then_fail(conn: sa.Connection, tables: list[sa.Table]) -> list[str]:
        real(conn, tables)
        raise sa.exc.OperationalError("CREATE INDEX", {}, Exception("disk full"))

    before = snapshot_rows(engine)
    monkeypatch.setattr(pack, "reconcile_tables", create_then_fail)
    with pytest.raises(SystemExit) as exited:  # the CLI prints `error: database error: disk full`
        main(["object", "add", "Thing__c", "--field", "A:number", "--db", db_url])
    assert exited.value.code == 1
    assert snapshot_rows(engine) == before
    assert "Thing__c" not in sa.inspect(engine).get_table_names()


SPEC = """---
apiVersion: data-spec/v1
id: 2026-12-01-shipments
scope: staging-then-production
status: pending
---

## Operations

```yaml
- op: add_object
  object: Shipment__c
  fields: ["Name:text(80)", "AccountId:ref(Account)", "ShipDate:date"]
- op: add_autonumber_field
  object: Shipment__c
  field: Shipment_No__c
  format: 'SHP-{Account.BillingCountryCode}-{000000}'
  scope: per_prefix
- op: adopt_object
  object: Invoice__c
  table: invoices
- op: add_autonumber_field
  object: Invoice__c
  field: invoice_no
  format: 'INV-{000000}'
```
"""


def test_data_spec_adds_an_object_and_adopts_a_table(
    engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    invoices(engine, ["INV-000041", "INV-000042"])
    spec = tmp_path / "shipments.md"
    spec.write_text(SPEC, encoding="utf-8")
    code, out = run_cli(["spec", "apply", str(spec), "--env", "staging", "--db", db_url], capsys)
    assert code == 0, out
    with autonumber.connect(db_url) as p:
        acc = p.records.insert("Account", {"Name": "Acme", "BillingCountryCode": "SG"})["Id"]
        assert p.records.insert("Shipment__c", {"AccountId": acc})["Shipment_No__c"] == "SHP-SG-000001"
        assert p.records.insert("Invoice__c", {"customer": "x"})["invoice_no"] == "INV-000043"
    assert unique_on(engine, "invoice_no")


def test_a_dropped_adopted_table_quarantines_its_rules_only(
    engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    invoices(engine, ["INV-000041"])
    assert run_cli(["object", "adopt", "Invoice__c", "--table", "invoices", "--db", db_url], capsys)[0] == 0
    assert (
        run_cli(
            ["field", "add", "Invoice__c", "invoice_no", "--format", "INV-{000000}", "--db", db_url], capsys
        )[0]
        == 0
    )
    with engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE invoices"))
    with autonumber.connect(db_url) as p:
        assert "missing from the database" in p.catalog.current().quarantined["Invoice__c.invoice_no"]
        with pytest.raises(AutonumberError, match="missing from the database"):
            p.records.insert("Invoice__c", {"customer": "x"})
        assert p.records.insert("Case", {"Subject": "still numbered"})["CaseNumber"]


# Lookups of custom objects are checked (a `ref(X)` value must be a stored X record, in the insert's
# own transaction, before any number is taken); `object field add` adds a plain field.


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
