"""A create whose COMMIT outcome is unknown is never answered "nothing stored", on MariaDB and
PostgreSQL, group commit on and off.

The fault proxy cuts a COMMIT (before it reaches the server, or after the server answered it) and
then the database is unreachable, so the writer can neither ask whether its rows landed nor write
them again. The answer must be CommitOutcomeUnknown naming the Id(s) (HTTP 503 with `record_ids`),
not a plain "unavailable, retry" 503: a client retrying that would store the record twice. A
connection lost inside a caller's own transaction, where nothing can have committed, is
DatabaseUnavailable raised from the driver's error.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from fault_proxy import AFTER, BEFORE, FaultProxy, fault_proxy
from rel_support import kill_session, live_sessions, make_platform

from autonumber.errors import CommitOutcomeUnknown, DatabaseUnavailable
from autonumber.events import RecordBeforeCreate
from autonumber.runtime import Platform
from autonumber.web import create_app

WAIT = 30.0


@pytest.fixture(params=[True, False], ids=["group", "alone"])
def proxied(request: pytest.FixtureRequest, server_db_url: str) -> Iterator[tuple[Platform, FaultProxy]]:
    with fault_proxy(server_db_url) as proxy:
        p = make_platform(proxy.url(server_db_url), group_commit=request.param)
        yield p, proxy
        p.close()


def cut_when(p: Platform, proxy: FaultProxy, where: str, rows: int = 1) -> None:
    """Cut the COMMIT of the next write of `rows` records, then take the database away."""

    def on_create(event: RecordBeforeCreate) -> None:
        if len(event.records) == rows:
            proxy.cut_next(where)

    p.events.subscribe(RecordBeforeCreate, on_create)


def subjects(server_db_url: str, p: Platform) -> dict[str, list[str]]:
    """Subject -> stored Ids, read past the proxy."""
    table = p.catalog.current().table("Case")
    engine = sa.create_engine(server_db_url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.select(table.c.Id, table.c.Subject)).all()
    finally:
        engine.dispose()
    found: dict[str, list[str]] = {}
    for row in rows:
        found.setdefault(row.Subject, []).append(row.Id)
    return found


def create_is_unknown_and_stored_only_after(
    p: Platform, proxy: FaultProxy, server_db_url: str, where: str
) -> None:
    """A create whose cut the proxy is set for: CommitOutcomeUnknown naming its one Id, and the
    record stored exactly when the cut came AFTER the server got it."""
    with pytest.raises(CommitOutcomeUnknown) as caught:
        p.records.insert("Case", {"Subject": "cut"})
    assert proxy.cuts[where] == 1
    proxy.up()
    (record_id,) = caught.value.record_ids
    assert subjects(server_db_url, p).get("cut", []) == ([record_id] if where == AFTER else [])


@pytest.mark.parametrize("where", [AFTER, BEFORE])
def test_a_cut_commit_with_the_database_gone_is_an_unknown_outcome_naming_the_id(
    proxied: tuple[Platform, FaultProxy], server_db_url: str, where: str
) -> None:
    p, proxy = proxied
    cut_when(p, proxy, where)
    create_is_unknown_and_stored_only_after(p, proxy, server_db_url, where)


@pytest.mark.parametrize("where", [AFTER, BEFORE])
def test_a_cut_insert_that_commits_by_itself_is_an_unknown_outcome_naming_the_id(
    server_db_url: str, where: str
) -> None:
    """The group writer's numbered insert is one round trip that commits by itself (no
    RecordBeforeCreate subscriber here): cut on its way to the server or on the answer's way
    back, with the database gone after, it is CommitOutcomeUnknown naming the Id, and the record
    is stored exactly when the server got the statement."""
    with fault_proxy(server_db_url) as proxy:
        p = make_platform(proxy.url(server_db_url), group_commit=True)
        try:
            p.records.insert("Case", {"Subject": "warm"})
            proxy.cut_next(where, marker=b"_System_AutoNumberCounter")
            create_is_unknown_and_stored_only_after(p, proxy, server_db_url, where)
            again = p.records.insert("Case", {"Subject": "after"})  # the writer goes on
            assert p.records.get("Case", again["Id"]) == again
        finally:
            p.close()


def test_over_http_the_unknown_outcome_is_503_with_the_id_to_look_up(
    proxied: tuple[Platform, FaultProxy], server_db_url: str
) -> None:
    p, proxy = proxied
    with TestClient(create_app(p)) as http:
        cut_when(p, proxy, AFTER)
        r = http.post("/api/records/Case", json={"Subject": "cut"})
        assert r.status_code == 503 and r.headers["Retry-After"], r.text
        assert r.json()["type"] == "CommitOutcomeUnknown", r.text
        (record_id,) = r.json()["record_ids"]
        proxy.up()
        looked_up = http.get(f"/api/records/Case/{record_id}")
        assert looked_up.status_code == 200 and looked_up.json()["Subject"] == "cut", looked_up.text
    assert subjects(server_db_url, p)["cut"] == [record_id]


def test_every_member_of_a_group_whose_commit_is_unknown_gets_its_own_id(server_db_url: str) -> None:
    """The group's leader cannot settle the outcome; each member, retrying its row alone, cannot
    either, and is told its own Id — not a plain error that invites a second create."""
    with fault_proxy(server_db_url) as proxy:
        p = make_platform(proxy.url(server_db_url), group_commit=True)
        try:
            assert p.records.group_commit is not None
            gc = p.records.group_commit
            holding = threading.Event()

            def hold_first_flight(event: RecordBeforeCreate) -> None:
                if event.records[0].get("Subject") != "hold":
                    return
                holding.set()
                deadline = time.monotonic() + WAIT
                while gc.queued("Case") < 2:  # the members queue behind this flight
                    assert time.monotonic() < deadline, "the members did not queue"
                    time.sleep(0.01)

            p.events.subscribe(RecordBeforeCreate, hold_first_flight)
            cut_when(p, proxy, AFTER, rows=2)
            with ThreadPoolExecutor(3) as pool:
                held = pool.submit(p.records.insert, "Case", {"Subject": "hold"})
                assert holding.wait(WAIT), "the first flight never started"
                members = [pool.submit(p.records.insert, "Case", {"Subject": f"m{i}"}) for i in range(2)]
                assert held.result(WAIT)["CaseNumber"]
                errors = [f.exception(WAIT) for f in members]
            assert proxy.cuts[AFTER] == 1 and gc.stats.largest == 2
            ids = []
            for error in errors:
                assert isinstance(error, CommitOutcomeUnknown), error
                assert len(error.record_ids) == 1 and "retry later" not in str(error), error
                ids.append(error.record_ids[0])
            proxy.up()
            stored = subjects(server_db_url, p)
            assert sorted(stored["m0"] + stored["m1"]) == sorted(ids)
        finally:
            p.close()


def _session_id(conn: sa.Connection) -> int:
    query = "SELECT pg_backend_pid()" if conn.dialect.name == "postgresql" else "SELECT CONNECTION_ID()"
    return int(conn.execute(sa.text(query)).scalar_one())


def test_a_lost_connection_in_the_callers_transaction_is_database_unavailable(server_db_url: str) -> None:
    """Nothing can have committed (the caller owns the COMMIT): DatabaseUnavailable from the
    driver's error, on the statement that met the dead connection and on the next one too."""
    p = make_platform(server_db_url, group_commit=False)
    admin_engine = sa.create_engine(server_db_url, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)
    try:
        with p.db.connect() as conn:
            trans = conn.begin()
            victim = _session_id(conn)
            with admin_engine.connect() as admin:
                kill_session(admin, victim)
                deadline = time.monotonic() + WAIT
                while live_sessions(admin, [victim]):
                    assert time.monotonic() < deadline, "the killed session is still there"
                    time.sleep(0.01)
            for _ in range(2):  # the second meets SQLAlchemy's PendingRollbackError
                with pytest.raises(DatabaseUnavailable) as caught:
                    p.records.insert("Case", {"Subject": "in my transaction"}, conn)
                assert isinstance(caught.value.__cause__, (sa.exc.DBAPIError, sa.exc.PendingRollbackError))
                assert "retry later" in str(caught.value)
            trans.rollback()
        assert p.records.count("Case") == 0
        assert p.records.insert("Case", {"Subject": "after"})["CaseNumber"]
    finally:
        admin_engine.dispose()
        p.close()


