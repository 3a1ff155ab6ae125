"""Fault injection under the HTTP API: a TCP proxy cuts connections just before and just after
COMMIT, and server sessions are killed, while clients create records.

Clients follow the documented protocol: on 503 they retry (with the same Idempotency-Key when they
sent one; an unkeyed create that names `record_ids` is looked up first). Asserted, with group commit
on and off: no 500, every create acknowledged exactly once, every acknowledged record stored, no
record stored that no client was told of (phantom) and none stored twice, no number handed out twice.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from fault_proxy import AFTER, BEFORE, FaultProxy, fault_proxy
from rel_support import kill_session, make_platform, number, other_sessions, stored_numbers

from autonumber.runtime import Platform
from autonumber.web import create_app

CLIENTS = 4
CREATES = 12  # per client
TRIES = 40  # per create: a create that fails this often is a bug, not bad luck
KILL_EVERY = 7  # completed creates between two killed sessions


@pytest.fixture(params=[True, False], ids=["group", "alone"])
def proxied(request: pytest.FixtureRequest, server_db_url: str) -> Iterator[tuple[Platform, FaultProxy]]:
    with fault_proxy(server_db_url, every=4) as proxy:
        p = make_platform(proxy.url(server_db_url), group_commit=request.param, poll_interval=0.05)
        yield p, proxy
        p.close()


class Client:
    """One API client following the retry protocol; what it was told is kept for the audit."""

    def __init__(self, http: TestClient, name: str) -> None:
        self.http = http
        self.name = name
        self.acknowledged: dict[str, str] = {}  # Subject -> Id
        self.statuses: list[int] = []
        self.unknown = 0  # 503s naming record_ids (CommitOutcomeUnknown) to unkeyed creates
        self.found = 0  # of those, looked up and found stored

    def post(self, body: dict[str, Any], key: str | None) -> Any:
        headers = {"Idempotency-Key": key} if key else {}
        r = self.http.post("/api/records/Case", json=body, headers=headers)
        self.statuses.append(r.status_code)
        return r

    def stored(self, record_id: str) -> bool | None:
        """Whether a record is stored (None: the lookup itself met a fault)."""
        r = self.http.get(f"/api/records/Case/{record_id}")
        self.statuses.append(r.status_code)
        return {200: True, 404: False}.get(r.status_code)

    def create(self, i: int) -> None:
        subject = f"{self.name}-{i}"
        key = f"{self.name}-key-{i}" if i % 2 else None
        for _ in range(TRIES):
            r = self.post({"Subject": subject}, key)
            if r.status_code == 201:
                self.acknowledged[subject] = r.json()["Id"]
                return
            assert r.status_code == 503 and r.headers["Retry-After"], r.text
            ids = r.json().get("record_ids")
            if key is None and ids:  # unknown outcome: look it up before creating again
                self.unknown += 1
                found = None
                for _ in range(TRIES):
                    found = self.stored(ids[0])
                    if found is not None:
                        break
                if found:
                    self.found += 1
                    self.acknowledged[subject] = ids[0]
                    return
        raise AssertionError(f"{subject}: no answer but 503 in {TRIES} tries")


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_cut_commits_and_killed_sessions_lose_nothing_and_invent_nothing(
    proxied: tuple[Platform, FaultProxy], server_db_url: str
) -> None:
    p, proxy = proxied
    admin_engine = sa.create_engine(server_db_url, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)
    done = threading.Semaphore(0)
    stop = threading.Event()
    killed: list[int] = []
    failures: list[BaseException] = []

    def killer() -> None:
        try:
            with admin_engine.connect() as admin:
                while True:
                    for _ in range(KILL_EVERY):
                        done.acquire()
                    if stop.is_set():
                        return
                    live = other_sessions(admin)  # the platform's sessions: the database is the test's own
                    if live:
                        target = live[len(killed) % len(live)]
                        kill_session(admin, target)
                        killed.append(target)
        except BaseException as exc:  # reported by the test below
            failures.append(exc)

    with TestClient(create_app(p)) as http:  # a 500 raises out of the client
        clients = [Client(http, f"c{n}") for n in range(CLIENTS)]
        assert clients[0].post({"Subject": "warm-up"}, None).status_code == 201
        proxy.arm()

        def run(client: Client) -> None:
            try:
                for i in range(CREATES):
                    client.create(i)
                    done.release()
            except BaseException as exc:  # reported by the test below
                failures.append(exc)

        kill_thread = threading.Thread(target=killer, daemon=True)
        kill_thread.start()
        threads = [threading.Thread(target=run, args=(c,)) for c in clients]
        for t in threads:
            t.start()
        for t in threads:
            t.join(100)
        proxy.arm(False)
        stop.set()
        for _ in range(KILL_EVERY):
            done.release()
        kill_thread.join(30)
    admin_engine.dispose()

    assert not any(t.is_alive() for t in threads), "a client hung"
    assert not failures, failures[0]
    statuses = {s for c in clients for s in c.statuses}
    assert 500 not in statuses and statuses <= {200, 201, 404, 503}, statuses
    assert proxy.cuts[BEFORE] and proxy.cuts[AFTER], proxy.cuts
    assert killed, "no session was killed"

    told = {subject: record_id for c in clients for subject, record_id in c.acknowledged.items()}
    assert len(told) == CLIENTS * CREATES  # every create acknowledged
    table = p.catalog.current().table("Case")
    with p.db.connect() as conn:
        rows = conn.execute(sa.select(table.c.Id, table.c.Subject).where(table.c.Subject != "warm-up")).all()
    stored: dict[str, list[str]] = {}
    for row in rows:
        stored.setdefault(row.Subject, []).append(row.Id)
    duplicates = {s: i for s, i in stored.items() if len(i) > 1}
    phantoms = set(stored) - set(told)
    assert not phantoms, f"stored but never acknowledged: {sorted(phantoms)}"
    lost = {s for s, i in told.items() if i not in stored.get(s, [])}
    assert not lost, f"acknowledged but not stored as told: {sorted(lost)}"
    unavailable = sum(c.statuses.count(503) for c in clients)
    unknown, found = sum(c.unknown for c in clients), sum(c.found for c in clients)
    print(  # shown with -rA: what the run went through
        f"cuts {proxy.cuts}, sessions killed {len(killed)}, 503s {unavailable}, "
        f"unknown outcomes {unknown} (found stored {found})"
    )
    numbers = [number(v) for v in stored_numbers(p)]
    assert len(numbers) == len(set(numbers)), "a number was stored twice"
    assert not duplicates, f"stored twice: {duplicates}"
