"""Dates are instants, on every backend: a datetime with an offset is stored as that instant and read
back equal on every write path, a naive datetime means UTC, a `date` field of a custom object is a
DATE column holding a calendar day, and a backfill dates a row exactly as an insert does (the
record's own date field read as UTC, or the row's own CreatedDate)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from autonumber.errors import RecordError
from autonumber.objects.custom import add_object
from autonumber.runtime import Platform
from autonumber.web import create_app
from support import make_platform, run_cli

FORMAT = "X-{YYYY}{MM}{DD}-{0000}"
TOKYO = "Asia/Tokyo"
GIVEN = "2026-04-18T01:30:00+09:00"
"""16:30 UTC on the 17th: the 18th on Tokyo's calendar."""
INSTANT = "2026-04-17T16:30:00+00:00"


@pytest.fixture
def platform(db_url: str) -> Iterator[Platform]:
    """A custom object Trip with a datetime, a date and a text field."""
    p = make_platform(db_url)
    with p.db.begin() as conn:
        add_object(conn, "Trip", ["At:datetime", "Day:date", "Name:text(40)"])
    p.catalog.refresh()
    yield p
    p.close()


def add_field(p: Platform, db_url: str, capsys: pytest.CaptureFixture[str], source: str, *more: str) -> str:
    """Trip.No per day on `--time-zone` (Tokyo unless given), dated by `source`."""
    zone = [] if "--time-zone" in more else ["--time-zone", TOKYO]
    add = ["field", "add", "Trip", "No", "--format", FORMAT, "--scope", "per_day", *zone, *more]
    code, out = run_cli([*add, "--date-source", source, "--db", db_url], capsys)
    assert code == 0, out
    p.catalog.refresh()
    return out


def raw(p: Platform, column: str) -> dict[str, Any]:
    """Each Trip's `column` as the database holds it, by Name (no conversion of the product's)."""
    table = sa.Table("Trip", sa.MetaData(), autoload_with=p.db)
    with p.db.connect() as conn:
        return {str(n): v for n, v in conn.execute(sa.select(table.c.Name, table.c[column]))}


def by_name(p: Platform) -> dict[str, dict[str, Any]]:
    return {str(r["Name"]): r for r in p.records.list("Trip", limit=100)}


