"""The `gapless` numbering policy: the number is taken in the caller's transaction, so a
rollback gives it back; concurrent callers (threads and processes) get one contiguous run."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import pytest
import sqlalchemy as sa
from engine_support import (
    CASE,
    assert_unique_contiguous,
    counter_rows,
    insert_cases,
    make_platform,
    number,
    run_threads,
    store_rules,
)
from sqlalchemy.engine import Connection

from autonumber.errors import GaplessNeedsTransaction, TransactionConflict
from autonumber.rules.fields import add_field
from autonumber.rules.store import RuleSpec
from autonumber.runtime import Platform

INVOICE = RuleSpec("Case", "CaseNumber", "INV-{YYYY}-{00000}", scope="per_prefix", numbering="gapless")


class Boom(Exception):
    """The caller's own failure after its insert: its transaction rolls back."""


@pytest.fixture
def platform(db_url: str) -> Iterator[Platform]:
    p = make_platform(db_url)
    store_rules(p, INVOICE)
    yield p
    p.close()


def _rolled_back_insert(p: Platform, field: str = "CaseNumber") -> str:
    """Insert a Case inside a caller transaction that then fails; return the number it saw."""
    seen: list[str] = []
    with pytest.raises(Boom), p.begin() as conn:
        seen.append(p.records.insert("Case", {"Subject": "rolled back"}, conn)[field])
        raise Boom()
    return seen[0]


def test_rule_is_stored_and_read_back(platform: Platform) -> None:
    rule = platform.catalog.current().rule(CASE)
    assert (rule.numbering, rule.gapless, rule.scope) == ("gapless", True, "per_prefix")


def test_rollback_gives_the_number_back(platform: Platform) -> None:
    first = platform.records.insert("Case", {"Subject": "a"})["CaseNumber"]
    lost = _rolled_back_insert(platform)
    second = platform.records.insert("Case", {"Subject": "b"})["CaseNumber"]
    assert lost == second, "the rolled-back caller's number is the next caller's"
    assert number(second) == number(first) + 1
    assert first.startswith("INV-") and first[4:8].isdigit() and first.endswith("-00001")
    assert max(counter_rows(platform, CASE).values()) == 3, "the counter moved past 2 numbers only"


def test_batch_rollback_gives_every_number_back(platform: Platform) -> None:
    with pytest.raises(Boom), platform.begin() as conn:
        platform.records.insert_many("Case", [{"Subject": f"r{i}"} for i in range(5)], conn)
        raise Boom()
    stored = platform.records.insert_many("Case", [{"Subject": f"s{i}"} for i in range(5)])
    assert [number(r["CaseNumber"]) for r in stored] == [1, 2, 3, 4, 5]


def test_8_threads_x_20_inserts_are_160_contiguous(platform: Platform) -> None:
    def work(i: int) -> list[str]:
        return [platform.records.insert("Case", {"Subject": f"t{i}-{k}"})["CaseNumber"] for k in range(20)]

    values = run_threads(8, work)
    assert assert_unique_contiguous(values) == list(range(1, 161))
    assert platform.records.count("Case") == 160


def test_threads_with_rollbacks_leave_no_gap(platform: Platform) -> None:
    """Every third caller rolls back: the stored numbers are still one unbroken run."""

    def work(i: int) -> list[str]:
        out = []
        for k in range(12):
            if (i + k) % 3 == 0:
                _rolled_back_insert(platform)
            else:
                out.append(platform.records.insert("Case", {"Subject": f"t{i}-{k}"})["CaseNumber"])
        return out

    values = run_threads(6, work)
    assert assert_unique_contiguous(values) == list(range(1, len(values) + 1))


def test_processes_get_one_contiguous_run(db_url: str, platform: Platform) -> None:
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(3, mp_context=spawn) as pool:
        futures = [pool.submit(insert_cases, db_url, "combining", 3, 8, 3) for _ in range(3)]
        values = [v for f in futures for v in f.result(timeout=300)]
    assert assert_unique_contiguous(values) == list(range(1, 73))


def test_gapless_needs_the_callers_transaction(platform: Platform) -> None:
    with pytest.raises(GaplessNeedsTransaction, match="gapless field"):
        platform.engine.assign_one(CASE, {})


