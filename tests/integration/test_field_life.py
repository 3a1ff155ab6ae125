"""A field's whole life on every backend: a partial `field set`, `--length`, `field remove` and
adding it back, `field rename` (custom object and adopted table), through the CLI, the library and
the HTTP API; refusals are one line and change nothing."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

import autonumber
from autonumber.db.tables import system_field
from autonumber.errors import RuleChangeRefused
from autonumber.rules import RuleEdit, remove_field, rename_field, set_rule
from autonumber.rules.verify import verify
from autonumber.setup.apply import phase_named, run_phases
from autonumber.setup.dataspec import DataSpec, SpecMeta
from autonumber.setup.standard import CONTRACT_RECORD_TYPES, CORE_OBJECTS, CORE_RULES
from autonumber.web import create_app
from support import bootstrap_url, number, run_cli

TOKEN = "life-admin-token"
SHIP = "Ship__c"


def cli(db_url: str, capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code, out = run_cli([*argv, "--db", db_url], capsys)
    assert code == 0, out
    return out


def refused(db_url: str, capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code, out = run_cli([*argv, "--db", db_url], capsys)
    assert code == 2 and out.strip().count("\n") == 0, out
    return out


@pytest.fixture
def ship(db_url: str, engine: Engine, capsys: pytest.CaptureFixture[str]) -> Engine:
    """A custom object Ship__c with an autonumber field No__c (`S-{0000}`, VARCHAR(30))."""
    bootstrap_url(db_url)
    cli(db_url, capsys, "object", "add", SHIP, "--field", "Name:text(40)")
    cli(db_url, capsys, "field", "add", SHIP, "No__c", "--format", "S-{0000}")
    return engine


def insert(db_url: str, n: int = 1, field: str = "No__c") -> list[str]:
    with autonumber.connect(db_url) as p:
        return [p.records.insert(SHIP, {"Name": f"s{i}"})[field] for i in range(n)]


def field_row(engine: Engine, fid: str) -> sa.Row[tuple[object, ...]]:
    f = system_field
    with engine.connect() as conn:
        return conn.execute(sa.select(f).where(f.c.Id == fid)).one()


def width(engine: Engine, table: str, column: str) -> int | None:
    cols = {c["name"]: c["type"] for c in sa.inspect(engine).get_columns(table)}
    return getattr(cols[column], "length", None)


# --- 1. a set changes only what it names ----------------------------------------------------------


def test_field_set_without_format_changes_only_the_time_zone(
    ship: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    insert(db_url, 2)
    out = cli(db_url, capsys, "field", "set", SHIP, "No__c", "--time-zone", "Asia/Tokyo")
    assert "time zone 'UTC' → 'Asia/Tokyo'" in out, out
    row = field_row(ship, "Ship__c.No__c")
    assert (row.auto_number_format, row.auto_number_time_zone) == ("S-{0000}", "Asia/Tokyo")
    out = cli(db_url, capsys, "field", "set", SHIP, "No__c", "--numbering", "gapless")
    row = field_row(ship, "Ship__c.No__c")
    assert (row.auto_number_format, row.auto_number_numbering, row.auto_number_time_zone) == (
        "S-{0000}",
        "gapless",
        "Asia/Tokyo",
    )
    set_rule(ship, RuleEdit(SHIP, "No__c", start=5))  # the library: a RuleEdit with no format
    assert field_row(ship, "Ship__c.No__c").auto_number_format == "S-{0000}"
    assert insert(db_url) == ["S-0005"]  # start 5 is above every value stored
    assert verify(ship) == []


def test_http_put_is_a_partial_update(platform: autonumber.Platform, db_url: str) -> None:
    client = TestClient(create_app(platform, admin_token=TOKEN), headers={"Authorization": f"Bearer {TOKEN}"})
    r = client.put("/api/autonumber/fields/Case.CaseNumber", json={"time_zone": "Asia/Tokyo"})
    assert r.status_code == 200, r.text
    assert (r.json()["format"], r.json()["time_zone"]) == ("{00000000}", "Asia/Tokyo")


# --- 2. the column's length -----------------------------------------------------------------------


def test_length_widens_a_custom_objects_column_and_never_narrows_below_a_stored_value(
    ship: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    long_format = "SHIPMENT-NUMBER-{YYYY}-{MM}-{DD}-{0000000000}"  # 37 characters
    assert "holds 30; widen the column" in refused(
        db_url, capsys, "field", "set", SHIP, "No__c", "--format", long_format
    )
    out = cli(db_url, capsys, "field", "set", SHIP, "No__c", "--format", long_format, "--length", "60")
    assert "length 30 → 60" in out, out
    assert field_row(ship, "Ship__c.No__c").MaxLength == 60
    if ship.dialect.name != "sqlite":  # SQLite never enforces a declared length
        assert width(ship, SHIP, "No__c") == 60
    [value] = insert(db_url)
    assert len(value) == 37
    before = field_row(ship, "Ship__c.No__c")
    out = refused(db_url, capsys, "field", "set", SHIP, "No__c", "--format", "S-{0000}", "--length", "10")
    assert "the longest stored value of Ship__c.No__c is 37 characters; keep at least 37" in out, out
    assert field_row(ship, "Ship__c.No__c") == before
    assert verify(ship) == []


def test_a_repeated_add_with_a_length_widens_the_column(
    ship: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = cli(db_url, capsys, "field", "add", SHIP, "No__c", "--format", "S-{0000}", "--length", "60")
    assert "length 30 → 60" in out, out
    assert field_row(ship, "Ship__c.No__c").MaxLength == 60
    if ship.dialect.name != "sqlite":
        assert width(ship, SHIP, "No__c") == 60


@pytest.fixture
def orders(db_url: str, engine: Engine, capsys: pytest.CaptureFixture[str]) -> Engine:
    """The application's own table `orders` (order_no VARCHAR(20)) adopted as Order__c, numbered."""
    bootstrap_url(db_url)
    key = {"sqlite": "INTEGER PRIMARY KEY AUTOINCREMENT", "mysql": "INT AUTO_INCREMENT PRIMARY KEY"}
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                f"CREATE TABLE orders (id {key.get(engine.dialect.name, 'SERIAL PRIMARY KEY')}, "
                "qty INTEGER, order_no VARCHAR(20))"
            )
        )
    cli(db_url, capsys, "object", "adopt", "Order__c", "--table", "orders")
    cli(db_url, capsys, "field", "add", "Order__c", "order_no", "--format", "ORD-{0000}")
    return engine


