"""`assign_batch` resolves cross-record tokens without N+1: one query per chain step for the
whole batch, so the statements a batch issues do not grow with its size. Counted with a
`before_cursor_execute` listener on every pool of the platform, on every backend."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any

import pytest
import sqlalchemy as sa
from engine_support import traced

import autonumber
from autonumber.db import create_engine
from autonumber.db.replies import to_utc
from autonumber.db.tables import counter_table
from autonumber.events import RecordBeforeCreate
from autonumber.rules.store import RuleSpec, store_rule
from autonumber.runtime import Platform
from support import bootstrap_url, make_platform

FIELD = "Quote.Quote_No__c"
COUNTRY = "{Account.BillingCountryCode}"
WIDE_QUOTE = RuleSpec(
    "Quote",
    "Quote_No__c",
    f"{COUNTRY}-QT-{{YY}}{{MM}}{{DD}}-{{0000}}",
    scope="per_prefix",
    overrides=(
        {
            "tokenLiteral": COUNTRY,
            "fkChains": [
                [{"fk": "AccountId", "targetObject": "Account", "targetField": "BillingCountryCode"}],
                [
                    {"fk": "OpportunityId", "targetObject": "Opportunity", "targetField": "AccountId"},
                    {"fk": "AccountId", "targetObject": "Account", "targetField": "BillingCountryCode"},
                ],
            ],
        },
    ),
)
"""The core Quote rule with a 4-digit counter, so 1,000 Quotes of one day fit (`{00}` holds 99)."""


def reads(seen: list[str], table: str) -> list[str]:
    """The SELECTs of `seen` that read `table`."""
    pattern = re.compile(rf"^SELECT .* FROM [`\"]?{table}[`\"]?( |$)", re.IGNORECASE)
    return [s for s in seen if pattern.match(s)]


@pytest.fixture
def platform(db_url: str) -> Iterator[Platform]:
    bootstrap_url(db_url)
    engine = create_engine(db_url)
    with engine.connect() as conn, conn.begin():
        store_rule(conn, WIDE_QUOTE)
    engine.dispose()
    # No catalog poll inside a counted window: on a loaded machine more than the default 1 s can
    # pass between setup and the call, and the poll's own reads would be counted as the call's.
    p = autonumber.connect(db_url, poll_interval=3600.0)
    yield p
    p.close()


@contextmanager
def counting(p: Platform) -> Iterator[list[str]]:
    """Collect every statement sent to the database through any of the platform's pools."""
    seen: list[str] = []

    def on_execute(conn: object, cursor: object, statement: str, *args: object) -> None:
        seen.append(" ".join(statement.split())[:160])

    engines = p.engines
    for engine in engines:
        sa.event.listen(engine, "before_cursor_execute", on_execute)
    try:
        yield seen
    finally:
        for engine in engines:
            sa.event.remove(engine, "before_cursor_execute", on_execute)


def make_quotes(p: Platform, n: int, accounts: int) -> list[dict[str, str]]:
    """n Quotes over `accounts` Accounts (SG and US): odd ones by AccountId, even ones only through
    an Opportunity (the depth-2 fallback chain)."""
    made = p.records.insert_many(
        "Account", [{"Name": f"a{k}", "BillingCountryCode": "SG" if k % 2 else "US"} for k in range(accounts)]
    )
    opps = p.records.insert_many(
        "Opportunity", [{"Name": f"o{k}", "AccountId": a["Id"]} for k, a in enumerate(made)]
    )
    quotes: list[dict[str, str]] = []
    for i in range(n):
        k = i % accounts
        link = {"OpportunityId": opps[k]["Id"]} if k % 2 == 0 else {"AccountId": made[k]["Id"]}
        quotes.append({"Id": f"q{i}", **link})
    return quotes


def statements(p: Platform, quotes: list[dict[str, str]]) -> tuple[list[str], list[str]]:
    with p.begin() as conn, counting(p) as seen:
        values = p.engine.assign_batch(FIELD, quotes, conn)
    return seen, values


