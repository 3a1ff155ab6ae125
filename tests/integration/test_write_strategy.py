"""Which write path runs (write/strategy.py), as tables: the call decides the transaction; the
backend, the rules and the transaction decide how the rows get their numbers — on every backend,
and each path then stores what it says."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from autonumber import Platform
from autonumber.write.strategy import Call, Numbering, choose_call, choose_numbering
from support import make_platform

CALLS: list[tuple[dict[str, Any], Call]] = [
    # (the call, as choose_call sees it) → the transaction it runs in
    ({"one": True, "grouping": True}, Call.GROUPED),
    ({"one": True, "grouping": False}, Call.OWN),
    ({"one": True, "grouping": True, "idempotent": True}, Call.OWN),
    ({"one": True, "grouping": True, "adopted": True}, Call.OWN),
    ({"one": True, "grouping": True, "conn": "caller"}, Call.CALLER),
    ({"grouping": True}, Call.OWN),  # insert_many of a list: never grouped
    ({"conn": "caller"}, Call.CALLER),
    ({"streamed": True}, Call.STREAMED),
    ({"streamed": True, "conn": "caller"}, Call.STREAMED),
    ({"streamed": True, "idempotent": True}, Call.OWN),  # an idempotent call is one transaction
    ({"streamed": True, "commit_each": True}, Call.STREAMED_EACH),
]


@pytest.mark.parametrize(
    ("call", "expected"), CALLS, ids=[e.value + str(i) for i, (_, e) in enumerate(CALLS)]
)
def test_the_call_decides_its_transaction(call: dict[str, Any], expected: Call, sqlite_url: str) -> None:
    engine = sa.create_engine(sqlite_url)
    try:
        with engine.connect() as caller:
            given = {"conn": None, "idempotent": False, "adopted": False, "grouping": False, **call}
            if given["conn"] == "caller":
                given["conn"] = caller
            assert choose_call(**given) is expected
    finally:
        engine.dispose()


# (object, rows, where) → the numbering on sqlite, mysql, postgresql. "group": the group writer's
# transaction (numbers reserved in it); "own": one transaction of ours for insert_many; "stream":
# a streamed batch (bulk path). Case: one global rule, fixed text around the counter. Account: a
# dated rule. Contract: two rules.
NI, RES = Numbering.NUMBERED_INSERT, Numbering.RESERVED
NUMBERING: list[tuple[str, int, str, dict[str, Numbering]]] = [
    ("Case", 1, "group", {"sqlite": NI, "mysql": NI, "postgresql": NI}),
    ("Case", 5, "group", {"sqlite": NI, "mysql": NI, "postgresql": NI}),
    ("Case", 1, "own", {"sqlite": NI, "mysql": RES, "postgresql": RES}),  # SQLite reserves in it
    ("Case", 5, "stream", {"sqlite": RES, "mysql": RES, "postgresql": RES}),
    ("Account", 1, "group", {"sqlite": RES, "mysql": RES, "postgresql": RES}),
    ("Contract", 1, "group", {"sqlite": RES, "mysql": RES, "postgresql": RES}),
]


@pytest.fixture
def plat(db_url: str) -> Iterator[Platform]:
    p = make_platform(db_url)
    try:
        yield p
    finally:
        p.close()


def _choose(p: Platform, c: sa.Connection, object_name: str, n: int, where: str, **kw: Any) -> Any:
    snapshot = p.catalog.current()
    rules = list(snapshot.rules_of(object_name))
    records = [{"Subject": f"s{i}"} for i in range(n)]
    options = {"statements_watched": False, "event_listeners": False, **kw}
    return choose_numbering(
        p.engine, rules, records, c, inside=where == "group", bulk=where == "stream", adopted=False, **options
    )


@pytest.mark.parametrize(("object_name", "n", "where", "expected"), NUMBERING)
def test_backend_rules_and_transaction_decide_the_numbering(
    plat: Platform, object_name: str, n: int, where: str, expected: dict[str, Numbering]
) -> None:
    backend = plat.db.dialect.name
    with plat.db.begin() as c:
        choice = _choose(plat, c, object_name, n, where)
    assert choice.numbering is expected[backend]
    assert (choice.number is not None) == (choice.numbering is NI)
    # a savepoint exactly where SQLite reserves in a transaction that is not the group writer's
    assert choice.savepoint == (backend == "sqlite" and where == "own")


def test_a_listener_or_a_statement_watcher_takes_the_reserved_path(plat: Platform) -> None:
    with plat.db.begin() as c:
        assert _choose(plat, c, "Case", 1, "group").numbering is NI
        assert _choose(plat, c, "Case", 1, "group", event_listeners=True).numbering is RES
        watched = _choose(plat, c, "Case", 1, "own", statements_watched=True).numbering
    assert watched is RES  # the numbered insert runs on the driver's cursor, unseen by a watcher


def test_each_numbering_path_stores_consecutive_numbers(plat: Platform) -> None:
    """One insert_many per path the table above names for this backend: numbered insert (Case in
    a group-sized own transaction on SQLite), reserved (Account, Contract), streamed: every value
    stored once, in order, and the counters moved by exactly what was stored."""
    first = plat.records.insert_many("Case", [{"Subject": "a"}, {"Subject": "b"}])
    streamed = plat.records.insert_many("Case", iter([{"Subject": "c"}, {"Subject": "d"}]))
    values = [int(r["CaseNumber"]) for r in first + streamed]
    assert values == list(range(values[0], values[0] + 4))
    accounts = plat.records.insert_many("Account", [{"Name": "x"}, {"Name": "y"}])
    tails = [int(r["Account_ID__c"].rsplit("-", 1)[1]) for r in accounts]
    assert tails[1] == tails[0] + 1
