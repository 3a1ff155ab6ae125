"""Checks before anything is written.

A start the counter cannot hold is refused on every path (CLI, data-spec operation, console/HTTP
in tests/web) with one line naming field, width and value; a refused overflow leaves the counter
where it was on every strategy; a raw UPDATE of date_src/on_change to garbage quarantines the rule.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from engine_support import counter_rows, make_platform, set_next_value, store_rules
from sqlalchemy.engine import Engine

import autonumber
from autonumber.db import create_engine
from autonumber.db.tables import system_field
from autonumber.engine import STRATEGIES
from autonumber.errors import CounterOverflow, FormatError, RuleQuarantined
from autonumber.rules import apply_requests
from autonumber.rules.store import RuleSpec
from autonumber.specapply.operations import rule_request
from support import bootstrap_url, run_cli

CASE = "Case.CaseNumber"


@pytest.fixture
def engine(engine: Engine, db_url: str) -> Engine:
    """The shared engine, bootstrapped (naming `db_url` keeps the per-backend parameters)."""
    bootstrap_url(db_url)
    return engine


def rules(engine: Engine) -> dict[str, tuple[str | None, int]]:
    f = system_field
    with engine.connect() as conn:
        return {
            i: (fmt, int(s))
            for i, fmt, s in conn.execute(sa.select(f.c.Id, f.c.auto_number_format, f.c.auto_number_start))
        }


def columns(engine: Engine, table: str) -> set[str]:
    return {c["name"] for c in sa.inspect(engine).get_columns(table)}


def test_cli_refuses_a_start_the_counter_cannot_hold(
    engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = rules(engine)
    code, out = run_cli(
        ["field", "add", "Case", "W__c", "--format", "W-{0}", "--start", "10", "--db", db_url], capsys
    )
    assert code == 2 and out.count("\n") == 1, out
    assert "Case.W__c: start 10 does not fit the counter of 'W-{0}' (width 1, largest 9)" in out
    assert "W__c" not in columns(engine, "Case")  # refused before the column was created
    code, out = run_cli(
        ["field", "set", "Order", "OrderNumber", "--format", "{00}", "--start", "5000", "--db", db_url],
        capsys,
    )
    assert code == 2 and out.count("\n") == 1, out
    assert "Order.OrderNumber: start 5000 does not fit the counter of '{00}' (width 2, largest 99)" in out
    assert rules(engine) == before


def test_data_spec_operations_refuse_it_too(engine: Engine) -> None:
    """Through the requests the spec runner builds from an operation's arguments."""
    before = rules(engine)
    with pytest.raises(FormatError, match=r"width 1, largest 9"), engine.begin() as conn:
        args = {"object": "Case", "field": "W__c", "format": "W-{0}", "start": 10}
        apply_requests(conn, [rule_request(conn, "add_autonumber_field", args)])
    with pytest.raises(FormatError, match=r"start 5000 does not fit .* \(width 2"), engine.begin() as conn:
        args = {"object": "Order", "field": "OrderNumber", "format": "{00}", "start": 5000}
        apply_requests(conn, [rule_request(conn, "set_rule", args)])
    assert rules(engine) == before


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_refused_overflow_leaves_the_counter_where_it_was(db_url: str, strategy: str) -> None:
    p = make_platform(db_url, strategy=strategy)
    try:
        store_rules(p, RuleSpec("Case", "CaseNumber", "{00}"))
        set_next_value(p, CASE, 99)
        assert p.records.insert("Case", {"Subject": "last"})["CaseNumber"] == "99"
        for _ in range(3):
            with pytest.raises(CounterOverflow) as info:
                p.records.insert("Case", {"Subject": "one too many"})
            assert (info.value.value, info.value.width) == (100, 2)
            with pytest.raises(CounterOverflow):
                p.engine.assign_batch(CASE, [{}, {}])
        assert counter_rows(p, CASE) == {"": 100}
        set_next_value(p, CASE, 98)
        with pytest.raises(CounterOverflow):  # 98, 99 fit, 100 does not: nothing is taken
            p.engine.assign_batch(CASE, [{}, {}, {}])
        assert counter_rows(p, CASE) == {"": 98}
        assert p.engine.assign_batch(CASE, [{}, {}]) == ["98", "99"]
    finally:
        p.close()


@pytest.mark.parametrize(
    ("column", "value"), [("auto_number_date_src", "tomorrow"), ("auto_number_on_change", "shred")]
)
def test_tampered_policy_columns_quarantine_the_rule(db_url: str, column: str, value: str) -> None:
    make_platform(db_url).close()
    engine = create_engine(db_url)
    with engine.begin() as conn:  # a raw UPDATE behind the applier's back
        conn.execute(sa.update(system_field).where(system_field.c.Id == CASE).values({column: value}))
    engine.dispose()
    p = autonumber.connect(db_url)
    try:
        with pytest.raises(RuleQuarantined) as info:
            p.records.insert("Case", {"Subject": "s"})
        assert f"{column} {value!r}" in str(info.value)
    finally:
        p.close()
