"""Time-of-day and fiscal-year tokens, and per-token null defaults, on every backend
(docs/formats.md, docs/cross-record.md): through the CLI (`field add|set`) and the library.

The database clock the reservation samples is pinned through the dialect's `utc_now` seam, so
every rendered time is exact.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

import autonumber
from autonumber.errors import TokenResolveError
from autonumber.rules.verify import verify
from autonumber.runtime import Platform
from support import bootstrap_url, run_cli

NO_DEFAULT = "{Account.BillingCountryCode}-ORD-{YY}{MM}{DD}-{00}"
WITH_DEFAULT = "{Account.BillingCountryCode|XX}-ORD-{YY}{MM}{DD}-{00}"


@pytest.fixture
def platform(db_url: str) -> Iterator[Platform]:
    bootstrap_url(db_url)
    p = autonumber.connect(db_url)
    yield p
    p.close()


@pytest.fixture
def clock(platform: Platform, monkeypatch: pytest.MonkeyPatch) -> list[datetime]:
    """Pin the database clock the reservation samples; set `clock[0]` to move it."""
    now = [datetime(2026, 4, 17, 20, 5, 9, tzinfo=UTC)]
    monkeypatch.setattr(platform.dialect, "utc_now", lambda conn: now[0])
    return now


def cli(capsys: pytest.CaptureFixture[str], db_url: str, *argv: str) -> tuple[int, str]:
    return run_cli([*argv, "--db", db_url], capsys)


def account_no(p: Platform, field: str) -> str:
    return str(p.records.insert("Account", {"Name": "Acme"})[field])


def test_time_of_day_tokens_per_prefix_and_per_day(
    platform: Platform, clock: list[datetime], db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    fmt = "T-{YYYY}{MM}{DD}{HH}{mm}{ss}-{000}"
    code, out = cli(
        capsys, db_url, "field", "add", "Account", "T__c", "--format", fmt, "--scope", "per_prefix"
    )
    assert code == 0, out
    code, out = cli(
        capsys, db_url, "field", "add", "Account", "D__c", "--format", "D-{YYYY}{MM}{DD}-{HH}{mm}-{000}"
    )
    assert code == 0, out
    code, out = cli(
        capsys,
        db_url,
        "field",
        "set",
        "Account",
        "D__c",
        "--format",
        "D-{YYYY}{MM}{DD}-{HH}{mm}-{000}",
        "--scope",
        "per_day",
    )
    assert code == 0, out
    platform.catalog.refresh()
    first = platform.records.insert("Account", {"Name": "a"})
    second = platform.records.insert("Account", {"Name": "b"})
    assert (first["T__c"], second["T__c"]) == ("T-20260417200509-001", "T-20260417200509-002")
    clock[0] = datetime(2026, 4, 17, 21, 0, 0, tzinfo=UTC)
    third = platform.records.insert("Account", {"Name": "c"})
    assert third["T__c"] == "T-20260417210000-001"  # a new second is a new per_prefix key
    assert [r["D__c"] for r in (first, second, third)] == [
        "D-20260417-2005-001",
        "D-20260417-2005-002",
        "D-20260417-2100-003",  # per_day: the hour changes, the counter goes on
    ]
    clock[0] = datetime(2026, 4, 18, 0, 0, 0, tzinfo=UTC)
    assert platform.records.insert("Account", {"Name": "d"})["D__c"] == "D-20260418-0000-001"
    assert verify(platform.db) == []
    # the stored values are read back: setting the same rule again keeps every counter above them
    code, out = cli(capsys, db_url, "field", "set", "Account", "T__c", "--format", fmt)
    assert code == 0, out
    clock[0] = datetime(2026, 4, 17, 20, 5, 9, tzinfo=UTC)
    platform.catalog.refresh()
    assert account_no(platform, "T__c") == "T-20260417200509-003"


def test_fiscal_year_restarts_a_per_prefix_counter(
    platform: Platform, clock: list[datetime], db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    add = ["field", "add", "Account", "Inv__c", "--format", "INV/{FYYYY}/{00000}", "--scope", "per_prefix"]
    code, out = cli(capsys, db_url, *add, "--fiscal-year-start", "4")
    assert code == 0, out
    assert "fiscal year from month 4" in out
    platform.catalog.refresh()
    clock[0] = datetime(2026, 3, 31, 23, 59, 59, tzinfo=UTC)
    assert [account_no(platform, "Inv__c") for _ in range(2)] == ["INV/2026/00001", "INV/2026/00002"]
    clock[0] = datetime(2026, 4, 1, 0, 0, 0, tzinfo=UTC)
    assert account_no(platform, "Inv__c") == "INV/2027/00001"
    code, out = cli(capsys, db_url, "field", "show", "Account.Inv__c", "--json")
    assert code == 0, out
    assert json.loads(out)["fiscal_year_start"] == 4
    # a bad month is one line, exit 2, nothing changed
    code, out = cli(
        capsys,
        db_url,
        "field",
        "set",
        "Account",
        "Inv__c",
        "--format",
        "INV/{FYYYY}/{00000}",
        "--fiscal-year-start",
        "13",
    )
    assert code == 2 and out.count("\n") == 1 and "fiscal_year_start 13 must be a month 1-12" in out
    assert platform.catalog.refresh().rule("Account.Inv__c").fiscal_year_start == 4
    # the short token and a change of month through `field set`
    code, out = cli(
        capsys,
        db_url,
        "field",
        "set",
        "Account",
        "Inv__c",
        "--format",
        "INV/{FYY}/{00000}",
        "--fiscal-year-start",
        "1",
    )
    assert code == 0, out
    platform.catalog.refresh()
    assert account_no(platform, "Inv__c") == "INV/26/00001"
    assert verify(platform.db) == []


def _order_rule(db_url: str, capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    code, out = cli(capsys, db_url, "field", "set", "Order", "Order_Number__c", "--format", fmt)
    assert code == 0, out


def test_null_default_renders_for_fk_null_row_missing_and_empty(
    platform: Platform, clock: list[datetime], db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _order_rule(db_url, capsys, WITH_DEFAULT)
    platform.catalog.refresh()
    sg = platform.records.insert("Account", {"Name": "s", "BillingCountryCode": "SG"})["Id"]
    blank = platform.records.insert("Account", {"Name": "b", "BillingCountryCode": ""})["Id"]
    gone = platform.records.insert("Account", {"Name": "g", "BillingCountryCode": "US"})["Id"]
    with platform.db.begin() as conn:
        table = platform.catalog.current().table("Account")
        conn.execute(table.delete().where(table.c.Id == gone))
    orders = [
        platform.records.insert("Order", {})["Order_Number__c"],  # fk null
        platform.records.insert("Order", {"AccountId": blank})["Order_Number__c"],  # empty value
        platform.records.insert("Order", {"AccountId": sg})["Order_Number__c"],
    ]
    assert orders == ["XX-ORD-260417-01", "XX-ORD-260417-02", "SG-ORD-260417-01"]
    # a batch mixes both, one reservation per text
    many = platform.records.insert_many("Order", [{"AccountId": sg}, {}, {"AccountId": blank}])
    assert [r["Order_Number__c"] for r in many] == [
        "SG-ORD-260417-02",
        "XX-ORD-260417-03",
        "XX-ORD-260417-04",
    ]
    assert verify(platform.db) == []
    # without a default the field fails closed again, nothing written
    _order_rule(db_url, capsys, NO_DEFAULT)
    platform.catalog.refresh()
    before = platform.records.count("Order")
    with pytest.raises(TokenResolveError):
        platform.records.insert("Order", {})
    assert platform.records.count("Order") == before


def test_null_default_for_a_missing_row(platform: Platform, clock: list[datetime]) -> None:
    """A lookup id that names no row (possible where no foreign key is declared) shows the default."""
    platform.engine  # noqa: B018 - connect before changing the rule
    with platform.db.begin() as conn:
        from autonumber.rules.store import RuleSpec, store_rule

        store_rule(conn, RuleSpec("Order", "Order_Number__c", WITH_DEFAULT, scope="per_prefix"))
    platform.catalog.refresh()
    values = platform.engine.resolve("Order.Order_Number__c", [{"AccountId": "no-such-account"}])
    assert values == [{"Account.BillingCountryCode": "XX"}]


def test_null_default_is_validated(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    bootstrap_url(db_url)
    long_default = "{Account.BillingCountryCode|" + "X" * 30 + "}-{0000}"
    code, out = cli(
        capsys, db_url, "field", "add", "Order", "L__c", "--format", long_default, "--length", "12"
    )
    assert code == 2 and "rule 5" in out and out.count("\n") == 1, out
    code, out = cli(capsys, db_url, "format", "check", "{Account.BillingCountryCode|}-{0000}")
    assert code == 2 and "rule 0" in out, out


def _spec(tmp_path: Path, ops: list[str], name: str = "fiscal") -> Path:
    path = tmp_path / f"{name}.md"
    path.write_text(
        f"---\napiVersion: data-spec/v1\nid: 2026-06-01-i26-{name}\nscope: staging-then-production\n"
        "status: pending\n---\n\n## Operations\n\n```yaml\n" + "\n".join(ops) + "\n```\n",
        encoding="utf-8",
    )
    return path


def test_spec_operations_carry_the_fiscal_year_start(
    platform: Platform, clock: list[datetime], db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ops = [
        "- op: add_autonumber_field",
        "  object: Account",
        "  field: Fy__c",
        "  format: 'FY{FYY}-{0000}'",
        "  scope: per_prefix",
        "  fiscal_year_start: 7",
        "- op: set_rule",
        "  object: Account",
        "  field: Fy__c",
        "  format: 'FY{FYY}-{00000}'",
    ]
    code, out = run_cli(
        ["spec", "apply", str(_spec(tmp_path, ops)), "--env", "production", "--db", db_url], capsys
    )
    assert code == 0, out
    platform.catalog.refresh()
    assert platform.engine.rule("Account.Fy__c").fiscal_year_start == 7  # the set kept it
    clock[0] = datetime(2026, 7, 1, tzinfo=UTC)
    assert account_no(platform, "Fy__c") == "FY27-00001"
    bad = [*ops[:5], "  fiscal_year_start: 'April'"]
    code, out = run_cli(
        ["spec", "apply", str(_spec(tmp_path, bad, "bad")), "--env", "production", "--db", db_url], capsys
    )
    assert code == 2 and "fiscal_year_start must be an integer" in out, out
