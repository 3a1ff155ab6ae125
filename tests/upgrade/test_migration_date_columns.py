"""Migration 7: the `date` fields of custom objects, made as date-time columns by schema version 6,
become DATE columns holding each value's day (on SQLite, where a declared type is only a name with
the same NUMERIC affinity, the values are rewritten to `YYYY-MM-DD` and the name stays); an
adopted table keeps its types, whatever its metadata says; a second run changes nothing."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
import sqlalchemy as sa

import autonumber
from autonumber.commands import setup
from autonumber.db import create_engine, objects
from autonumber.db.objects import shared_object_table
from autonumber.db.tables import Timestamp6, schema_version_table, system_field
from autonumber.db.version import stamp
from autonumber.defaults import SCHEMA_VERSION
from autonumber.errors import SchemaTooOld, SetupError
from autonumber.format import FieldInfo
from autonumber.objects.adopt import adopt_table
from autonumber.objects.custom import add_object
from autonumber.setup.upgrade import MIGRATIONS, current_version
from support import bootstrap_url

DATE_COLUMNS = 7
DAYS = {"midnight": datetime(2026, 4, 18), "late": datetime(2026, 4, 18, 23, 30, 15, 250000), "none": None}


def _at_version_6(url: str, monkeypatch: pytest.MonkeyPatch, days: dict[str, Any]) -> None:
    """A current database set back to schema version 6 (release 0.4.0), whose custom object Trip
    was made then: its `date` field Day a date-time column holding `days` by Name; and an adopted
    table whose date-time column is registered as a `date` field."""
    bootstrap_url(url)
    made_by_0_4 = objects.column_type

    def column_type(field: FieldInfo) -> sa.types.TypeEngine[Any]:
        return Timestamp6 if field.type == "date" else made_by_0_4(field)

    engine = create_engine(url)
    legacy = sa.Table(
        "legacy_orders",
        sa.MetaData(),
        sa.Column("order_no", sa.Integer, primary_key=True),
        sa.Column("placed", Timestamp6),
    )
    try:
        with monkeypatch.context() as m, engine.begin() as conn:
            m.setattr(objects, "column_type", column_type)
            add_object(conn, "Trip", ["Day:date", "At:datetime", "Name:text(20)"])
        shared_object_table.cache_clear()  # the Table built with the old type
        trip = sa.Table("Trip", sa.MetaData(), autoload_with=engine)
        assert isinstance(trip.c.Day.type, sa.DateTime)
        with engine.begin() as conn:
            rows = [{"Id": f"t{i}", "Name": n, "Day": d} for i, (n, d) in enumerate(days.items())]
            conn.execute(sa.insert(trip), rows)
            legacy.create(conn)
            conn.execute(sa.insert(legacy).values(order_no=1, placed=datetime(2026, 4, 18, 23, 30)))
            adopt_table(conn, "LegacyOrder", "legacy_orders")
            f = system_field
            conn.execute(sa.update(f).where(f.c.Id == "LegacyOrder.placed").values(Type="date"))
            conn.execute(sa.delete(schema_version_table))
            for migration in MIGRATIONS[: DATE_COLUMNS - 1]:
                stamp(conn, migration.number, migration.name)
    finally:
        engine.dispose()


def _stored(url: str, table: str, column: str) -> tuple[sa.types.TypeEngine[Any], list[str]]:
    """The column's type as the database reports it, and its values as the driver returns them."""
    engine = create_engine(url)
    try:
        kind = {c["name"]: c["type"] for c in sa.inspect(engine).get_columns(table)}[column]
        with engine.connect() as conn:
            values = conn.execute(sa.select(sa.column(column)).select_from(sa.table(table))).scalars()
            return kind, sorted(str(v) for v in values)
    finally:
        engine.dispose()


def test_a_version_6_custom_object_gets_date_columns_keeping_each_day(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _at_version_6(db_url, monkeypatch, DAYS)
    engine = create_engine(db_url)
    assert current_version(engine) == DATE_COLUMNS - 1
    with pytest.raises(SchemaTooOld):  # refused until upgraded
        autonumber.connect(db_url)
    changes = setup.upgrade_schema(db_url)
    assert any(line.startswith("column Trip.Day: ") for line in changes), changes
    assert not any("Trip.At" in line or "legacy_orders" in line for line in changes), changes
    assert f"schema version {DATE_COLUMNS}: date fields of custom objects are DATE columns" in changes
    assert current_version(engine) == SCHEMA_VERSION
    engine.dispose()
    kind, values = _stored(db_url, "Trip", "Day")
    assert values == ["2026-04-18", "2026-04-18", "None"]
    if not db_url.startswith("sqlite"):  # SQLite keeps the declared name (see the module doc)
        assert isinstance(kind, sa.Date), kind
    assert isinstance(_stored(db_url, "Trip", "At")[0], sa.DateTime)
    kind, values = _stored(db_url, "legacy_orders", "placed")
    assert isinstance(kind, sa.DateTime) and values[0].startswith("2026-04-18 23:30:00"), (kind, values)
    assert setup.upgrade_schema(db_url) == []
    with autonumber.connect(db_url) as p:
        assert {r["Name"]: r["Day"] for r in p.records.list("Trip")} == {
            "midnight": "2026-04-18",
            "late": "2026-04-18",
            "none": None,
        }
        assert p.records.insert("Trip", {"Day": "2026-04-19", "Name": "after"})["Day"] == "2026-04-19"
        assert p.records.get("LegacyOrder", "1")["placed"] == "2026-04-18T23:30:00+00:00"
    assert setup.verify_setup(db_url) == []


def test_a_value_sqlite_cannot_read_as_a_date_refuses_the_upgrade(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _at_version_6(sqlite_url, monkeypatch, {"ok": datetime(2026, 4, 18, 9, 0), "bad": None})
    engine = create_engine(sqlite_url)
    with engine.begin() as conn:  # written by another program
        conn.execute(sa.text("UPDATE Trip SET Day = 'soon' WHERE Name = 'bad'"))
    with pytest.raises(SetupError, match=r"Trip\.Day of row t1 holds 'soon', not a date"):
        setup.upgrade_schema(sqlite_url)
    assert current_version(engine) == DATE_COLUMNS - 1
    engine.dispose()
    assert _stored(sqlite_url, "Trip", "Day")[1] == ["2026-04-18 09:00:00.000000", "soon"]