def test_a_datetime_with_an_offset_is_stored_as_that_instant_on_every_path(
    platform: Platform, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    add_field(platform, db_url, capsys, "At")
    echoed = [platform.records.insert("Trip", {"At": GIVEN, "Name": "insert"})]
    echoed += platform.records.insert_many("Trip", [{"At": GIVEN, "Name": "insert_many"}])
    aware = datetime(2026, 4, 18, 1, 30, tzinfo=ZoneInfo(TOKYO))
    echoed.append(platform.records.insert("Trip", {"At": aware, "Name": "python"}))
    path = tmp_path / "trips.jsonl"
    path.write_text(json.dumps({"At": GIVEN, "Name": "import"}) + "\n", encoding="utf-8")
    code, out = run_cli(["records", "insert-many", "Trip", "--file", str(path), "--db", db_url], capsys)
    assert code == 0, out
    with TestClient(create_app(platform)) as client:
        r = client.post("/api/records/Trip", json={"At": GIVEN, "Name": "http"})
        assert r.status_code == 201, r.text
        echoed.append(r.json())
        assert client.get(f"/api/records/Trip/{r.json()['Id']}").json()["At"] == INSTANT
    assert {(r["At"], r["No"][:11]) for r in echoed} == {(INSTANT, "X-20260418-")}
    names = ("insert", "insert_many", "python", "import", "http")
    stored = by_name(platform)
    assert {n: stored[n]["At"] for n in names} == dict.fromkeys(names, INSTANT)
    assert {platform.records.get("Trip", stored[n]["Id"])["At"] for n in names} == {INSTANT}
    assert raw(platform, "At") == dict.fromkeys(names, datetime(2026, 4, 17, 16, 30))
    changed = platform.records.update("Trip", stored["insert"]["Id"], {"At": "2026-04-18T09:00:00+09:00"})
    assert changed["At"] == platform.records.get("Trip", changed["Id"])["At"] == "2026-04-18T00:00:00+00:00"
    assert raw(platform, "At")["insert"] == datetime(2026, 4, 18, 0, 0)


def test_a_naive_datetime_means_utc(
    platform: Platform, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    add_field(platform, db_url, capsys, "At")
    record = platform.records.insert("Trip", {"At": "2026-04-17T20:00:00", "Name": "naive"})
    assert record["No"] == "X-20260418-0001"  # 20:00 UTC is 05:00 on the 18th in Tokyo
    assert record["At"] == platform.records.get("Trip", record["Id"])["At"] == "2026-04-17T20:00:00+00:00"
    moment = platform.records.insert("Trip", {"At": datetime(2026, 4, 17, 14, 59), "Name": "python"})
    assert moment["No"] == "X-20260417-0001"  # 23:59 in Tokyo
    assert raw(platform, "At") == {
        "naive": datetime(2026, 4, 17, 20, 0),
        "python": datetime(2026, 4, 17, 14, 59),
    }


def test_a_date_field_is_a_date_column_holding_a_day(platform: Platform) -> None:
    columns = {c["name"]: c["type"] for c in sa.inspect(platform.db).get_columns("Trip")}
    assert isinstance(columns["Day"], sa.Date) and not isinstance(columns["Day"], sa.DateTime), columns
    assert isinstance(columns["At"], sa.DateTime), columns
    record = platform.records.insert("Trip", {"Day": "2026-04-18", "Name": "text"})
    assert record["Day"] == platform.records.get("Trip", record["Id"])["Day"] == "2026-04-18"
    platform.records.insert("Trip", {"Day": date(2026, 4, 19), "Name": "python"})
    platform.records.insert(
        "Trip", {"Day": "2026-04-20T23:30:00-05:00", "Name": "written"}
    )  # its day as written
    assert raw(platform, "Day") == {
        "text": date(2026, 4, 18),
        "python": date(2026, 4, 19),
        "written": date(2026, 4, 20),
    }
    with pytest.raises(RecordError, match=r"Trip\.Day must be an ISO 8601 date"):
        platform.records.insert("Trip", {"Day": "18/04/2026"})


@pytest.mark.parametrize(
    ("source", "value", "zone"),
    [("At", "2026-04-17T20:00:00+00:00", TOKYO), ("Day", "2026-04-18", "America/Los_Angeles")],
)
def test_backfill_dates_a_row_as_insert_does(
    platform: Platform, db_url: str, capsys: pytest.CaptureFixture[str], source: str, value: str, zone: str
) -> None:
    """The same value dates the same day whether the row is backfilled or inserted afterwards."""
    old = platform.records.insert("Trip", {source: value, "Name": "before"})
    out = add_field(platform, db_url, capsys, source, "--time-zone", zone, "--backfill")
    assert "backfilled 1 row(s)" in out, out
    new = platform.records.insert("Trip", {source: value, "Name": "after"})
    assert platform.records.get("Trip", old["Id"])["No"] == "X-20260418-0001"
    assert new["No"] == "X-20260418-0002"


def test_backfill_dates_each_row_by_its_own_created_date(
    platform: Platform, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = platform.records.insert_many("Trip", [{"Name": "new year"}, {"Name": "second"}])
    table = platform.catalog.current().table("Trip")
    with platform.db.begin() as conn:  # rows that were created long before the field existed
        for row, created in zip(
            rows, (datetime(2025, 12, 31, 16, 0), datetime(2026, 1, 2, 3, 0)), strict=True
        ):
            conn.execute(sa.update(table).where(table.c.Id == row["Id"]).values(CreatedDate=created))
    out = add_field(platform, db_url, capsys, "CreatedDate", "--backfill")
    assert "backfilled 2 row(s)" in out, out
    numbers = {name: r["No"] for name, r in by_name(platform).items()}
    assert numbers == {"new year": "X-20260101-0001", "second": "X-20260102-0001"}  # Tokyo's days
    new = platform.records.insert("Trip", {"Name": "today"})
    day = datetime.fromisoformat(new["CreatedDate"]).astimezone(ZoneInfo(TOKYO))
    assert new["No"] == f"X-{day:%Y%m%d}-0001"


def test_backfill_by_created_date_refuses_a_row_without_one(
    platform: Platform, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = platform.records.insert_many("Trip", [{"Name": "dated"}, {"Name": "undated"}])
    table = platform.catalog.current().table("Trip")
    with platform.db.begin() as conn:  # written by another program without a CreatedDate
        conn.execute(sa.update(table).where(table.c.Id == rows[1]["Id"]).values(CreatedDate=None))
    add_field(platform, db_url, capsys, "CreatedDate")
    code, out = run_cli(["field", "backfill", "Trip", "No", "--db", db_url], capsys)
    assert code != 0 and "Trip.No is dated by Trip.CreatedDate" in out and rows[1]["Id"] in out, out
    assert out.count("\n") == 1, out
    assert {r["No"] for r in by_name(platform).values()} == {None}
