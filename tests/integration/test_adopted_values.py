"""An adopted table's own column types, on every backend: a value the column cannot take is a
RecordError naming the object, the field and the value, never "database unavailable", and
nothing is written (the number it took is journaled as a gap)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

import autonumber
from autonumber.errors import RecordError
from autonumber.runtime import Platform
from support import bootstrap_url, run_cli

OWN_TYPE = {  # a column type only the database checks: text in it is refused by the database
    "sqlite": ("qty INTEGER, since_at BLOB", "since_at", "abc"),  # a STRICT table's BLOB
    "mysql": ("qty INT, since_at TIME", "since_at", "abc"),
    "postgresql": ("qty INTEGER, since_at UUID", "since_at", "abc"),
}


@pytest.fixture
def adopted(db_url: str, engine: Engine, capsys: pytest.CaptureFixture[str]) -> Iterator[Platform]:
    """The application's table `orders` (integer key, `qty`, a column of its own type, `order_no`),
    adopted as Order__c with `order_no` numbered `ORD-{0000}`."""
    bootstrap_url(db_url)
    key = {"sqlite": "INTEGER PRIMARY KEY AUTOINCREMENT", "mysql": "INT AUTO_INCREMENT PRIMARY KEY"}
    lite = engine.dialect.name == "sqlite"  # a STRICT table knows TEXT, not VARCHAR(n)
    columns = OWN_TYPE[engine.dialect.name][0]
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                f"CREATE TABLE orders (id {key.get(engine.dialect.name, 'SERIAL PRIMARY KEY')}, "
                f"{columns}, order_no {'TEXT' if lite else 'VARCHAR(20)'}){' STRICT' if lite else ''}"
            )
        )
    for argv in (
        ["object", "adopt", "Order__c", "--table", "orders"],
        ["field", "add", "Order__c", "order_no", "--format", "ORD-{0000}"],
    ):
        code, out = run_cli([*argv, "--db", db_url], capsys)
        assert code == 0, out
    p = autonumber.connect(db_url)
    yield p
    p.close()


def rows(engine: Engine) -> list[tuple[object, ...]]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(sa.text("SELECT qty, order_no FROM orders ORDER BY id"))]


def test_text_in_an_integer_column_names_the_field_and_value(adopted: Platform, engine: Engine) -> None:
    with pytest.raises(
        RecordError, match=r"Order__c record #1: Order__c\.qty must be a whole number, got 'abc'"
    ):
        adopted.records.insert("Order__c", {"qty": "abc"})
    with pytest.raises(RecordError, match=r"Order__c\.qty is out of range"):  # INTEGER: 32 bits
        adopted.records.insert("Order__c", {"qty": 2**40})
    assert rows(engine) == []
    assert adopted.records.insert("Order__c", {"qty": 3})["order_no"] == "ORD-0001"


def test_a_value_only_the_database_refuses_names_the_field_and_value(
    adopted: Platform, engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _, field, value = OWN_TYPE[engine.dialect.name]
    with pytest.raises(RecordError) as info:
        adopted.records.insert("Order__c", {"qty": 1, field: value})
    message = str(info.value)
    assert message.startswith("Order__c record #1: ") and f"Order__c.{field} = {value!r}" in message, message
    assert "nothing was written" in message and len(message.splitlines()) == 1
    code, out = run_cli(
        [
            "records",
            "insert",
            "Order__c",
            "--data",
            f'{{"{field}": {value!r}}}'.replace("'", '"'),
            "--db",
            db_url,
        ],
        capsys,
    )
    assert code == 2 and f"Order__c.{field}" in out and "unavailable" not in out, out
    assert rows(engine) == []
