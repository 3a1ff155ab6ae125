"""The database itself refuses an autonumber value stored twice.

`setup apply` and `field add` put a UNIQUE index on every autonumber column; a column that already
holds a duplicate makes apply fail before it changes anything, naming field, value and row Ids;
`setup verify` reports a value stored twice as V7. Many NULLs stay allowed.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from autonumber.db.schema import table_names
from autonumber.db.tables import LEGACY_TABLES, counter_table
from autonumber.db.unique import index_name
from autonumber.errors import DuplicateValues
from autonumber.rules.fields import add_field
from autonumber.rules.store import RuleSpec
from autonumber.rules.verify import verify
from autonumber.setup.apply import apply
from autonumber.setup.demo import fill_legacy
from autonumber.setup.generate import default_spec
from support import make_platform

SPEC = default_spec()


def _case() -> sa.TableClause:
    return sa.table("Case", sa.column("Id"), sa.column("Subject"), sa.column("CaseNumber"))


def _unique_columns(engine: Engine, table: str) -> set[str]:
    indexes = sa.inspect(engine).get_indexes(table)
    return {ix["column_names"][0] for ix in indexes if ix.get("unique") and len(ix["column_names"]) == 1}


def test_raw_duplicate_insert_is_refused_and_nulls_are_not(db_url: str) -> None:
    p = make_platform(db_url)
    try:
        first = p.records.insert("Case", {"Subject": "a"})
        with p.begin() as conn:  # many rows without a number: NULL is not a duplicate
            conn.execute(
                sa.insert(_case()), [{"Id": f"n{i}", "Subject": "x", "CaseNumber": None} for i in range(5)]
            )
        with pytest.raises(sa.exc.IntegrityError), p.begin() as conn:
            conn.execute(sa.insert(_case()).values(Id="dup", Subject="b", CaseNumber=first["CaseNumber"]))
        assert p.records.count("Case") == 6
    finally:
        p.close()


@pytest.mark.slow
def test_apply_refuses_a_stored_duplicate_before_changing_anything(engine: Engine) -> None:
    fill_legacy(engine, SPEC, 60)
    with engine.begin() as conn:
        conn.execute(sa.insert(_case()).values(Id="500dup", Subject="again", CaseNumber="00000007"))
    with pytest.raises(DuplicateValues) as info:
        apply(engine, SPEC)
    message = str(info.value)
    assert "\n" not in message
    assert "Case.CaseNumber value '00000007' is stored 2 times (row Ids 500000000000007, 500dup)" in message
    present = table_names(engine)
    assert all(t.name in present for t in LEGACY_TABLES)  # nothing backed up, nothing dropped
    assert counter_table.name not in present or not _rows(engine)
    with engine.begin() as conn:
        conn.execute(sa.delete(_case()).where(sa.column("Id") == "500dup"))
    apply(engine, SPEC)
    assert "CaseNumber" in _unique_columns(engine, "Case")
    assert "Contract_Number__c" in _unique_columns(engine, "Contract")
    apply(engine, SPEC)  # reconciled idempotently


def _rows(engine: Engine) -> list[object]:
    with engine.connect() as conn:
        return list(conn.execute(sa.select(counter_table)))


@pytest.mark.slow
def test_apply_adds_missing_indexes_to_an_existing_database(engine: Engine) -> None:
    apply(engine, SPEC)
    with engine.begin() as conn:
        case = sa.Table("Case", sa.MetaData(), sa.Column("CaseNumber", sa.String(16)))
        sa.Index(index_name("Case", "CaseNumber"), case.c.CaseNumber).drop(conn)
    assert "CaseNumber" not in _unique_columns(engine, "Case")
    with engine.begin() as conn:
        conn.execute(
            sa.insert(_case()),
            [
                {"Id": "c1", "Subject": "s", "CaseNumber": "00000009"},
                {"Id": "c2", "Subject": "s", "CaseNumber": "00000009"},
            ],
        )
    violations = verify(engine)
    assert any(
        str(v).startswith(
            "V7 field_id=Case.CaseNumber: Case.CaseNumber value '00000009' is stored 2 times (row Ids c1, c2)"
        )
        for v in violations
    ), violations
    with pytest.raises(DuplicateValues):
        apply(engine, SPEC)
    with engine.begin() as conn:
        conn.execute(sa.delete(_case()).where(sa.column("Id") == "c2"))
    apply(engine, SPEC, reseed=True)  # the raw rows are above the counter: seed again
    assert "CaseNumber" in _unique_columns(engine, "Case")


def test_field_add_creates_the_index(db_url: str) -> None:
    p = make_platform(db_url)
    try:
        with p.begin() as conn:
            add_field(conn, RuleSpec("Case", "Ticket__c", "T-{0000}"), 20)
        assert "Ticket__c" in _unique_columns(p.db, "Case")
    finally:
        p.close()
