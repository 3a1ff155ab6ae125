"""`autonumber field add|set`: no code to add a field; the column, the validated
rule and the counter row come in one step, so verify (V5) holds at once; existing rows keep NULL."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

import autonumber
from autonumber.db import create_engine
from autonumber.db.tables import counter_table, system_field
from autonumber.rules.verify import verify
from support import bootstrap_url, run_cli

ADD_MEMBER = ["field", "add", "Account", "Member_No__c", "--format", "MB-{000000}", "--start", "100"]


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    bootstrap_url(db_url)
    eng = create_engine(db_url)
    with autonumber.connect(db_url) as p:
        for i in range(3):
            p.records.insert("Account", {"Name": f"old {i}", "BillingCountryCode": "SG"})
    yield eng
    eng.dispose()


def counters(engine: Engine, field_id: str) -> dict[str, int]:
    t = counter_table
    with engine.connect() as conn:
        return {
            k: int(n)
            for k, n in conn.execute(sa.select(t.c.scope_key, t.c.next_value).where(t.c.field_id == field_id))
        }


def test_field_add_creates_column_rule_and_counter_and_verify_holds(
    engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run_cli([*ADD_MEMBER, "--db", db_url], capsys)
    assert code == 0, out
    assert counters(engine, "Account.Member_No__c") == {"": 100}
    assert verify(engine) == []
    table = sa.Table("Account", sa.MetaData(), autoload_with=engine)
    with engine.connect() as conn:
        assert conn.execute(sa.select(table.c.Member_No__c)).scalars().all() == [None, None, None]
    with autonumber.connect(db_url) as p:
        assert p.records.insert("Account", {"Name": "new"})["Member_No__c"] == "MB-000100"
    code, out = run_cli([*ADD_MEMBER, "--db", db_url], capsys)
    assert code == 0, out  # the same rule again is a no-op
    assert counters(engine, "Account.Member_No__c") == {"": 101}


def test_field_add_per_day_needs_no_row_up_front(
    engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run_cli(
        [
            "field",
            "add",
            "Case",
            "Ticket__c",
            "--format",
            "T-{YYYY}{MM}{DD}-{0000}",
            "--scope",
            "per_day",
            "--length",
            "20",
            "--db",
            db_url,
        ],
        capsys,
    )
    assert code == 0, out
    assert counters(engine, "Case.Ticket__c") == {}
    assert verify(engine) == []


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["field", "add", "Nope", "X__c", "--format", "{000}"], "unknown object 'Nope'"),
        (["field", "add", "Account", "Account_ID__c", "--format", "{000}"], "already has an autonumber rule"),
        (["field", "add", "Account", "Bad__c", "--format", "{Account.Missing}-{000}"], "rule"),
        (["field", "add", "Account", "bad name", "--format", "{000}"], "invalid"),
        (["field", "set", "Account", "Name", "--format", "{000}"], "field add"),
    ],
    ids=["unknown-object", "existing-rule", "invalid-format", "invalid-name", "set-without-rule"],
)
def test_bad_requests_change_nothing(
    engine: Engine, db_url: str, argv: list[str], match: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with engine.connect() as conn:
        before = conn.execute(sa.select(system_field).order_by(system_field.c.Id)).all()
    code, out = run_cli([*argv, "--db", db_url], capsys)
    assert code == 2 and match in out and out.count("\n") == 1, out
    with engine.connect() as conn:
        assert conn.execute(sa.select(system_field).order_by(system_field.c.Id)).all() == before


def test_field_set_keeps_counters_and_refuses_a_width_that_cannot_hold_them(
    engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = counters(engine, "Account.Account_ID__c")
    code, out = run_cli(
        ["field", "set", "Account", "Account_ID__c", "--format", "ACC-{YYYY}-{0000000}", "--db", db_url],
        capsys,
    )
    assert code == 0 and "3 under an earlier format" in out, out  # old values stay valid
    assert counters(engine, "Account.Account_ID__c") == before  # the counter continues
    assert verify(engine) == []
    code, out = run_cli(
        ["field", "add", "Case", "Ref__c", "--format", "R-{000}", "--start", "500", "--db", db_url], capsys
    )
    assert code == 0, out
    code, out = run_cli(["field", "set", "Case", "Ref__c", "--format", "R-{00}", "--db", db_url], capsys)
    assert code == 2 and "start 500 does not fit the counter of 'R-{00}' (width 2, largest 99)" in out, out
    assert counters(engine, "Case.Ref__c") == {"": 500}
    code, out = run_cli(
        ["field", "set", "Case", "Ref__c", "--format", "R-{00}", "--start", "5", "--db", db_url], capsys
    )
    assert code == 2 and "cannot hold the next value 500" in out, out  # the counter is past the width too
    code, out = run_cli(
        ["field", "set", "Case", "Ref__c", "--format", "REF-{0000}", "--start", "1", "--db", db_url], capsys
    )
    assert code == 0, out
    assert counters(engine, "Case.Ref__c") == {"": 500}  # never lowered
    code, out = run_cli(
        [
            "field",
            "set",
            "Account",
            "Account_ID__c",
            "--format",
            "IBG-B-{YYYY}{MM}{DD}-{000000}",
            "--start",
            "2",
            "--db",
            db_url,
        ],
        capsys,
    )
    assert code == 0, out
    assert counters(engine, "Account.Account_ID__c") == before
    assert verify(engine) == []
