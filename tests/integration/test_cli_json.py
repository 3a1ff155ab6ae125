"""`--json` on the list, show and status commands: one JSON document on stdout, keys in snake_case,
the shapes docs/cli.md documents."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

import autonumber
from autonumber.defaults import SCHEMA_VERSION
from support import bootstrap_url, run_cli

SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")


def one_document(capsys: pytest.CaptureFixture[str], *argv: str, code: int = 0) -> Any:
    """Run a command; it prints exactly one JSON document on one line."""
    got, out = run_cli(list(argv), capsys)
    assert got == code, out
    assert len(out.splitlines()) == 1, out
    return json.loads(out)


def keys_of(document: Any) -> set[str]:
    """Every key of every object in a JSON document."""
    if isinstance(document, dict):
        return set(document) | {k for v in document.values() for k in keys_of(v)}
    if isinstance(document, list):
        return {k for v in document for k in keys_of(v)}
    return set()


@pytest.fixture
def url(sqlite_url: str) -> str:
    """The core pack on SQLite, one Account and one Order stored."""
    bootstrap_url(sqlite_url)
    with autonumber.connect(sqlite_url) as p:
        account = p.records.insert("Account", {"Name": "Acme", "BillingCountryCode": "SG"})
        p.records.insert("Order", {"AccountId": account["Id"]})
    return sqlite_url


def test_db_status_json(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    bootstrap_url(db_url)
    st = one_document(capsys, "db", "status", "--json", "--db", db_url)
    assert st["backend"] in {"sqlite", "mysql", "mariadb", "postgresql"}, st
    assert st["schema_version"] == st["release_schema_version"] == SCHEMA_VERSION
    assert all(t["present"] for t in st["system_tables"]) and st["autonumber_fields"] == 8, st
    assert {"table": "_System_AutoNumberCounter", "present": True} in st["system_tables"]
    assert st["clock"].startswith("20") and "://" in st["url"]
    assert {"objects", "counter_rows", "legacy_tables", "server_version", "page_size"} <= set(st)


def test_object_list_json(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    listed = one_document(capsys, "object", "list", "--json", "--db", url)
    order = next(o for o in listed if o["object"] == "Order")
    assert order == {
        "object": "Order",
        "table": "Order",
        "adopted": False,
        "fields": 3,
        "autonumber_fields": ["OrderNumber", "Order_Number__c"],
    }
    assert [o["object"] for o in listed] == sorted(o["object"] for o in listed)


def test_field_list_json_previews_every_counter(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    listed = one_document(capsys, "field", "list", "Order", "--json", "--db", url)
    by_name = {f["field"]: f for f in listed}
    [keyed] = by_name["Order_Number__c"]["counters"]
    assert keyed["preview"].startswith("SG-ORD-") and keyed["preview"].endswith("-02"), keyed
    assert by_name["OrderNumber"]["counters"][0]["preview"] == "00000002"


def test_records_list_json_is_one_array(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    [record] = one_document(capsys, "records", "list", "Account", "--json", "--db", url)
    assert record["Name"] == "Acme" and record["Account_ID__c"].startswith("IBG-B-")
    code, out = run_cli(["records", "list", "Account", "--db", url], capsys)
    assert code == 0 and json.loads(out.strip())["Name"] == "Acme"  # JSON Lines without --json


def test_setup_plan_and_verify_json(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    phases = one_document(capsys, "setup", "plan", "--json")
    assert phases[0]["n"] == 1 and phases[0]["phase"] == "check_duplicates" and phases[0]["summary"]
    assert one_document(capsys, "setup", "verify", "--json", "--db", url) == {
        "passed": True,
        "violations": [],
    }


@pytest.mark.parametrize(
    "argv",
    [
        ["db", "status"],
        ["object", "list"],
        ["field", "list"],
        ["field", "show", "Order.Order_Number__c"],
        ["counter", "show", "Order.Order_Number__c"],
        ["records", "list", "Order"],
        ["setup", "verify"],
        ["audit", "gaps", "Case.CaseNumber"],
    ],
)
def test_json_keys_are_snake_case_and_carry_no_markup(
    url: str, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    document = one_document(capsys, *argv, "--json", "--db", url)
    names = keys_of(document) - {"Id", "CreatedDate", "Name", "AccountId", "OrderNumber", "Order_Number__c"}
    assert all(SNAKE.match(k) for k in names), sorted(names)
    assert "[bold" not in json.dumps(document) and "\x1b[" not in json.dumps(document)
