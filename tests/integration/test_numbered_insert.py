"""A record alone in its group, under a rule whose value is fixed text around the counter, is numbered
by its own INSERT on PostgreSQL (Engine.insert_numbered: one statement reserves the number, builds
the value and inserts the row), and on SQLite by two statements on the driver's cursor. On every
backend the value is the one the format renders, the record is stored as returned, a full counter
stores nothing, and on PostgreSQL and SQLite a value built differently from the renderer is
refused with nothing stored."""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

import pytest
import sqlalchemy as sa
from engine_support import counter_rows, make_platform, set_next_value, store_rules, traced
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autonumber
from autonumber.cli import main
from autonumber.db import mysql
from autonumber.db.base import Numbered
from autonumber.engine import Engine
from autonumber.errors import CounterOverflow
from autonumber.rules.store import RuleSpec
from autonumber.runtime import Platform
from autonumber.write.checks import checked as check_record

FORMATS = ["CS-{0000}-X", "{00000000}", "%'\\_{000}é", 'q"{0}', "Nº {000000000000000000}"]


@pytest.fixture
def alone(db_url: str) -> Iterator[Platform]:
    """The core pack with every default (group commit on), nothing polling."""
    p = make_platform(db_url, poll_interval=3600.0)
    yield p
    p.close()


def kinds(seen: list[str]) -> list[str]:
    """The first word of each text sent (COMMITs aside); a batch of statements sent as one text
    (MariaDB's group writer) as its statements' first words joined by "; "."""
    return ["; ".join(part.split()[0].upper() for part in BATCHED.split(s)) for s in seen if s != "COMMIT"]


BATCHED = re.compile(r"; (?=(?:INSERT|UPDATE|SET|START|SELECT|COMMIT)\b)")
EACH = {
    "postgresql": ["WITH"],
    "mysql": ["SET; START; UPDATE; INSERT; COMMIT"],
    "sqlite": ["UPDATE", "INSERT"],
}
"""The round trips of one numbered insert alone: one statement in autocommit on PostgreSQL, one
text from SET to COMMIT on MariaDB (its INSERT returns the counter's value), two statements on
SQLite (no round trip there) and its COMMIT."""


def single_statement(p: Platform) -> bool:
    return p.db.dialect.name == "postgresql"


def test_the_formats_literal_sides() -> None:
    from autonumber.format import parse_format

    assert parse_format("CS-{0000}-X").literal_sides == ("CS-", "-X")
    assert parse_format("{00000000}").literal_sides == ("", "")
    assert parse_format("{YYYY}-{0000}").literal_sides is None
    assert parse_format("{Account.Name}-{0000}").literal_sides is None


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_value_is_the_formats_value_and_stored_as_returned(alone: Platform, fmt: str) -> None:
    store_rules(alone, RuleSpec("Case", "CaseNumber", fmt))
    rule = alone.engine.rule("Case.CaseNumber")
    first = counter_rows(alone, "Case.CaseNumber")[""]
    with traced(alone) as seen:
        records = [alone.records.insert("Case", {"Subject": f"s{i}"}) for i in range(3)]
    sent = kinds(seen)
    assert [r["CaseNumber"] for r in records] == [
        rule.render(first + i, rule_date(), {}, "") for i in range(3)
    ]
    for record in records:
        assert alone.records.get("Case", record["Id"]) == record
    assert sent == EACH[alone.db.dialect.name] * 3, sent


def rule_date() -> Any:
    from autonumber.engine.engine import SHOWS_NO_DATE

    return SHOWS_NO_DATE


def test_a_full_counter_stores_nothing(alone: Platform) -> None:
    store_rules(alone, RuleSpec("Case", "CaseNumber", "F-{00}"))
    set_next_value(alone, "Case.CaseNumber", 99)
    assert alone.records.insert("Case", {"Subject": "last"})["CaseNumber"] == "F-99"
    with pytest.raises(CounterOverflow):
        alone.records.insert("Case", {"Subject": "one too many"})
    assert alone.records.count("Case") == 1
    assert counter_rows(alone, "Case.CaseNumber") == {"": 100}