def test_a_record_with_a_gapless_and_a_standard_field_keeps_both_promises(platform: Platform) -> None:
    """Case.CaseNumber is gapless, Case.Ref__c standard: the gapless run has no hole, the standard
    numbers stay unique (on a server a rollback leaves a gap in them; never a duplicate)."""
    with platform.begin() as conn:
        add_field(conn, RuleSpec("Case", "Ref__c", "R-{000000}"))
    platform.catalog.refresh()
    assert not platform.catalog.current().rule("Case.Ref__c").gapless

    def work(i: int) -> list[str]:
        out = []
        for k in range(10):
            if k % 4 == 3:
                _rolled_back_insert(platform)
            else:
                rec = platform.records.insert("Case", {"Subject": f"t{i}-{k}"})
                out.append(f"{rec['CaseNumber']}|{rec['Ref__c']}")
        return out

    pairs = run_threads(6, work)
    gapless = [p.split("|")[0] for p in pairs]
    standard = [p.split("|")[1] for p in pairs]
    assert assert_unique_contiguous(gapless) == list(range(1, len(pairs) + 1))
    assert len(set(standard)) == len(standard), "standard numbers must never repeat"
    refs = sorted(number(v) for v in standard)
    table = platform.catalog.current().table("Case")
    with platform.db.connect() as conn:
        stored = conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()
    assert stored == len(pairs)
    if platform.dialect.name == "sqlite":
        assert refs == list(range(1, len(pairs) + 1)), "SQLite: the savepoint gives them back too"
    else:
        assert refs[-1] > len(pairs), "a server leaves the rolled-back standard numbers as gaps"


def _outcome(call: Callable[[], object]) -> object:
    try:
        return call()
    except Exception as exc:  # what the call raised is the outcome under test
        return exc


FIELDS = {"Case": "Case.CaseNumber", "Order": "Order.Order_Number__c"}
TAKES: dict[str, Callable[[Platform, str, Connection], object]] = {
    "records.insert": lambda p, obj, conn: p.records.insert(
        obj, {"Subject": "s"} if obj == "Case" else {}, conn
    ),
    # what the SQLAlchemy and Django adapters call inside the session's or atomic block's transaction
    "engine.assign_one": lambda p, obj, conn: p.engine.assign_one(FIELDS[obj], {}, conn),
}


@pytest.mark.parametrize("take", list(TAKES))
def test_a_deadlock_between_callers_transactions_is_a_named_error(server_db_url: str, take: str) -> None:
    """Two callers' transactions each hold one gapless counter row and ask for the other's: the
    database refuses one side. The engine cannot replay a transaction it does not own, so that
    side gets TransactionConflict saying to roll back and run it again, never a driver's error;
    the other goes on and commits."""
    p = make_platform(server_db_url)
    run = TAKES[take]
    try:
        store_rules(
            p,
            INVOICE,
            RuleSpec(
                "Order", "Order_Number__c", "ORD-{YYYY}-{00000}", scope="per_prefix", numbering="gapless"
            ),
        )
        a, b = p.db.connect(), p.db.connect()
        try:
            ta, tb = a.begin(), b.begin()
            run(p, "Case", a)  # a holds Case's counter row
            run(p, "Order", b)  # b holds Order's
            with ThreadPoolExecutor(1) as pool:
                crossing = pool.submit(_outcome, lambda: run(p, "Order", a))  # a waits for b
                theirs = _outcome(lambda: run(p, "Case", b))  # the cycle
                if isinstance(theirs, Exception):
                    tb.rollback()  # the refused side lets go: a's call goes on
                ours = crossing.result(timeout=120)
            refused = [o for o in (ours, theirs) if isinstance(o, Exception)]
            assert len(refused) == 1 and isinstance(refused[0], TransactionConflict), (ours, theirs)
            assert "lost a race" in str(refused[0]) and "run it again" in str(refused[0]), refused
            if refused[0] is ours:
                ta.rollback()
                tb.commit()
            else:
                ta.commit()
        finally:  # a connection left open would hold its locks against the next test's DROP SCHEMA
            a.close()
            b.close()
        if take == "records.insert":
            assert (p.records.count("Case"), p.records.count("Order")) == (1, 1)  # the side that went on
    finally:
        p.close()
