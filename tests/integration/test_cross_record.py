"""Cross-record tokens on every backend (cases 8–12; docs/cross-record.md).

Resolution runs before any reservation, so a token that fails closed writes nothing: no record
and no counter movement. Most tests pin the database clock through the dialect's `utc_now` seam so
the rendered dates are exact; case 8 runs on the real database clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa

import autonumber
from autonumber.db import create_engine
from autonumber.db.tables import counter_table
from autonumber.errors import TokenResolveError
from autonumber.rules.store import RuleSpec, store_rule
from autonumber.runtime import Platform
from support import bootstrap_url

CSA = "rt_Contract_Services_Agreement"
DAY = datetime(2026, 4, 17, 9, 30, tzinfo=UTC)
NEXT_DAY = datetime(2026, 4, 18, 0, 0, 0, 1, tzinfo=UTC)
COUNTRY = "{Account.BillingCountryCode}"


@pytest.fixture
def platform(db_url: str) -> Iterator[Platform]:
    """The core pack on a wiped database."""
    bootstrap_url(db_url)
    p = autonumber.connect(db_url)
    yield p
    p.close()


@pytest.fixture
def clock(platform: Platform, monkeypatch: pytest.MonkeyPatch) -> list[datetime]:
    """Pin the database clock the reservation samples; set `clock[0]` to move it."""
    now = [DAY]
    monkeypatch.setattr(platform.dialect, "utc_now", lambda conn: now[0])
    return now


def account(p: Platform, country: str | None, conn: Any = None) -> str:
    return str(p.records.insert("Account", {"Name": "Acme", "BillingCountryCode": country}, conn)["Id"])


def contract(p: Platform, conn: Any = None, **fields: Any) -> str:
    fields.setdefault("RecordTypeId", CSA)
    return str(p.records.insert("Contract", fields, conn)["Contract_Number__c"])


def quote(p: Platform, **fields: Any) -> str:
    return str(p.records.insert("Quote", {"Name": "q", **fields})["Quote_No__c"])


def counters(p: Platform) -> dict[tuple[str, str], int]:
    with p.db.connect() as conn:
        rows = conn.execute(
            sa.select(counter_table.c.field_id, counter_table.c.scope_key, counter_table.c.next_value)
        )
        return {(r[0], r[1]): int(r[2]) for r in rows}


def refused(action: Callable[[], object]) -> TokenResolveError:
    with pytest.raises(TokenResolveError) as info:
        action()
    message = str(info.value)
    assert "\n" not in message
    return info.value


# -- case 8: the happy path on the real database clock ------------------------------------------


def test_case8_contract_renders_country_type_code_and_date(platform: Platform) -> None:
    acc = account(platform, "SG")
    with platform.db.connect() as conn:
        before = platform.dialect.utc_now(conn)
    number = contract(platform, AccountId=acc)
    with platform.db.connect() as conn:
        after = platform.dialect.utc_now(conn)
    days = {f"{d:%y%m%d}" for d in (before, after)}
    assert number in {f"SG-CSA-{d}-01" for d in days}


def test_order_one_hop_and_per_prefix_sequences(platform: Platform, clock: list[datetime]) -> None:
    sg, us = account(platform, "SG"), account(platform, "US")
    orders = [platform.records.insert("Order", {"AccountId": a})["Order_Number__c"] for a in (sg, us, sg)]
    assert orders == ["SG-ORD-260417-01", "US-ORD-260417-01", "SG-ORD-260417-02"]


# -- case 8a / 8b: read strategies ------------------------------------------------------------------


def test_case8a_account_and_contract_in_one_caller_transaction(
    platform: Platform, clock: list[datetime]
) -> None:
    with platform.begin() as conn:
        acc = account(platform, "US", conn)
        number = contract(platform, conn, AccountId=acc)
    assert number == "US-CSA-260417-01"
    assert platform.records.count("Contract") == 1


def use_fresh_read(p: Platform, field: str = "Order.Order_Number__c") -> None:
    """Switch a core rule's country token to readStrategy fresh_read."""
    obj, name = field.split(".")
    spec = RuleSpec(
        obj,
        name,
        f"{COUNTRY}-ORD-{{YY}}{{MM}}{{DD}}-{{00}}",
        scope="per_prefix",
        overrides=({"tokenLiteral": COUNTRY, "readStrategy": "fresh_read"},),
    )
    with p.db.begin() as conn:
        store_rule(conn, spec)
    p.catalog.refresh()
    assert p.engine.rule(field).token_refs[0].readStrategy == "fresh_read"


