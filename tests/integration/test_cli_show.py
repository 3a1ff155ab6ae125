"""`field show` and `counter show`: every next number where the scope key and the clock decide it, the
record's parts named where the record decides them, and everything about one field, on every backend."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest

import autonumber
from autonumber.db import create_engine, dialect_for
from support import bootstrap_url, run_cli


def cli_json(capsys: pytest.CaptureFixture[str], db_url: str, *argv: str) -> Any:
    """Run a command with --json; its one JSON document."""
    code, out = run_cli([*argv, "--json", "--db", db_url], capsys)
    assert code == 0, out
    assert len(out.strip().splitlines()) == 1, out
    return json.loads(out)


def cli_ok(capsys: pytest.CaptureFixture[str], db_url: str, *argv: str) -> str:
    """Run a command that must succeed; what it printed."""
    code, out = run_cli([*argv, "--db", db_url], capsys)
    assert code == 0, out
    return out


def db_now(db_url: str) -> datetime:
    """The database clock, which dates the numbers."""
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            return dialect_for(conn).utc_now(conn)
    finally:
        engine.dispose()


@pytest.fixture
def url(db_url: str) -> str:
    """The core pack on each backend."""
    bootstrap_url(db_url)
    return db_url


def test_a_dated_global_field_shows_todays_number(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    shown = cli_json(capsys, url, "counter", "show", "Account", "Account_ID__c")
    day = db_now(url).strftime("%Y%m%d")
    [line] = shown["counters"]
    assert line["preview"] == f"IBG-B-{day}-000001" and not line["depends_on_record"]
    assert shown["new_key"] is None
    out = cli_ok(capsys, url, "counter", "show", "Account.Account_ID__c")
    assert f"global\t1\tIBG-B-{day}-000001\t1" in out and "?" not in out, out


def test_per_day_shows_todays_key_before_its_row_exists(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    cli_ok(
        capsys,
        url,
        "field",
        "add",
        "Case",
        "Day_No__c",
        "--format",
        "D{YY}{MM}{DD}-{000}",
        "--scope",
        "per_day",
    )
    now = db_now(url)
    key, yymmdd = now.strftime("%Y%m%d"), now.strftime("%y%m%d")
    shown = cli_json(capsys, url, "counter", "show", "Case.Day_No__c")
    assert shown["new_key"] == {
        "scope_key": key,
        "next_value": 1,
        "preview": f"D{yymmdd}-001",
        "depends_on_record": False,
    }
    with autonumber.connect(url) as p:
        assert p.records.insert("Case", {"Subject": "x"})["Day_No__c"] == f"D{yymmdd}-001"
    shown = cli_json(capsys, url, "counter", "show", "Case.Day_No__c")
    assert shown["new_key"] is None
    assert [(c["scope_key"], c["preview"]) for c in shown["counters"] if c["scope_key"]] == [
        (key, f"D{yymmdd}-002")
    ]


def test_per_prefix_shows_each_key_and_names_the_record_parts_of_a_new_one(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    yymmdd = db_now(url).strftime("%y%m%d")
    with autonumber.connect(url) as p:
        account = p.records.insert("Account", {"Name": "Acme", "BillingCountryCode": "SG"})
        got = p.records.insert("Order", {"AccountId": account["Id"]})["Order_Number__c"]
    assert got == f"SG-ORD-{yymmdd}-01"
    shown = cli_json(capsys, url, "counter", "show", "Order", "Order_Number__c")
    assert [(c["scope_key"], c["next_value"], c["preview"]) for c in shown["counters"]] == [
        (f"SG-ORD-{yymmdd}-", 2, f"SG-ORD-{yymmdd}-02")
    ]
    assert shown["new_key"] == {
        "scope_key": None,
        "next_value": 1,
        "preview": f"{{Account.BillingCountryCode}}-ORD-{yymmdd}-01",
        "depends_on_record": True,
    }
    detail = cli_json(capsys, url, "field", "show", "Order.Order_Number__c")
    assert detail["per_prefix_keys"] == [f"SG-ORD-{yymmdd}-"]
    out = cli_ok(capsys, url, "field", "show", "Order.Order_Number__c")
    assert f"per_prefix keys\tSG-ORD-{yymmdd}-\n" in out, out
    assert f"{{Account.BillingCountryCode}}-ORD-{yymmdd}-01" in out, out


def test_a_field_dated_by_the_record_names_its_date_tokens(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    cli_ok(capsys, url, "object", "add", "Bill__c", "--field", "InvoiceDate:date")
    cli_ok(
        capsys,
        url,
        "field",
        "add",
        "Bill__c",
        "No__c",
        "--format",
        "B-{YYYY}-{000}",
        "--date-source",
        "InvoiceDate",
    )
    [line] = cli_json(capsys, url, "counter", "show", "Bill__c.No__c")["counters"]
    assert (line["preview"], line["depends_on_record"]) == ("B-{YYYY}-001", True)
    detail = cli_json(capsys, url, "field", "show", "Bill__c.No__c")
    assert (detail["date_source"], detail["date_field"]) == ("InvoiceDate", "InvoiceDate")
    [listed] = cli_json(capsys, url, "field", "list", "Bill__c")
    assert listed["counters"][0]["preview"] == "B-{YYYY}-001"


def test_field_show_tells_the_rule_state_counters_and_last_gaps(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with autonumber.connect(url) as p:
        for i in range(2):
            p.records.insert("Case", {"Subject": f"s{i}"})
    cli_ok(capsys, url, "counter", "set", "Case", "CaseNumber", "--next", "6")
    detail = cli_json(capsys, url, "field", "show", "Case", "CaseNumber")
    assert {k: detail[k] for k in ("field_id", "format", "scope", "numbering", "status", "length")} == {
        "field_id": "Case.CaseNumber",
        "format": "{00000000}",
        "scope": "global",
        "numbering": "standard",
        "status": "ok",
        "length": 30,
    }
    assert [(c["scope_key"], c["next_value"], c["preview"]) for c in detail["counters"]] == [
        ("", 6, "00000006")
    ]
    gaps = detail["gaps"]
    assert (gaps["checked"], gaps["missing"]) == (5, 3)
    [run] = gaps["last"]
    assert (run["first"], run["last"], run["count"], run["numbers"]) == (3, 5, 3, "00000003 … 00000005")
    out = cli_ok(capsys, url, "field", "show", "Case.CaseNumber")
    assert "format\t{00000000}\n" in out and "global\t6\t00000006\n" in out, out
    assert "gaps: 3 value(s) missing of 5 checked" in out, out
    assert cli_json(capsys, url, "field", "show", "Case.CaseNumber", "--no-gaps")["gaps"] is None


def test_show_of_an_unknown_field_is_one_line(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["field", "show", "Case.Nope"], ["counter", "show", "Case.Nope"]):
        code, out = run_cli([*argv, "--json", "--db", url], capsys)
        assert code == 2 and out.count("\n") == 1 and out.startswith("error: "), out


def test_a_quarantined_field_is_shown_with_its_reason_and_no_number(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bootstrap_url(sqlite_url)
    engine = create_engine(sqlite_url)
    with engine.begin() as conn:  # behind the applier's back: the rule no longer validates
        conn.exec_driver_sql(
            "UPDATE _System_Field SET auto_number_format = 'bad{' WHERE ApiName = 'CaseNumber'"
        )
    engine.dispose()
    detail = cli_json(capsys, sqlite_url, "field", "show", "Case.CaseNumber")
    assert detail["status"] == "quarantined" and "never closed" in detail["reason"]
    assert detail["gaps"] is None and detail["counters"][0]["preview"] == ""
    out = cli_ok(capsys, sqlite_url, "counter", "show", "Case.CaseNumber")
    assert "global\t1\tnone (quarantined)\t1" in out, out