@pytest.mark.parametrize("distinct", [False, True], ids=["20-accounts", "one-account-per-quote"])
def test_batch_of_1000_issues_as_many_queries_as_a_batch_of_10(platform: Platform, distinct: bool) -> None:
    small = make_quotes(platform, 10, 10 if distinct else 20)
    large = make_quotes(platform, 1000, 1000 if distinct else 20)
    statements(platform, small)  # first use creates the two per_prefix counter rows
    few, _ = statements(platform, small)
    many, many_values = statements(platform, large)
    assert len(many) == len(few), f"10 Quotes: {few}\n1000 Quotes: {many}"
    assert len(many) <= 12, many
    assert len(set(many_values)) == 1000
    assert {v[:2] for v in many_values} == {"SG", "US"}
    assert len(reads(many, "Account")) == 2, many  # AccountId chain + the fallback chain's last step
    assert len(reads(many, "Opportunity")) == 1, many


def test_each_row_is_read_once_per_call(platform: Platform) -> None:
    """The fallback chain's Account step reuses rows the primary chain already read."""
    sg = platform.records.insert("Account", {"Name": "a", "BillingCountryCode": "SG"})["Id"]
    opp = platform.records.insert("Opportunity", {"Name": "o", "AccountId": sg})["Id"]
    quotes = [{"Id": "q1", "AccountId": sg}, {"Id": "q2", "OpportunityId": opp}]
    statements(platform, quotes)
    seen, values = statements(platform, quotes)
    assert values[0][:3] == "SG-" and values[1][:3] == "SG-"
    assert len(reads(seen, "Account")) == 1, seen  # q2's Account was read for q1 already
    assert len(reads(seen, "Opportunity")) == 1, seen


def test_tokens_without_a_caller_connection_share_one_fresh_connection(platform: Platform) -> None:
    """A Contract has two tokens; without `conn=` both read on one checkout of the fresh-read pool."""
    sg = platform.records.insert("Account", {"Name": "a", "BillingCountryCode": "SG"})["Id"]
    record = {"Id": "c1", "AccountId": sg, "RecordTypeId": "rt_Contract_Services_Agreement"}
    checkouts: list[object] = []

    def on_checkout(*args: object) -> None:
        checkouts.append(args[0])

    sa.event.listen(platform.fresh_db.pool, "checkout", on_checkout)
    try:
        with counting(platform) as seen:
            values = platform.engine.resolve("Contract.Contract_Number__c", [record])
    finally:
        sa.event.remove(platform.fresh_db.pool, "checkout", on_checkout)
    assert values == [{"Account.BillingCountryCode": "SG", "RecordType.RecordTypeCode": "CSA"}]
    assert len(checkouts) == 1
    assert len(reads(seen, "Account")) == 1 and len(reads(seen, "_System_RecordType")) == 1, seen


# ---- one record, one caller: the statements `records.insert` sends ------------------
#
# Counted at the driver (`engine_support.traced`) over every pool of the platform, with
# SQLAlchemy's `commit` event for each COMMIT where the driver sends it otherwise. A transaction's
# start is not counted: SQLite sends BEGIN IMMEDIATE on the driver's connection, psycopg a BEGIN of
# its own, MariaDB none (the first statement opens it).
# The native INSERT a user could write instead makes INSERT, COMMIT.