def test_fresh_read_cannot_see_an_account_of_the_same_transaction(
    platform: Platform, clock: list[datetime]
) -> None:
    use_fresh_read(platform)
    with platform.begin() as conn:
        acc = account(platform, "US", conn)
        err = refused(lambda: platform.records.insert("Order", {"AccountId": acc}, conn))
    assert err.cause == "row missing"
    assert platform.records.count("Order") == 0


def _update_country(p: Platform, account_id: str, country: str, busy_ms: int | None = None) -> None:
    """A concurrent session: its own connection, its own committed transaction."""
    other = create_engine(p.db.url.render_as_string(hide_password=False))
    try:
        with other.connect() as conn:
            if busy_ms is not None:  # on the driver: SQLAlchemy would begin (and wait 30 s) first
                conn.connection.driver_connection.execute(f"PRAGMA busy_timeout={busy_ms}")  # type: ignore[union-attr]
            with conn.begin():
                table = p.catalog.current().table("Account")
                conn.execute(
                    sa.update(table).where(table.c.Id == account_id).values(BillingCountryCode=country)
                )
    finally:
        other.dispose()


@pytest.mark.parametrize("strategy", ["caller_txn", "fresh_read"])
def test_case8b_concurrent_update_on_servers(
    server_db_url: str, strategy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MariaDB runs READ COMMITTED (db/mysql.py), PostgreSQL READ COMMITTED by default: every
    statement of the caller's transaction sees the latest commit, so both strategies render the
    new country even though the caller read the Account before the concurrent UPDATE."""
    bootstrap_url(server_db_url)
    with autonumber.connect(server_db_url) as p:
        monkeypatch.setattr(p.dialect, "utc_now", lambda conn: DAY)
        if strategy == "fresh_read":
            use_fresh_read(p)
        acc = account(p, "SG")
        with p.begin() as conn:
            assert p.records.get("Account", acc, conn)["BillingCountryCode"] == "SG"
            _update_country(p, acc, "US")
            number = p.records.insert("Order", {"AccountId": acc}, conn)["Order_Number__c"]
        assert number == "US-ORD-260417-01"


@pytest.mark.parametrize("strategy", ["caller_txn", "fresh_read"])
def test_case8b_repeatable_read_snapshot_is_stale_only_for_caller_txn(
    server_db_url: str, strategy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fresh-read trade-off, shown by running the caller at REPEATABLE READ: its snapshot (taken at
    its first read) keeps the old country for caller_txn; fresh_read still sees the commit."""
    bootstrap_url(server_db_url)
    with autonumber.connect(server_db_url) as p:
        monkeypatch.setattr(p.dialect, "utc_now", lambda conn: DAY)
        if strategy == "fresh_read":
            use_fresh_read(p)
        acc = account(p, "SG")
        with p.db.connect() as raw:
            conn = raw.execution_options(isolation_level="REPEATABLE READ")
            with conn.begin():
                assert p.records.get("Account", acc, conn)["BillingCountryCode"] == "SG"
                _update_country(p, acc, "US")
                number = p.records.insert("Order", {"AccountId": acc}, conn)["Order_Number__c"]
        expected = "SG" if strategy == "caller_txn" else "US"
        assert number == f"{expected}-ORD-260417-01"


def test_case8b_sqlite_has_no_concurrent_commit_mid_transaction(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite: a caller transaction begins IMMEDIATE and holds the single write lock, so a
    concurrent UPDATE cannot commit while it is open (it waits, then fails "database is locked");
    the caller renders the value committed when it began, which is also the latest one."""
    bootstrap_url(sqlite_url)
    with autonumber.connect(sqlite_url) as p:
        monkeypatch.setattr(p.dialect, "utc_now", lambda conn: DAY)
        acc = account(p, "SG")
        with p.begin() as conn:
            with pytest.raises(sa.exc.OperationalError, match="database is locked"):
                _update_country(p, acc, "US", busy_ms=100)
            number = p.records.insert("Order", {"AccountId": acc}, conn)["Order_Number__c"]
        assert number == "SG-ORD-260417-01"
        _update_country(p, acc, "US")
        assert p.records.insert("Order", {"AccountId": acc})["Order_Number__c"] == "US-ORD-260417-01"


# -- cases 9, 10, target null: fail closed, nothing written --------------------------------------


def test_case9_null_account_is_refused_and_nothing_is_written(
    platform: Platform, clock: list[datetime]
) -> None:
    contract(platform, AccountId=account(platform, "SG"))
    before = counters(platform)
    err = refused(lambda: contract(platform))
    assert err.cause == "fk null"
    assert err.field_id == "Contract.Contract_Number__c"
    assert err.token == COUNTRY
    assert err.chains == (
        "directField Account_Country_Code__c: empty",
        "AccountId → Account.BillingCountryCode: fk null (Contract.AccountId is empty)",
    )
    message = str(err)
    for part in ("Contract.Contract_Number__c", COUNTRY, "AccountId → Account.BillingCountryCode"):
        assert part in message
    assert platform.records.count("Contract") == 1
    assert counters(platform) == before  # ContractNumber did not move either
    assert contract(platform, AccountId=account(platform, "SG")) == "SG-CSA-260417-02"


def test_case10_missing_account_row(platform: Platform, clock: list[datetime]) -> None:
    err = refused(lambda: contract(platform, AccountId="no-such-account"))
    assert err.cause == "row missing"
    assert "no Account 'no-such-account'" in str(err)
    assert platform.records.count("Contract") == 0


def test_account_without_country_is_target_null(platform: Platform, clock: list[datetime]) -> None:
    err = refused(lambda: contract(platform, AccountId=account(platform, None)))
    assert err.cause == "target null"
    err = refused(lambda: contract(platform, AccountId=account(platform, "")))
    assert err.cause == "target null"
    assert platform.records.count("Contract") == 0


def test_assign_batch_fails_closed_for_the_whole_batch(platform: Platform, clock: list[datetime]) -> None:
    good = {"AccountId": account(platform, "SG"), "RecordTypeId": CSA}
    before = counters(platform)
    err = refused(lambda: platform.records.insert_many("Contract", [good, good, {"RecordTypeId": CSA}]))
    assert err.cause == "fk null"
    assert platform.records.count("Contract") == 0
    assert counters(platform) == before
    bad = {"AccountId": None, "RecordTypeId": CSA, "Id": "c-2"}
    err = refused(lambda: platform.engine.assign_batch("Contract.Contract_Number__c", [good, bad]))
    assert err.record_id == "c-2"
    assert "record 'c-2'" in str(err)


# -- direct field, fallback chains, depth 2 -------------------------------------------------------


def test_direct_field_wins_when_set_and_non_empty(platform: Platform, clock: list[datetime]) -> None:
    sg = account(platform, "SG")
    assert contract(platform, AccountId=sg, Account_Country_Code__c="JP") == "JP-CSA-260417-01"
    assert contract(platform, AccountId=sg, Account_Country_Code__c="") == "SG-CSA-260417-01"
    assert contract(platform, Account_Country_Code__c="JP") == "JP-CSA-260417-02"  # no AccountId needed


def test_case11_primary_chain_empty_fallback_succeeds(platform: Platform, clock: list[datetime]) -> None:
    sg, us = account(platform, "SG"), account(platform, None)
    opp = platform.records.insert("Opportunity", {"Name": "o", "AccountId": sg})["Id"]
    assert quote(platform, OpportunityId=opp) == "SG-QT-260417-01"  # AccountId null
    assert quote(platform, AccountId=us, OpportunityId=opp) == "SG-QT-260417-02"  # target null
    assert quote(platform, AccountId=sg, OpportunityId="gone") == "SG-QT-260417-03"  # primary wins


def test_case12_depth2_chain_and_its_failures(platform: Platform, clock: list[datetime]) -> None:
    us = account(platform, "US")
    opp = platform.records.insert("Opportunity", {"Name": "o", "AccountId": us})["Id"]
    assert quote(platform, OpportunityId=opp) == "US-QT-260417-01"

    orphan = platform.records.insert("Opportunity", {"Name": "orphan"})["Id"]
    err = refused(lambda: quote(platform, OpportunityId=orphan))
    assert err.cause == "fk null"
    assert err.chains[1] == (
        "OpportunityId → Opportunity.AccountId → Account.BillingCountryCode: "
        f"fk null (Opportunity {orphan!r} has no AccountId)"
    )
    err = refused(lambda: quote(platform, OpportunityId="gone"))
    assert err.cause == "row missing"
    assert len(err.chains) == 2 and "no Opportunity 'gone'" in err.chains[1]
    err = refused(lambda: quote(platform))
    assert err.cause == "fk null"
    assert platform.records.count("Quote") == 1


# -- per_prefix scopes --------------------------------------------------------------------------


def test_per_prefix_two_countries_one_day_then_a_new_day(platform: Platform, clock: list[datetime]) -> None:
    sg, us = account(platform, "SG"), account(platform, "US")
    assert [contract(platform, AccountId=a) for a in (sg, us, sg, us, sg)] == [
        "SG-CSA-260417-01",
        "US-CSA-260417-01",
        "SG-CSA-260417-02",
        "US-CSA-260417-02",
        "SG-CSA-260417-03",
    ]
    nda = "rt_Contract_Non_Disclosure_Agreement"
    assert contract(platform, AccountId=sg, RecordTypeId=nda) == "SG-NDA-260417-01"
    clock[0] = NEXT_DAY
    assert [contract(platform, AccountId=a) for a in (us, sg)] == ["US-CSA-260418-01", "SG-CSA-260418-01"]
    keys = {k for (f, k) in counters(platform) if f == "Contract.Contract_Number__c"}
    assert keys == {"SG-CSA-260417-", "US-CSA-260417-", "SG-NDA-260417-", "SG-CSA-260418-", "US-CSA-260418-"}


def test_batch_groups_by_country_into_independent_sequences(
    platform: Platform, clock: list[datetime]
) -> None:
    sg, us = account(platform, "SG"), account(platform, "US")
    rows = [{"AccountId": a, "RecordTypeId": CSA} for a in (sg, us, sg, sg, us)]
    numbers = [r["Contract_Number__c"] for r in platform.records.insert_many("Contract", rows)]
    assert numbers == [
        "SG-CSA-260417-01",
        "US-CSA-260417-01",
        "SG-CSA-260417-02",
        "SG-CSA-260417-03",
        "US-CSA-260417-02",
    ]


def test_new_scope_continues_after_live_values(platform: Platform, clock: list[datetime]) -> None:
    """A lazy per_prefix row starts above the live column max of its own scope only (livemax)."""
    table = platform.catalog.current().table("Contract")
    with platform.begin() as conn:
        conn.execute(
            sa.insert(table),
            [
                {"Id": "legacy-1", "Contract_Number__c": "SG-CSA-260417-07"},
                {"Id": "legacy-2", "Contract_Number__c": "SGX-CSA-260417-41"},
                {"Id": "legacy-3", "Contract_Number__c": "SG-CSA-260416-55"},
            ],
        )
    assert contract(platform, AccountId=account(platform, "SG")) == "SG-CSA-260417-08"
    assert contract(platform, AccountId=account(platform, "S_")) == "S_-CSA-260417-01"  # LIKE escaped
    assert contract(platform, AccountId=account(platform, "SGX")) == "SGX-CSA-260417-42"