def test_an_adopted_column_is_never_altered_and_its_own_widening_is_followed(
    orders: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = refused(db_url, capsys, "field", "set", "Order__c", "order_no", "--length", "60")
    assert "widen orders.order_no to at least 60 characters in the application's schema" in out, out
    assert width(orders, "orders", "order_no") == 20
    modify = {
        "mysql": "ALTER TABLE orders MODIFY order_no VARCHAR(60) NULL",
        "postgresql": "ALTER TABLE orders ALTER COLUMN order_no TYPE VARCHAR(60)",
    }
    if orders.dialect.name == "sqlite":  # SQLite changes a declared type only by a new table
        with orders.begin() as conn:
            conn.execute(
                sa.text("CREATE TABLE orders2 (id INTEGER PRIMARY KEY, qty INTEGER, order_no VARCHAR(60))")
            )
            conn.execute(sa.text("INSERT INTO orders2 SELECT id, qty, order_no FROM orders"))
            conn.execute(sa.text("DROP TABLE orders"))
            conn.execute(sa.text("ALTER TABLE orders2 RENAME TO orders"))
            conn.execute(sa.text('CREATE UNIQUE INDEX "ux_orders_order_no" ON orders (order_no)'))
    else:
        with orders.begin() as conn:
            conn.execute(sa.text(modify[orders.dialect.name]))
    out = cli(db_url, capsys, "field", "set", "Order__c", "order_no", "--length", "60")
    assert "length 20 → 60, as the application's column orders.order_no is" in out, out
    assert field_row(orders, "Order__c.order_no").MaxLength == 60
    cli(
        db_url,
        capsys,
        "field",
        "set",
        "Order__c",
        "order_no",
        "--format",
        "ORDER-{YYYY}{MM}{DD}-{0000000000}",
    )
    assert verify(orders) == []


# --- 3. remove and add back; rename -------------------------------------------------------------


@pytest.mark.parametrize("scope", ["global", "per_day"])
def test_remove_keeps_values_and_adding_back_never_reissues(
    ship: Engine, db_url: str, capsys: pytest.CaptureFixture[str], scope: str
) -> None:
    fmt = "S-{0000}" if scope == "global" else "S-{YYYY}{MM}{DD}-{0000}"
    if scope != "global":
        cli(db_url, capsys, "field", "set", SHIP, "No__c", "--format", fmt, "--scope", scope)
    issued = insert(db_url, 3)
    table = sa.table(SHIP, sa.column("Name"))
    with ship.begin() as conn:  # the newest value is deleted: only the counter remembers it
        conn.execute(sa.delete(table).where(table.c.Name == "s2"))
    out = cli(db_url, capsys, "field", "remove", SHIP, "No__c")
    assert "rule removed" in out
    row = field_row(ship, "Ship__c.No__c")
    assert row.auto_number_format is None and row.Type == "text"
    with autonumber.connect(db_url) as p:  # an ordinary text field now
        assert p.records.insert(SHIP, {"Name": "plain"})["No__c"] is None
    code, out = run_cli(["field", "show", "Ship__c.No__c", "--db", db_url], capsys)
    assert code != 0 and "no autonumber rule" in out
    assert verify(ship) == []
    cli(db_url, capsys, "field", "add", SHIP, "No__c", "--format", fmt, "--scope", scope)
    [again] = insert(db_url)
    assert again not in issued and number(again) > max(number(v) for v in issued), (issued, again)
    assert verify(ship) == []


def test_setup_apply_does_not_put_back_a_removed_rule(
    platform: autonumber.Platform, engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    platform.records.insert("Case", {"Subject": "one"})
    remove_field(engine, "Case", "CaseNumber")
    meta = SpecMeta("data-spec/v1", "bootstrap", "local", "applied", (), (), ())
    spec = DataSpec(meta, CORE_OBJECTS, CORE_RULES, CONTRACT_RECORD_TYPES, "test")
    [result] = run_phases(engine, spec, [phase_named("formats")])
    assert result.changes == []
    assert any("left Case.CaseNumber without a rule" in n for n in result.notes), result.notes
    assert field_row(engine, "Case.CaseNumber").auto_number_format is None


def test_rename_keeps_the_id_counters_and_values(
    ship: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    issued = insert(db_url, 2)
    out = cli(db_url, capsys, "field", "rename", SHIP, "No__c", "Ship_No__c")
    assert "id Ship__c.No__c kept" in out, out
    row = field_row(ship, "Ship__c.No__c")
    assert row.ApiName == "Ship_No__c"
    assert insert(db_url, field="Ship_No__c") == ["S-0003"]
    with ship.connect() as conn:
        table = sa.Table(SHIP, sa.MetaData(), autoload_with=conn)
        stored = conn.execute(sa.select(table.c.Ship_No__c).order_by(table.c.Ship_No__c)).scalars().all()
    assert stored == [*issued, "S-0003"]
    cli(db_url, capsys, "field", "add", SHIP, "No__c", "--format", "N-{0000}")  # the old name: a new field
    assert field_row(ship, "Ship__c.No__c~2").ApiName == "No__c"
    assert verify(ship) == []
    before = field_row(ship, "Ship__c.No__c")
    out = refused(db_url, capsys, "field", "rename", SHIP, "Ship_No__c", "No__c")
    assert "already has a field No__c" in out
    assert field_row(ship, "Ship__c.No__c") == before


def test_rename_on_an_adopted_table_follows_the_application(
    orders: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with autonumber.connect(db_url) as p:
        p.records.insert("Order__c", {"qty": 1})
    with pytest.raises(
        RuleChangeRefused, match=r"rename orders\.order_no to order_ref in the application's schema"
    ):
        rename_field(orders, "Order__c", "order_no", "order_ref")
    with orders.begin() as conn:
        conn.execute(sa.text("ALTER TABLE orders RENAME COLUMN order_no TO order_ref"))
    done = rename_field(orders, "Order__c", "order_no", "order_ref")
    assert done.field_id == "Order__c.order_no"
    with autonumber.connect(db_url) as p:
        assert p.records.insert("Order__c", {"qty": 2})["order_ref"] == "ORD-0002"
    assert verify(orders) == []


def test_http_delete_and_rename(platform: autonumber.Platform, engine: Engine, db_url: str) -> None:
    client = TestClient(create_app(platform, admin_token=TOKEN), headers={"Authorization": f"Bearer {TOKEN}"})
    first = platform.records.insert("Case", {"Subject": "one"})["CaseNumber"]
    r = client.post("/api/autonumber/fields/Case.CaseNumber/rename", json={"name": "Ticket_No__c"})
    assert r.status_code == 200, r.text
    assert (r.json()["field_id"], r.json()["field"]) == ("Case.CaseNumber", "Ticket_No__c")
    r = client.post("/api/autonumber/fields/Case.CaseNumber/rename", json={"name": "Subject"})
    assert r.status_code == 409 and "already has a field Subject" in r.text, r.text
    anonymous = TestClient(create_app(platform, admin_token=TOKEN))
    assert anonymous.delete("/api/autonumber/fields/Case.CaseNumber").status_code == 401
    r = client.delete("/api/autonumber/fields/Case.CaseNumber")
    assert r.status_code == 200, r.text
    assert r.json()["field"] == "Case.Ticket_No__c"
    assert field_row(engine, "Case.CaseNumber").auto_number_format is None
    assert client.delete("/api/autonumber/fields/Case.CaseNumber").status_code == 404
    platform.catalog.refresh()
    assert (
        platform.records.insert("Case", {"Subject": "two", "Ticket_No__c": first + "-x"})["Ticket_No__c"]
        == first + "-x"
    )