GROUPED = {
    "sqlite": ["UPDATE", "INSERT", "COMMIT"],
    "mysql": ["SET"],
    "postgresql": ["WITH"],
}
"""A grouped insert alone (a group of one): reservation, row and COMMIT in one round trip, its
whole transaction. On MariaDB one text from `SET` to `COMMIT` (the reservation's UPDATE and the
row's INSERT … RETURNING, which builds the value and the clock sample from what the UPDATE set);
on PostgreSQL one statement in autocommit reserves the number, builds the value and inserts the
row (a value that is fixed text around the counter: Engine.insert_numbered). The native INSERT
a user could write makes INSERT, COMMIT."""
IN_CALLER_TXN = {
    "sqlite": ["SAVEPOINT", "UPDATE", "INSERT", "RELEASE", "COMMIT"],
    "mysql": ["SET", "INSERT", "COMMIT"],
    "postgresql": ["WITH", "INSERT", "COMMIT"],
}
"""In a caller's transaction: the reservation's own transaction in one round trip that commits by
itself (increment, journal line and clock sample: one statement in autocommit on PostgreSQL, one
text of statements from `SET` to `COMMIT` on MariaDB), then the caller's INSERT and COMMIT. SQLite
reserves in a savepoint of the caller's transaction instead, with the row in the same savepoint:
the group writer's two statements (the counter's UPDATE … RETURNING, the INSERT with the value
built from it), so a refused row gives its number back."""


def sent(p: Platform) -> AbstractContextManager[list[str]]:
    """Every statement the platform's pools send, whole, with a "COMMIT" for each commit."""
    return traced(p)


def kinds(seen: list[str]) -> list[str]:
    return [s.split()[0].upper() for s in seen]


def backend(p: Platform) -> str:
    return p.db.dialect.name


def counter_stamp(p: Platform, field_id: str) -> Any:
    with p.db.connect() as conn:
        return conn.execute(
            sa.select(counter_table.c.last_modified_date).where(counter_table.c.field_id == field_id)
        ).scalar_one()


@pytest.fixture
def alone(db_url: str) -> Iterator[Platform]:
    """The core pack, connected with every default (group commit on), nothing polling."""
    p = make_platform(db_url, poll_interval=3600.0)
    p.records.insert("Case", {"Subject": "warm"})  # pools connected, statements compiled
    with p.begin() as conn:
        p.records.insert("Case", {"Subject": "warm"}, conn)
    yield p
    p.close()


def test_a_grouped_insert_alone_sends_update_insert_commit(alone: Platform) -> None:
    with sent(alone) as seen:
        record = alone.records.insert("Case", {"Subject": "one"})
    assert kinds(seen) == GROUPED[backend(alone)], seen
    if backend(alone) == "mysql":
        # the INSERT rides in the UPDATE's round trip, its CreatedDate the sample the UPDATE stamped;
        # its RETURNING reads the counter back (the writer fence's trigger hides LAST_INSERT_ID)
        statements = [part.split()[0] for part in seen[0].split("; ")]
        assert statements == ["SET", "START", "UPDATE", "INSERT", "COMMIT"], seen
        update, insert = seen[0].split("; INSERT INTO ")
        assert "@autonumber_stamp := " in update and " RETURNING " in insert, seen
        assert insert.endswith("CAST(@autonumber_next AS SIGNED); COMMIT"), seen
        assert "@autonumber_stamp FROM DUAL WHERE @autonumber_next IS NOT NULL" in insert, seen
    stored = alone.records.get("Case", record["Id"])
    assert stored == record
    # one clock sample: the record's CreatedDate is the one the reservation stamped on its counter
    stamp = to_utc(counter_stamp(alone, alone.engine.rule("Case.CaseNumber").counter_id))
    assert datetime.fromisoformat(record["CreatedDate"]) == stamp


def test_an_insert_in_a_callers_transaction_sends_its_reservation_then_the_row(alone: Platform) -> None:
    with sent(alone) as seen, alone.begin() as conn:
        alone.records.insert("Case", {"Subject": "one"}, conn)
    expected = IN_CALLER_TXN[backend(alone)]
    assert kinds(seen) == expected, seen
    if backend(alone) == "mysql":
        statements = [part.split()[0] for part in seen[0].split("; ")]
        assert statements == ["SET", "START", "UPDATE", "INSERT", "SELECT", "COMMIT"], seen


