"""The system schema is created and reconciled idempotently on every backend."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from autonumber.db import create_engine
from autonumber.db.schema import reconcile_system_schema, reconcile_tables, table_names
from autonumber.db.tables import AUTONUMBER_COLUMNS, SYSTEM_TABLES, counter_table, system_field
from autonumber.errors import InvalidIdentifier

AUTONUMBER_DEFAULTS = {
    "auto_number_format": None,
    "auto_number_start": 1,
    "auto_number_scope": "global",
    "auto_number_date_src": "assigned_at",
    "auto_number_on_change": "keep_existing",
    "auto_number_token_refs": None,
    "auto_number_numbering": "standard",
    "auto_number_time_zone": "UTC",
    "auto_number_allocation": "single",
    "auto_number_fiscal_year_start": 1,
    "auto_number_date_field": None,
    "auto_number_shared_counter": None,
}


def _columns(engine: Engine, table: str) -> set[str]:
    return {col["name"] for col in sa.inspect(engine).get_columns(table)}


def test_schema_created_twice_is_a_noop(engine: Engine) -> None:
    first = reconcile_system_schema(engine)
    tables = [line for line in first if line.startswith("created table ")]
    assert sorted(tables) == sorted(f"created table {t.name}" for t in SYSTEM_TABLES)
    assert [line for line in first if line not in tables] == [
        "writer fence autonumber_writer_fence on _System_AutoNumberCounter (schema 8 and above)"
    ]
    assert {t.name for t in SYSTEM_TABLES} <= table_names(engine)
    for table in SYSTEM_TABLES:
        assert _columns(engine, table.name) == {c.name for c in table.columns}

    assert reconcile_system_schema(engine) == []
    assert reconcile_system_schema(engine) == []


def _old_field_table(metadata: sa.MetaData) -> sa.Table:
    """`_System_Field` as it was before the six auto_number_* columns existed."""
    return sa.Table(
        "_System_Field",
        metadata,
        sa.Column("Id", sa.String(64), primary_key=True),
        sa.Column("ObjectId", sa.String(64), nullable=False),
        sa.Column("ApiName", sa.String(64), nullable=False),
        sa.Column("Label", sa.String(255), nullable=True),
        sa.Column("Type", sa.String(32), nullable=False),
        sa.Column("ReferenceTo", sa.String(64), nullable=True),
        sa.Column("MaxLength", sa.Integer, nullable=True),
        sa.Column("IsRequired", sa.Boolean, nullable=False),
    )


OLD_ROWS = [
    {
        "Id": "fld1",
        "ObjectId": "obj1",
        "ApiName": "Name",
        "Label": "Name",
        "Type": "text",
        "ReferenceTo": None,
        "MaxLength": 80,
        "IsRequired": True,
    },
    {
        "Id": "fld2",
        "ObjectId": "obj1",
        "ApiName": "AccountId",
        "Label": None,
        "Type": "reference",
        "ReferenceTo": "Account",
        "MaxLength": None,
        "IsRequired": False,
    },
    {
        "Id": "fld3",
        "ObjectId": "obj2",
        "ApiName": "Total",
        "Label": "Total",
        "Type": "formula",
        "ReferenceTo": None,
        "MaxLength": 18,
        "IsRequired": False,
    },
]


def test_reconcile_adds_missing_columns_to_a_table_with_rows(engine: Engine) -> None:
    old = _old_field_table(sa.MetaData())
    old.create(engine)
    with engine.begin() as conn:
        conn.execute(sa.insert(old), OLD_ROWS)
    assert not set(AUTONUMBER_COLUMNS) & _columns(engine, "_System_Field")

    changes = reconcile_system_schema(engine)

    assert sorted(c for c in changes if "_System_Field." in c) == sorted(
        f"added column _System_Field.{name}" for name in AUTONUMBER_COLUMNS
    )
    assert _columns(engine, "_System_Field") == {c.name for c in system_field.columns}
    with engine.connect() as conn:
        rows = [
            dict(row._mapping) for row in conn.execute(sa.select(system_field).order_by(system_field.c.Id))
        ]
    assert len(rows) == len(OLD_ROWS)
    for row, original in zip(rows, OLD_ROWS, strict=True):
        assert {k: row[k] for k in original} == original
        assert {k: row[k] for k in AUTONUMBER_COLUMNS} == AUTONUMBER_DEFAULTS

    # The added columns carry their server defaults for new rows too, and reconcile is now a no-op.
    with engine.begin() as conn:
        conn.execute(
            sa.insert(system_field).values(
                Id="fld4", ObjectId="obj2", ApiName="Num", Type="autonumber", IsRequired=False
            )
        )
        new = conn.execute(sa.select(system_field).where(system_field.c.Id == "fld4")).one()._mapping
    assert {k: new[k] for k in AUTONUMBER_COLUMNS} == AUTONUMBER_DEFAULTS
    assert reconcile_system_schema(engine) == []


def _order_case(metadata: sa.MetaData, *, extra: bool = False) -> tuple[sa.Table, sa.Table]:
    order_cols = [
        sa.Column("Id", sa.String(64), primary_key=True),
        sa.Column("OrderNumber", sa.String(64), nullable=True),
        sa.Column("Select", sa.String(32), nullable=True),
    ]
    if extra:
        order_cols.append(sa.Column("Group", sa.String(32), nullable=True, server_default="none"))
    order = sa.Table("Order", metadata, *order_cols)
    case = sa.Table(
        "Case",
        metadata,
        sa.Column("Id", sa.String(64), primary_key=True),
        sa.Column("Subject", sa.String(255), nullable=True),
        sa.Column("CaseNumber", sa.String(64), nullable=True),
    )
    return order, case


def test_order_and_case_work_as_table_names(engine: Engine) -> None:
    order, case = _order_case(sa.MetaData())
    with engine.begin() as conn:
        assert sorted(reconcile_tables(conn, [order, case])) == ["created table Case", "created table Order"]
    with engine.begin() as conn:
        conn.execute(
            sa.insert(order),
            [
                {"Id": "o1", "OrderNumber": "ORD-1", "Select": "x"},
                {"Id": "o2", "OrderNumber": "ORD-2", "Select": None},
            ],
        )
        conn.execute(sa.insert(case).values(Id="c1", Subject="Broken", CaseNumber="00001"))
        conn.execute(sa.update(order).where(order.c.Id == "o2").values(Select="y"))
    with engine.connect() as conn:
        assert conn.execute(
            sa.select(order.c.Id, order.c.OrderNumber, order.c.Select).order_by(order.c.Id)
        ).all() == [("o1", "ORD-1", "x"), ("o2", "ORD-2", "y")]
        assert conn.execute(sa.select(case.c.CaseNumber)).scalar_one() == "00001"
        assert reconcile_tables(conn, [order, case]) == []

    # ALTER TABLE on a reserved-word table adds a reserved-word column; rows keep their values.
    order2, case2 = _order_case(sa.MetaData(), extra=True)
    with engine.begin() as conn:
        assert reconcile_tables(conn, [order2, case2]) == ["added column Order.Group"]
    with engine.connect() as conn:
        assert conn.execute(
            sa.select(order2.c.Id, order2.c.OrderNumber, order2.c.Group).order_by(order2.c.Id)
        ).all() == [("o1", "ORD-1", "none"), ("o2", "ORD-2", "none")]


def test_invalid_table_name_is_rejected_before_any_ddl(engine: Engine) -> None:
    bad = sa.Table("Bad-Name", sa.MetaData(), sa.Column("Id", sa.String(64), primary_key=True))
    with engine.begin() as conn, pytest.raises(InvalidIdentifier):
        reconcile_tables(conn, [bad])
    assert "Bad-Name" not in table_names(engine)


def test_reconcile_adds_timestamp_columns_to_an_old_counter_table(db_url: str) -> None:
    """Timestamp columns with a clock default can be added to a table that holds rows
    (SQLite cannot ADD COLUMN with a non-constant default: the dialect layer works around it)."""
    engine = create_engine(db_url)
    old = sa.MetaData()
    table = sa.Table(
        "_System_AutoNumberCounter",
        old,
        sa.Column("field_id", sa.String(255), primary_key=True),
        sa.Column("scope_key", sa.String(64), primary_key=True),
        sa.Column("next_value", sa.BigInteger, nullable=False),
    )
    old.create_all(engine)
    with engine.begin() as conn:
        conn.execute(sa.insert(table).values(field_id="f", scope_key="", next_value=42))
    changes = reconcile_system_schema(engine)
    assert "added column _System_AutoNumberCounter.created_date" in changes
    assert "added column _System_AutoNumberCounter.last_modified_date" in changes
    with engine.connect() as conn:
        row = conn.execute(sa.select(counter_table.c.next_value, counter_table.c.created_date)).one()
    assert row[0] == 42
    assert row[1] is not None
    engine.dispose()