def test_a_keyed_create_with_the_database_gone_is_database_unavailable(server_db_url: str) -> None:
    """Before any record is written, the key table is checked once per process: a lost connection
    there is DatabaseUnavailable (nothing stored, safe to retry), not the driver's error."""
    with fault_proxy(server_db_url) as proxy:
        p = make_platform(proxy.url(server_db_url), poll_interval=3600)
        try:
            p.catalog.current()
            proxy.down()
            with pytest.raises(DatabaseUnavailable, match="idempotency key table"):
                p.records.insert("Case", {"Subject": "keyed"}, idempotency_key="k-1")
            proxy.up()
            assert "keyed" not in subjects(server_db_url, p)
        finally:
            p.close()


@pytest.mark.parametrize("server_db_url", ["mysql"], indirect=True)
@pytest.mark.parametrize("group_commit", [True, False], ids=["group", "alone"])
def test_a_connection_lost_at_the_galera_probe_is_database_unavailable(
    server_db_url: str, group_commit: bool
) -> None:
    """MariaDB's pools that take statement batches ask whether the server is a Galera node when
    they make their first connection: the connection lost at that question is the error of a
    database that cannot be reached, not the driver's raw error, and nothing is stored."""
    with fault_proxy(server_db_url) as proxy:
        p = make_platform(proxy.url(server_db_url), group_commit=group_commit)
        try:
            proxy.cut_next(BEFORE, marker=b"wsrep_on")
            with pytest.raises(DatabaseUnavailable):
                p.records.insert("Case", {"Subject": "cut"})
            assert proxy.cuts[BEFORE] == 1, "the probe was not the statement cut"
            proxy.up()
            again = p.records.insert("Case", {"Subject": "after"})
            assert subjects(server_db_url, p) == {"after": [again["Id"]]}
        finally:
            p.close()