def test_an_insert_after_a_reservation_that_matched_nothing_rolls_back_with_it(alone: Platform) -> None:
    """MariaDB sends the reservation's UPDATE and the INSERT as one text, so the INSERT runs even
    when the UPDATE matched no row (a full counter), with the values the connection's previous
    insert left in its session variables. Here those values are free again (that record deleted),
    so the INSERT succeeds: it must still roll back, and the error be the counter's."""
    store_rules(alone, RuleSpec("Case", "CaseNumber", "F-{00}"))
    set_next_value(alone, "Case.CaseNumber", 50)
    record = alone.records.insert("Case", {"Subject": "fifty"})
    assert record["CaseNumber"] == "F-50"
    with alone.begin() as conn:
        conn.execute(sa.delete(sa.table("Case")))
    set_next_value(alone, "Case.CaseNumber", 100)
    with pytest.raises(CounterOverflow):
        alone.records.insert("Case", {"Subject": "stale"})
    assert alone.records.count("Case") == 0
    assert counter_rows(alone, "Case.CaseNumber") == {"": 100}


@pytest.mark.parametrize("db_url", ["mysql"], indirect=True)
def test_without_statement_batches_the_update_and_the_insert_go_apart(
    alone: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A connection opened without MULTI_STATEMENTS (a Records given no group pool) sends the two
    statements one after the other, with the same values, the INSERT returning the counter's value
    the UPDATE left in its session variable (the writer fence's trigger keeps it out of the OK
    packet)."""
    monkeypatch.setattr(mysql, "takes_batches", lambda conn: False)
    store_rules(alone, RuleSpec("Case", "CaseNumber", "A-{0000}"))
    with traced(alone) as seen:
        records = [alone.records.insert("Case", {"Subject": f"a{i}"}) for i in range(2)]
    assert [r["CaseNumber"] for r in records] == ["A-0001", "A-0002"]
    assert kinds(seen) == ["UPDATE", "INSERT"] * 2, seen
    for record in records:
        assert alone.records.get("Case", record["Id"]) == record


def test_a_value_built_otherwise_than_the_renderer_is_refused(
    alone: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_rules(alone, RuleSpec("Case", "CaseNumber", "R-{0000}"))
    built = Engine.numbered_by_insert
    prefix = ["X-"]

    def wrong(self: Engine, rule: Any, conn: Any) -> Numbered | None:
        number = built(self, rule, conn)
        assert number is not None
        return Numbered(number.column, number.width, prefix[0], number.after, number.created)

    monkeypatch.setattr(Engine, "numbered_by_insert", wrong)
    before = counter_rows(alone, "Case.CaseNumber")
    with pytest.raises(RuntimeError, match="'X-0001' is not the format's value"):
        alone.records.insert("Case", {"Subject": "wrong"})  # refused before anything is sent
    assert alone.records.count("Case") == 0
    assert counter_rows(alone, "Case.CaseNumber") == before
    # past that check, the values the database built are compared with the renderer's: the
    # statement that commits by itself has then stored them, and the error says so. (Another
    # prefix: the check's pass is kept with the table, which other platforms of this process share.)
    monkeypatch.setattr(Engine, "check_numbered", staticmethod(lambda rule, number: True))
    prefix[0] = "Y-"
    committing = alone.db.dialect.name != "sqlite"  # one statement that commits by itself there
    said = r"the database built .*Y-0001.*" + (r"\(committed\)" if committing else "")
    with pytest.raises(RuntimeError, match=said):
        alone.records.insert("Case", {"Subject": "wrong"})
    assert alone.records.count("Case") == (1 if committing else 0)


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_the_first_insert_of_a_new_server_url_probes_on_the_writers_own_connection(db_url: str) -> None:
    """The group writer holds the one connection of its pool; asking the server what it is (not
    CockroachDB) must not wait for a second one (it once did, until the budget ran out)."""
    make_platform(db_url).close()
    fresh = f"{db_url}?application_name=an_probe_{uuid.uuid4().hex[:12]}"  # a URL never probed
    p = autonumber.connect(fresh, poll_interval=3600.0)
    try:
        assert p.records.insert("Case", {"Subject": "first"})["CaseNumber"]
    finally:
        p.close()


TYPED = ["Name:text(80)", "Qty:integer", "Weight:number", "Paid:boolean", "ShipDate:date", "LeftAt:datetime"]


def _parcels(db_url: str, capsys: pytest.CaptureFixture[str]) -> Platform:
    """A platform on a database with the custom object Parcel__c: a column of each TYPED type and
    the autonumber field Parcel_No__c (P-0001, …), made through the CLI."""
    make_platform(db_url).close()
    fields = [arg for spec in TYPED for arg in ("--field", spec)]
    for argv in (
        ["object", "add", "Parcel__c", *fields],
        ["field", "add", "Parcel__c", "Parcel_No__c", "--format", "P-{0000}"],
    ):
        with pytest.raises(SystemExit) as done:
            main([*argv, "--db", db_url])
        assert done.value.code == 0, capsys.readouterr()
    return make_platform(db_url, poll_interval=3600.0)


def test_every_column_type_goes_through_the_numbered_insert(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A custom object with a column of each type the platform creates: the row is stored with
    each value as given (PostgreSQL binds them into the INSERT … SELECT of the one statement)."""
    p = _parcels(db_url, capsys)
    try:
        given = {
            "Name": "crate",
            "Qty": 12,
            "Weight": Decimal("3.2500"),
            "Paid": True,
            "ShipDate": "2026-12-03",
            "LeftAt": "2026-12-03T10:20:30.123456+00:00",
        }
        with traced(p) as seen:
            record = p.records.insert("Parcel__c", given)
        sent = kinds(seen)
        assert record["Parcel_No__c"] == "P-0001"
        stored = p.records.get("Parcel__c", record["Id"])
        assert stored == record
        assert (stored["Name"], stored["Qty"], stored["Paid"]) == ("crate", 12, True)
        assert Decimal(str(stored["Weight"])) == Decimal("3.25")
        assert str(stored["ShipDate"]).startswith("2026-12-03")
        assert str(stored["LeftAt"]).startswith("2026-12-03T10:20:30.123456")
        if single_statement(p):
            assert sent == ["WITH"], sent
        empty = p.records.insert("Parcel__c", {name.split(":")[0]: None for name in TYPED})
        assert empty["Parcel_No__c"] == "P-0002"
        assert p.records.get("Parcel__c", empty["Id"]) == empty
    finally:
        p.close()


def test_a_group_of_typed_rows_goes_through_the_numbered_insert(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The group writer's rows of every column type, one row all NULLs and the others with
    values of different sizes: each stored as given, in order, with contiguous numbers (on MariaDB
    the rows' values are one table value constructor, its column types taken over all the rows)."""
    p = _parcels(db_url, capsys)
    try:
        given: list[dict[str, Any]] = [
            {"Name": "crate", "Qty": 12, "Weight": Decimal("3.2500"), "Paid": True,
             "ShipDate": "2026-12-03", "LeftAt": "2026-12-03T10:20:30.123456+00:00"},
            {name.split(":")[0]: None for name in TYPED},
            {"Name": "a much longer name than the first", "Qty": -7, "Weight": Decimal("0.5"), "Paid": False,
             "ShipDate": "2027-01-31", "LeftAt": "2027-01-31T23:59:59+00:00"},
        ]  # fmt: skip
        snapshot = p.catalog.current()
        table = snapshot.table("Parcel__c")
        checked = [check_record(snapshot, "Parcel__c", table, g, f"#{i}") for i, g in enumerate(given)]
        stored = p.records._write_own("Parcel__c", checked)
        assert [r["Parcel_No__c"] for r in stored] == ["P-0001", "P-0002", "P-0003"]
        assert [r["Id"] for r in stored] == [r["Id"] for r in checked]
        for record, row in zip(stored, given, strict=True):
            assert p.records.get("Parcel__c", record["Id"]) == record
            assert (record["Name"], record["Qty"], record["Paid"]) == (row["Name"], row["Qty"], row["Paid"])
            weight = row["Weight"]
            assert (record["Weight"] is None) if weight is None else Decimal(str(record["Weight"])) == weight
            for name in ("ShipDate", "LeftAt"):
                value = row[name]
                assert record[name] is None if value is None else str(record[name]).startswith(value[:19])
    finally:
        p.close()


def test_a_group_is_numbered_by_one_statement_contiguous_and_stored_as_returned(
    alone: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Callers queue behind a flight held open until five have joined the next group; that group
    is one INSERT on PostgreSQL (elsewhere the usual steps): every value unique, contiguous in
    the group's order, and every record stored as returned."""
    store_rules(alone, RuleSpec("Case", "CaseNumber", "G-{000000}"))
    gc = alone.records.group_commit
    assert gc is not None
    sizes: list[int] = []
    write = alone.records._write_own
    held = threading.Event()

    def spied(object_name: str, rows: list[dict[str, Any]], *args: Any) -> list[dict[str, Any]]:
        if not held.is_set():
            held.set()
            deadline = time.monotonic() + 60
            while gc.queued("Case") < 5:  # the next group forms behind this flight
                assert time.monotonic() < deadline, "no group formed"
                time.sleep(0.01)
        sizes.append(len(rows))
        return write(object_name, rows, *args)

    monkeypatch.setattr(gc, "_write", spied)
    with traced(alone) as seen, ThreadPoolExecutor(6) as pool:
        records = list(pool.map(lambda i: alone.records.insert("Case", {"Subject": f"g{i}"}), range(6)))
    numbers = sorted(int(r["CaseNumber"].removeprefix("G-")) for r in records)
    assert numbers == list(range(numbers[0], numbers[0] + 6))
    assert sorted(sizes) == [1, 5], sizes
    for record in records:
        assert alone.records.get("Case", record["Id"]) == record
    if single_statement(alone):
        assert kinds(seen)[:2] == ["WITH", "WITH"], seen  # the flight of one, then the group of five
    if alone.db.dialect.name == "mysql":  # the group's five rows in one INSERT … RETURNING
        statements = [s for s in seen if s != "COMMIT"]
        assert kinds(statements)[:2] == ["SET; START; UPDATE; INSERT; COMMIT"] * 2, seen
        insert = BATCHED.split(statements[1])[3]
        assert " UNION ALL VALUES " in insert and insert.count(", 5), (") == 1, seen
        assert " RETURNING " in insert, seen
        assert insert.count("@autonumber_next - ") == 1, seen  # one expression for the group's rows
        assert "_System_AutoNumberCounter" not in insert, seen  # no row reads the counter row again
        assert "COMMIT" not in seen, seen  # the text's own COMMIT ends each transaction


# ---- SQLite: a record in a caller's transaction -------------------------------------------------
#
# SQLite reserves on the caller's connection (it holds the one write lock from BEGIN), so the
# group writer's two statements serve there too, in a savepoint of the caller's transaction.

IN_CALLER = ["SAVEPOINT", "UPDATE", "INSERT", "RELEASE"]


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize("fmt", ["C-{0000}", "C-{YYYY}-{0000}"])
def test_in_a_callers_transaction_a_refused_row_gives_its_number_back(alone: Platform, fmt: str) -> None:
    """The database refuses a row (a unique index of the user's): the record's savepoint takes its
    number back with it, the caller's transaction goes on, and what it commits is numbered without
    a gap. A value of fixed text goes by the two statements, a dated one by the general path."""
    store_rules(alone, RuleSpec("Case", "CaseNumber", fmt))
    with alone.begin() as conn:
        conn.execute(sa.text('CREATE UNIQUE INDEX "case_subject" ON "Case" ("Subject")'))
    with traced(alone) as seen, alone.begin() as conn:
        first = alone.records.insert("Case", {"Subject": "a"}, conn)
        with pytest.raises(sa.exc.IntegrityError, match="UNIQUE constraint failed"):
            alone.records.insert("Case", {"Subject": "a"}, conn)
        second = alone.records.insert("Case", {"Subject": "b"}, conn)
    assert [first["CaseNumber"][-4:], second["CaseNumber"][-4:]] == ["0001", "0002"]
    assert list(counter_rows(alone, "Case.CaseNumber").values()) == [3]
    assert [alone.records.get("Case", r["Id"]) for r in (first, second)] == [first, second]
    assert alone.records.count("Case") == 2
    if fmt == "C-{0000}":
        refused = ["SAVEPOINT", "UPDATE", "INSERT", "ROLLBACK", "RELEASE"]
        # a duplicate key asks whether a number of the row was already stored (engine/skip.py): it
        # was not, so the counter row is only read under its lock and the error is the database's
        skip_check = ["SAVEPOINT", "SELECT", "SELECT", "RELEASE"]
        assert kinds(seen) == IN_CALLER + refused + skip_check + IN_CALLER, seen


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_in_a_callers_transaction_a_wrong_value_leaves_no_row_behind(
    alone: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Values the database built otherwise than the renderer are found after the INSERT: in a
    caller's transaction that goes on, the savepoint still takes the row and its number back."""
    store_rules(alone, RuleSpec("Case", "CaseNumber", "W-{0000}"))
    built = Engine.numbered_by_insert

    def wrong(self: Engine, rule: Any, conn: Any) -> Numbered | None:
        number = built(self, rule, conn)
        assert number is not None
        return Numbered(number.column, number.width, "V-", number.after, number.created)

    with alone.begin() as conn:
        monkeypatch.setattr(Engine, "numbered_by_insert", wrong)
        monkeypatch.setattr(Engine, "check_numbered", staticmethod(lambda rule, number: True))
        with pytest.raises(RuntimeError, match=r"the database built 'V-0001'"):
            alone.records.insert("Case", {"Subject": "wrong"}, conn)
        monkeypatch.undo()
        kept = alone.records.insert("Case", {"Subject": "right"}, conn)
    assert kept["CaseNumber"] == "W-0001"
    assert [r["Subject"] for r in alone.records.list("Case", limit=10)] == ["right"]


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_in_a_callers_transaction_a_full_counter_takes_nothing_and_the_rest_commits(alone: Platform) -> None:
    store_rules(alone, RuleSpec("Case", "CaseNumber", "F-{00}"))
    set_next_value(alone, "Case.CaseNumber", 99)
    with alone.begin() as conn:
        last = alone.records.insert("Case", {"Subject": "last"}, conn)
        with pytest.raises(CounterOverflow):
            alone.records.insert("Case", {"Subject": "one too many"}, conn)
        account = alone.records.insert("Account", {"Name": "still written"}, conn)
    assert last["CaseNumber"] == "F-99"
    assert alone.records.count("Case") == 1 and alone.records.get("Account", account["Id"]) == account
    assert counter_rows(alone, "Case.CaseNumber") == {"": 100}


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize("fmt", ["T-{000000}", "T-{YYYY}-{000000}"])
def test_callers_transactions_on_many_threads_commit_every_number_once_without_gaps(
    alone: Platform, fmt: str
) -> None:
    """Eight threads, each a run of callers' transactions of one to three records: some commit,
    some roll back, some meet a refused row and go on. On SQLite a number leaves the counter only
    with a committed row, so the stored numbers are exactly 1..N, each once (a value of fixed
    text by the two statements, a dated one by the general path)."""
    store_rules(alone, RuleSpec("Case", "CaseNumber", fmt))
    with alone.begin() as conn:
        conn.execute(sa.text('CREATE UNIQUE INDEX "case_subject" ON "Case" ("Subject")'))
    committed: list[str] = []
    lock = threading.Lock()

    def caller(t: int) -> None:
        for i in range(25):
            mine: list[str] = []
            try:
                with alone.begin() as conn:
                    for j in range(1 + i % 3):
                        record = alone.records.insert("Case", {"Subject": f"{t}-{i}-{j}"}, conn)
                        mine.append(record["CaseNumber"])
                    if i % 4 == 1:  # a refused row, caught: the transaction goes on
                        with pytest.raises(sa.exc.IntegrityError):
                            alone.records.insert("Case", {"Subject": f"{t}-{i}-0"}, conn)
                    if i % 5 == 2:
                        raise LookupError("rolled back on purpose")
            except LookupError:
                continue
            with lock:
                committed.extend(mine)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(caller, range(8)))
    numbers = sorted(int(n.rpartition("-")[2]) for n in committed)
    assert numbers == list(range(1, len(numbers) + 1))
    stored = {r["CaseNumber"] for r in alone.records.list("Case", limit=10_000)}
    assert stored == set(committed) and len(stored) == len(committed)
    assert list(counter_rows(alone, "Case.CaseNumber").values()) == [len(numbers) + 1]


LITERAL = st.text(st.characters(blacklist_characters="{}", blacklist_categories=("Cs", "Cc")), max_size=6)
"""Literal text of a format: anything but braces (quotes, %, backslashes, any script)."""


@st.composite
def width_and_value(draw: st.DrawFn) -> tuple[int, int]:
    """A counter width and a value that fits it, the widest value often."""
    width = draw(st.integers(1, 18))
    widest = 10**width - 1
    return width, draw(st.one_of(st.just(widest), st.just(1), st.integers(1, widest)))


@given(before=LITERAL, after=LITERAL, counter=width_and_value())
@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_the_value_the_database_builds_is_the_renderers_for_any_fixed_format(
    alone: Platform, before: str, after: str, counter: tuple[int, int]
) -> None:
    """The SQL twin (db: CONCAT/LPAD on MariaDB, `||`/lpad on PostgreSQL) is generated from the
    format's literal sides; for any literal text, width and value it builds the renderer's value."""
    width, value = counter
    store_rules(alone, RuleSpec("Case", "CaseNumber", f"{before}{{{'0' * width}}}{after}"))
    set_next_value(alone, "Case.CaseNumber", value)
    rule = alone.engine.rule("Case.CaseNumber")
    with traced(alone) as seen:
        record = alone.records.insert("Case", {"Subject": "twin"})
    assert kinds(seen) == EACH[alone.db.dialect.name], "not numbered by its own INSERT"
    rendered = rule.render(value, rule_date(), {}, "")
    assert rendered == before + str(value).zfill(width) + after
    assert record["CaseNumber"] == rendered
    assert alone.records.get("Case", record["Id"])["CaseNumber"] == rendered
