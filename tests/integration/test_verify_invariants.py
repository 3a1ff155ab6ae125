"""`setup verify` (docs/setup.md): each of V1–V7 caught on a database corrupted on purpose, and R2."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from autonumber.cli import main
from autonumber.db.tables import counter_table, system_field, system_record_type
from autonumber.errors import VerifyError
from autonumber.rules.verify import Finding, verify_or_raise
from autonumber.rules.verify import verify as findings
from support import bootstrap_url


@pytest.fixture
def engine(engine: Engine, db_url: str) -> Engine:
    """The shared engine, bootstrapped (naming `db_url` keeps the per-backend parameters)."""
    bootstrap_url(db_url)
    return engine


def run(engine: Engine, *statements: sa.Executable) -> None:
    with engine.begin() as conn:
        for stmt in statements:
            conn.execute(stmt)


def verify(engine: Engine) -> list[str]:
    """The one-line messages `setup verify` prints."""
    return [str(f) for f in findings(engine)]


def codes(lines: list[str]) -> set[str]:
    return {line.split(" ", 1)[0] for line in lines}


def cli_verify(db_url: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as info:
        main(["setup", "verify", "--db", db_url])
    return int(info.value.code or 0), capsys.readouterr().out


def test_a_sound_database_passes(engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert verify(engine) == []
    verify_or_raise(engine)
    assert cli_verify(db_url, capsys) == (0, "verify: V1–V7 hold\n")


def test_v1_counter_below_the_live_max(
    engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    account = sa.table("Account", sa.column("Id"), sa.column("Account_ID__c"))
    run(
        engine,
        sa.insert(account).values(Id="a1", Account_ID__c="IBG-B-20260417-000010"),
        sa.update(counter_table)
        .where(counter_table.c.field_id == "Account.Account_ID__c")
        .values(next_value=10),
    )
    lines = verify(engine)
    assert lines == [
        "V1 field_id=Account.Account_ID__c scope_key='' next_value=10 is not above the "
        "largest live value 10 (write hole: a row written outside autonumber holds a number the "
        "counter has not reached; the insert that meets it skips past the stored values, journaled "
        "as skipped; to move the counter now: autonumber counter set Account Account_ID__c --next 11)"
    ]
    code, out = cli_verify(db_url, capsys)
    assert code == 1 and out.startswith("V1 field_id=Account.Account_ID__c")


def test_v1_unparseable_live_value(engine: Engine) -> None:
    case = sa.table("Case", sa.column("Id"), sa.column("CaseNumber"))
    run(engine, sa.insert(case).values(Id="k1", CaseNumber="CASE-1"))
    [line] = verify(engine)
    assert line.startswith("V1 field_id=Case.CaseNumber:") and "row Id=k1" in line
    [found] = findings(engine)
    assert found == Finding("V1", "Case.CaseNumber", line, "k1", "CASE-1")


def test_v2_stale_token_refs(engine: Engine) -> None:
    stale = (
        '[{"directField":"Gone__c","fkChains":[[{"fk":"AccountId","targetField":"BillingCountryCode",'
        '"targetObject":"Account"}]],"readStrategy":"caller_txn","targetField":"BillingCountryCode",'
        '"targetObject":"Account","tokenLiteral":"{Account.BillingCountryCode}"}]'
    )
    run(
        engine,
        sa.update(system_field)
        .where(system_field.c.Id == "Order.Order_Number__c")
        .values(auto_number_token_refs=stale),
    )
    [line] = verify(engine)
    assert line.startswith("V2 field_id=Order.Order_Number__c") and "Gone__c" in line


def test_v2_non_canonical_token_refs(engine: Engine) -> None:
    with engine.connect() as conn:
        refs = conn.execute(
            sa.select(system_field.c.auto_number_token_refs).where(system_field.c.Id == "Quote.Quote_No__c")
        ).scalar_one()
    run(
        engine,
        sa.update(system_field)
        .where(system_field.c.Id == "Quote.Quote_No__c")
        .values(auto_number_token_refs=refs.replace(",", ", ")),
    )
    assert codes(verify(engine)) == {"V2"}


def test_v3_orphan_counter_row(engine: Engine) -> None:
    run(engine, sa.insert(counter_table).values(field_id="Ghost.Field__c", scope_key="x", next_value=5))
    assert verify(engine) == [
        "V3 orphan counter row field_id=Ghost.Field__c scope_key='x' next_value=5: "
        "no configured _System_Field with that Id"
    ]


def test_v4_two_counter_tokens(engine: Engine) -> None:
    run(
        engine,
        sa.update(system_field)
        .where(system_field.c.Id == "Case.CaseNumber")
        .values(auto_number_format="{000}-{000}"),
    )
    lines = verify(engine)
    assert codes(lines) == {"V4"}
    assert lines[0].startswith("V4 field_id=Case.CaseNumber format '{000}-{000}': rule 1")


def test_v5_global_row_missing(engine: Engine) -> None:
    run(engine, sa.delete(counter_table).where(counter_table.c.field_id == "Case.CaseNumber"))
    lines = verify(engine)
    assert codes(lines) == {"V1", "V5"}
    v5 = next(line for line in lines if line.startswith("V5"))
    assert "global field(s) without a row: Case.CaseNumber" in v5


def test_v5_blank_row_for_a_lazy_field(engine: Engine) -> None:
    run(engine, sa.insert(counter_table).values(field_id="Order.Order_Number__c", scope_key="", next_value=1))
    [line] = verify(engine)
    assert line.startswith("V5") and "non-global or unknown field(s): Order.Order_Number__c" in line


def test_r2_v6_record_type_without_code(
    engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    t = system_record_type
    run(engine, sa.update(t).where(t.c.DeveloperName == "Services Agreement").values(RecordTypeCode=None))
    with pytest.raises(VerifyError) as info:
        verify_or_raise(engine)
    [line] = info.value.violations
    assert line == (
        "V6 RecordType id=rt_Contract_Services_Agreement ('Services Agreement') has NULL "
        "RecordTypeCode; consumed by field_id=Contract.Contract_Number__c format "
        "'{Account.BillingCountryCode}-{RecordType.RecordTypeCode}-{YY}{MM}{DD}-{00}'"
    )
    code, out = cli_verify(db_url, capsys)
    assert code == 1 and out == line + "\n"
