"""Dates are instants, on every backend: a datetime with an offset is stored as that instant and read
back equal on every write path, a naive datetime means UTC, a `date` field of a custom object is a
DATE column holding a calendar day, and a backfill dates a row exactly as an insert does (the
record's own date field read as UTC, or the row's own CreatedDate)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from typing import Any

import pytest
import sqlalchemy as sa

from autonumber.errors import RecordError
from autonumber.objects.custom import add_object
from autonumber.runtime import Platform
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


def test_a_date_field_is_a_date_column_holding_a_day(platform: Platform) -> None:
    columns = {c["name"]: c["type"] for c in sa.inspect(platform.db).get_columns("Trip")}
    assert isinstance(columns["Day"], sa.Date) and not isinstance(columns["Day"], sa.DateTime), columns
    assert isinstance(columns["At"], sa.DateTime), columns
    record = platform.records.insert("Trip", {"Day": "2026-04-18", "Name": "text"})
    assert record["Day"] == platform.records.get("Trip", record["Id"])["Day"] == "2026-04-18"
    platform.records.insert(
        "Trip", {"Day": "2026-04-20T23:30:00-05:00", "Name": "written"}
    )  # its day as written
    assert raw(platform, "Day") == {
        "text": date(2026, 4, 18),
        "written": date(2026, 4, 20),
    }
    with pytest.raises(RecordError, match=r"Trip\.Day must be an ISO 8601 date"):
        platform.records.insert("Trip", {"Day": "18/04/2026"})