def autocommit_modes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bool]]:
    """Each statement psycopg's cursors run from now on: its first word and whether the
    connection was in autocommit (until `monkeypatch.undo()`)."""
    import psycopg

    modes: list[tuple[str, bool]] = []
    execute = psycopg.Cursor.execute

    def watched(self: psycopg.Cursor[Any], query: Any, *args: Any, **kwargs: Any) -> Any:
        modes.append((str(query).split()[0], self.connection.autocommit))
        return execute(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", watched)
    return modes


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_postgresql_reservation_commits_by_itself_and_leaves_its_connection_transactional(
    alone: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL: the reservation's one statement runs in autocommit (no BEGIN or COMMIT round
    trip); its connection goes back to the pool out of autocommit, for the next user's transaction."""
    modes = autocommit_modes(monkeypatch)
    value = alone.engine.assign_one("Case.CaseNumber", {})
    monkeypatch.undo()
    assert modes == [("WITH", True)]
    with alone.reservation_db.connect() as conn:
        assert conn.connection.dbapi_connection.autocommit is False  # type: ignore[union-attr]
    with alone.fresh_db.connect() as other:  # committed: another session sees the counter moved
        moved = other.execute(
            sa.select(counter_table.c.next_value).where(
                counter_table.c.field_id == alone.engine.rule("Case.CaseNumber").counter_id
            )
        ).scalar_one()
    assert moved > int(value)


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_postgresql_grouped_insert_commits_by_itself_and_leaves_its_connection_transactional(
    alone: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL: the group writer's one statement runs in autocommit (no BEGIN or COMMIT round
    trip) and is durable at once; the held connection leaves autocommit after it, so a write that
    is not that one statement (a value showing a date) runs in a transaction of its own."""
    modes = autocommit_modes(monkeypatch)
    record = alone.records.insert("Case", {"Subject": "one"})
    alone.records.insert("Account", {"Name": "dated"})
    monkeypatch.undo()
    assert modes[0] == ("WITH", True), modes
    assert modes[1:] and all(not auto for _, auto in modes[1:]), modes
    with alone.fresh_db.connect() as other:  # committed: another session sees the row
        stored = sa.text('SELECT COUNT(*) FROM "Case" WHERE "Id" = :i')
        assert other.execute(stored, {"i": record["Id"]}).scalar() == 1


def test_a_value_showing_a_date_reads_the_clock_before_its_insert(alone: Platform) -> None:
    """Account's number shows the reservation's date, so the sample is needed before the INSERT:
    MariaDB reads it back with a SELECT there (UPDATE … RETURNING elsewhere carries it)."""
    alone.records.insert("Account", {"Name": "warm"})
    with sent(alone) as seen:
        record = alone.records.insert("Account", {"Name": "a"})
    extra = ["SELECT"] if backend(alone) == "mysql" else []
    assert kinds(seen) == ["UPDATE", *extra, "INSERT", "COMMIT"], seen
    day = datetime.fromisoformat(record["CreatedDate"]).strftime("%Y%m%d")
    assert record["Account_ID__c"].startswith(f"IBG-B-{day}-"), record


def test_a_record_before_create_subscriber_sees_the_created_date_it_is_stored_with(alone: Platform) -> None:
    """A subscriber is shown the record before its INSERT, CreatedDate included, so the clock is read
    before it on every backend; what it saw is what is stored."""
    shown: list[dict[str, Any]] = []
    alone.events.subscribe(RecordBeforeCreate, lambda event: shown.extend(map(dict, event.records)))
    with sent(alone) as seen:
        record = alone.records.insert("Case", {"Subject": "seen"})
    extra = ["SELECT"] if backend(alone) == "mysql" else []
    assert kinds(seen) == ["UPDATE", *extra, "INSERT", "COMMIT"], seen
    (before,) = shown
    assert before["CreatedDate"] is not None
    assert to_utc(before["CreatedDate"]).isoformat() == record["CreatedDate"]
    assert before["CaseNumber"] == record["CaseNumber"]
