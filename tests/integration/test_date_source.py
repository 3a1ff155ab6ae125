"""A rule dated by the record itself (docs/formats.md "date source"), on every backend:
`--date-source InvoiceDate` through the CLI, the library's insert / insert_many, bulk import and
HTTP; a record without the date fails closed with one line, writing nothing and taking no number."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

import autonumber
from autonumber.db.tables import counter_table
from autonumber.errors import RecordError
from autonumber.objects.custom import add_object
from autonumber.rules.verify import verify
from autonumber.runtime import Platform
from autonumber.web import create_app
from support import bootstrap_url, run_cli, run_together

FIELD = "Bill.BillNo"
FORMAT = "INV-{YYYY}{MM}-{0000}"


@pytest.fixture
def platform(db_url: str, capsys: pytest.CaptureFixture[str]) -> Iterator[Platform]:
    """A custom object Bill with an InvoiceDate, numbered per month of that date."""
    bootstrap_url(db_url)
    p = autonumber.connect(db_url)
    with p.db.begin() as conn:
        add_object(conn, "Bill", ["InvoiceDate:date", "PaidAt:datetime", "Name:text(40)"])
    add = ["field", "add", "Bill", "BillNo", "--format", FORMAT, "--scope", "per_prefix"]
    code, out = run_cli([*add, "--date-source", "InvoiceDate", "--db", db_url], capsys)
    assert code == 0, out
    assert "dated by InvoiceDate" in out
    p.catalog.refresh()
    yield p
    p.close()


def counters(p: Platform) -> dict[str, int]:
    t = counter_table
    with p.db.connect() as conn:
        rows = conn.execute(sa.select(t.c.scope_key, t.c.next_value).where(t.c.field_id == FIELD))
        return {k: int(n) for k, n in rows}


def bill(p: Platform, **fields: object) -> str:
    return str(p.records.insert("Bill", dict(fields))["BillNo"])


def test_invoices_are_numbered_by_their_own_date(platform: Platform) -> None:
    assert bill(platform, InvoiceDate="2025-12-31") == "INV-202512-0001"
    assert bill(platform, InvoiceDate="2026-01-05") == "INV-202601-0001"
    assert bill(platform, InvoiceDate="2026-01-31T23:59:00") == "INV-202601-0002"
    batch = platform.records.insert_many(
        "Bill", [{"InvoiceDate": "2026-01-07"}, {"InvoiceDate": "2025-12-01"}, {"InvoiceDate": "2026-02-01"}]
    )
    assert [r["BillNo"] for r in batch] == ["INV-202601-0003", "INV-202512-0002", "INV-202602-0001"]
    assert counters(platform) == {"INV-202512-": 3, "INV-202601-": 4, "INV-202602-": 2}
    assert verify(platform.db) == []


def test_a_missing_date_fails_closed_and_takes_no_number(platform: Platform) -> None:
    bill(platform, InvoiceDate="2026-01-05")
    before, rows = counters(platform), platform.records.count("Bill")
    for data in ({"Name": "no date"}, {"InvoiceDate": None}, {"InvoiceDate": ""}):
        with pytest.raises(RecordError) as info:
            platform.records.insert("Bill", data)
        assert "\n" not in str(info.value) and "Bill.InvoiceDate" in str(info.value)
    with pytest.raises(RecordError):  # one record without a date refuses the whole batch
        platform.records.insert_many("Bill", [{"InvoiceDate": "2026-01-06"}, {"Name": "none"}])
    assert (counters(platform), platform.records.count("Bill")) == (before, rows)
    assert bill(platform, InvoiceDate="2026-01-06") == "INV-202601-0002"  # nothing was consumed


def test_date_source_is_validated_and_changed_by_field_set(
    platform: Platform, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["field", "set", "Bill", "BillNo", "--format", FORMAT, "--db", db_url]
    for source, needle in (("Name", "Bill.Name is a text field"), ("Nope", "Bill has no field Nope")):
        code, out = run_cli([*base, "--date-source", source], capsys)
        assert code == 2 and out.count("\n") == 1 and needle in out, out
    code, out = run_cli(["field", "show", FIELD, "--json", "--db", db_url], capsys)
    assert json.loads(out)["date_source"] == "InvoiceDate"
    code, out = run_cli([*base, "--date-source", "PaidAt", "--time-zone", "Asia/Tokyo"], capsys)
    assert code == 0, out
    platform.catalog.refresh()
    paid = "2026-01-31T16:00:00+00:00"  # 1 February in Tokyo
    assert bill(platform, PaidAt=paid) == "INV-202602-0001"
    code, out = run_cli([*base, "--date-source", "clock"], capsys)
    assert code == 0, out
    platform.catalog.refresh()
    with platform.db.connect() as conn:
        before = platform.dialect.utc_now(conn)
    number = bill(platform)  # no date needed: the database clock dates it
    with platform.db.connect() as conn:
        after = platform.dialect.utc_now(conn)
    assert number[:10] in {f"INV-{d:%Y%m}" for d in (before, after)}


def test_bulk_import_uses_each_lines_date(platform: Platform, db_url: str, tmp_path: Path) -> None:
    lines = [{"InvoiceDate": d} for d in ("2025-12-31", "2026-01-05", "2025-12-30", "2026-01-05")]
    path = tmp_path / "bills.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    with pytest.raises(SystemExit) as info:
        from autonumber.cli import main

        main(["records", "insert-many", "Bill", "--file", str(path), "--db", db_url])
    assert info.value.code in (0, None)
    stored = sorted(r["BillNo"] for r in platform.records.list("Bill", limit=10))
    assert stored == ["INV-202512-0001", "INV-202512-0002", "INV-202601-0001", "INV-202601-0002"]


def test_http_insert_and_admin_change(platform: Platform) -> None:
    with TestClient(create_app(platform, admin_token="s3cret-admin-token-for-tests")) as client:
        r = client.post("/api/records/Bill", json={"InvoiceDate": "2025-12-31"})
        assert r.status_code == 201, r.text
        assert r.json()["BillNo"] == "INV-202512-0001"
        r = client.post("/api/records/Bill", json={"Name": "no date"})
        assert r.status_code == 422 and "Bill.InvoiceDate" in r.json()["error"]
        headers = {"Authorization": "Bearer s3cret-admin-token-for-tests"}
        r = client.put(
            f"/api/autonumber/fields/{FIELD}", json={"format": FORMAT, "date_source": "Name"}, headers=headers
        )
        assert r.status_code == 422 and "text field" in r.json()["error"], r.text
        r = client.put(
            f"/api/autonumber/fields/{FIELD}",
            json={"format": FORMAT, "date_source": "PaidAt"},
            headers=headers,
        )
        assert r.status_code == 200 and r.json()["date_source"] == "PaidAt", r.text


def test_spec_operations_set_the_date_source(
    platform: Platform, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ops = [
        "- op: add_autonumber_field",
        "  object: Bill",
        "  field: PaidNo",
        "  format: 'P-{YYYY}{MM}{DD}-{000}'",
        "  scope: per_day",
        "  date_source: PaidAt",
        "- op: set_rule",
        "  object: Bill",
        "  field: BillNo",
        f"  format: '{FORMAT}'",
        "  date_source: CreatedDate",
    ]
    path = tmp_path / "dated.md"
    path.write_text(
        "---\napiVersion: data-spec/v1\nid: 2026-06-01-i26-dated\nscope: staging-then-production\n"
        "status: pending\n---\n\n## Operations\n\n```yaml\n" + "\n".join(ops) + "\n```\n",
        encoding="utf-8",
    )
    code, out = run_cli(["spec", "apply", str(path), "--env", "production", "--db", db_url], capsys)
    assert code == 0, out
    platform.catalog.refresh()
    assert platform.engine.rule("Bill.PaidNo").date_field == "PaidAt"
    stored = platform.records.insert("Bill", {"PaidAt": "2024-02-29T10:00:00+00:00"})
    assert stored["PaidNo"] == "P-20240229-001"
    created = str(stored["CreatedDate"])  # BillNo: dated by the record's CreatedDate, set on insert
    assert stored["BillNo"].startswith(f"INV-{created[:4]}{created[5:7]}-")


def test_concurrent_writers_with_many_dates_never_share_a_number(platform: Platform) -> None:
    """Eight threads insert singles and batches dated across three months: every month's numbers
    are unique and contiguous from 1, and no record's number shows another month."""
    months = ("2025-11", "2025-12", "2026-01")

    def work(t: int) -> None:
        for i in range(6):
            dates = [f"{months[(t + i + k) % 3]}-{1 + (t * 7 + k) % 28:02d}" for k in range(1 + i % 3)]
            if len(dates) == 1:
                platform.records.insert("Bill", {"InvoiceDate": dates[0]})
            else:
                platform.records.insert_many("Bill", [{"InvoiceDate": d} for d in dates])

    assert run_together(work, 8) == []
    rows = platform.records.list("Bill", limit=1000)
    by_month: dict[str, list[int]] = {}
    for row in rows:
        shown = str(row["InvoiceDate"])[:7].replace("-", "")
        assert row["BillNo"].startswith(f"INV-{shown}-"), row
        by_month.setdefault(shown, []).append(int(row["BillNo"][-4:]))
    assert sum(len(v) for v in by_month.values()) == len(rows) == 8 * (1 + 2 + 3 + 1 + 2 + 3)
    for numbers in by_month.values():
        assert sorted(numbers) == list(range(1, len(numbers) + 1))
