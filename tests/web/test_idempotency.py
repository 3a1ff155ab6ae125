"""Idempotent creates and ambiguous commits, on SQLite, MariaDB and PostgreSQL.

The same Idempotency-Key twice stores one record and answers with the same numbers; the same key
with another body is a 422; a COMMIT whose connection dies raises CommitOutcomeUnknown naming the
Ids to look up (HTTP 503), and a retry with the same key returns what was in fact stored.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from autonumber.errors import CommitOutcomeUnknown, IdempotencyConflict
from autonumber.runtime import Platform

ACME = {"Name": "Acme", "BillingCountryCode": "SG"}


def test_same_key_twice_stores_one_record(client: TestClient, platform: Platform) -> None:
    headers = {"Idempotency-Key": "order-4711"}
    first = client.post("/api/records/Account", json=ACME, headers=headers)
    again = client.post("/api/records/Account", json=ACME, headers=headers)
    assert first.status_code == again.status_code == 201
    assert again.json()["Id"] == first.json()["Id"]
    assert again.json()["Account_ID__c"] == first.json()["Account_ID__c"]
    assert platform.records.count("Account") == 1
    nxt = client.post("/api/records/Account", json=ACME, headers={"Idempotency-Key": "order-4712"}).json()
    assert int(nxt["Account_ID__c"][-6:]) == int(first.json()["Account_ID__c"][-6:]) + 1  # no number lost


def test_same_key_other_body_is_422(client: TestClient, platform: Platform) -> None:
    headers = {"Idempotency-Key": "k1"}
    assert client.post("/api/records/Account", json=ACME, headers=headers).status_code == 201
    r = client.post("/api/records/Account", json={**ACME, "Name": "Other"}, headers=headers)
    assert r.status_code == 422 and "k1" in r.json()["error"]
    r = client.post("/api/records/Case", json={"Subject": "x"}, headers=headers)
    assert r.status_code == 422
    assert platform.records.count("Account") == 1 and platform.records.count("Case") == 0


def test_bulk_with_a_key_is_stored_once(client: TestClient, platform: Platform) -> None:
    body = {"records": [{"Subject": f"s{i}"} for i in range(5)]}
    headers = {"Idempotency-Key": "bulk-1"}
    first = client.post("/api/records/Case/bulk", json=body, headers=headers).json()
    again = client.post("/api/records/Case/bulk", json=body, headers=headers).json()
    assert [r["CaseNumber"] for r in again["records"]] == [r["CaseNumber"] for r in first["records"]]
    assert platform.records.count("Case") == 5


def test_concurrent_requests_with_one_key_store_one_record(client: TestClient, platform: Platform) -> None:
    def send(_: int) -> tuple[int, Any]:
        r = client.post("/api/records/Case", json={"Subject": "dup"}, headers={"Idempotency-Key": "race"})
        return r.status_code, r.json()

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(send, range(16)))
    assert {status for status, _ in results} == {201}, results
    assert len({body["Id"] for _, body in results}) == 1
    assert platform.records.count("Case") == 1


def test_library_insert_with_a_key(platform: Platform) -> None:
    a = platform.records.insert("Case", {"Subject": "x"}, idempotency_key="lib-1")
    b = platform.records.insert("Case", {"Subject": "x"}, idempotency_key="lib-1")
    assert a["Id"] == b["Id"] and a["CaseNumber"] == b["CaseNumber"]
    with pytest.raises(IdempotencyConflict):
        platform.records.insert("Case", {"Subject": "y"}, idempotency_key="lib-1")
    assert platform.records.count("Case") == 1


@contextmanager
def commit_then_lose_connection(platform: Platform, *, unreachable: bool = False) -> Iterator[None]:
    """The records pool's next COMMIT reaches the database, then the connection dies before the
    answer comes back; `unreachable`: the database then cannot be asked whether the rows are there
    (a Case read fails), so nobody knows the outcome."""
    fired = []

    def on_commit(conn: sa.engine.Connection) -> None:
        if fired:
            return
        fired.append(True)
        dbapi = conn.connection.dbapi_connection
        assert dbapi is not None
        dbapi.commit()
        dbapi.close()

    def on_read(_conn: Any, _cursor: Any, statement: str, params: Any, _context: Any, _many: bool) -> None:
        text = statement.lstrip().upper()
        if fired and unreachable and text.startswith("SELECT") and "CASE" in text.split("WHERE")[0]:
            raise sa.exc.OperationalError(statement, params, ConnectionError("the database is unreachable"))

    sa.event.listen(platform.db, "commit", on_commit)
    sa.event.listen(platform.db, "before_cursor_execute", on_read)
    try:
        yield
    finally:
        sa.event.remove(platform.db, "commit", on_commit)
        sa.event.remove(platform.db, "before_cursor_execute", on_read)


def test_a_lost_commit_answer_is_settled_by_looking_the_rows_up(platform: Platform) -> None:
    with commit_then_lose_connection(platform):
        stored = platform.records.insert_many("Case", [{"Subject": "lost answer"}])  # never grouped
    assert platform.records.get("Case", stored[0]["Id"]) == stored[0]
    assert platform.records.count("Case") == 1


def test_unknown_commit_outcome_names_the_ids(platform: Platform) -> None:
    with (
        commit_then_lose_connection(platform, unreachable=True),
        pytest.raises(CommitOutcomeUnknown) as caught,
    ):
        platform.records.insert_many("Case", [{"Subject": "lost answer"}])  # never grouped
    assert len(caught.value.record_ids) == 1
    assert "look up" in str(caught.value) and caught.value.record_ids[0] in str(caught.value)
    stored = platform.records.get("Case", caught.value.record_ids[0])  # it was in fact stored
    assert stored["Subject"] == "lost answer"


def test_unknown_commit_is_503_and_a_retry_with_the_key_returns_the_stored_record(
    client: TestClient, platform: Platform
) -> None:
    headers = {"Idempotency-Key": "retry-me"}
    client.post("/api/records/Case", json={"Subject": "w"}, headers={"Idempotency-Key": "warm-up"})
    with commit_then_lose_connection(platform, unreachable=True):
        r = client.post("/api/records/Case", json={"Subject": "x"}, headers=headers)
    assert r.status_code == 503 and r.headers["Retry-After"]
    ids = r.json()["record_ids"]
    again = client.post("/api/records/Case", json={"Subject": "x"}, headers=headers)
    assert again.status_code == 201 and [again.json()["Id"]] == ids
    assert platform.records.count("Case") == 2


def test_keys_are_kept_at_least_a_day(platform: Platform) -> None:
    from datetime import timedelta

    from autonumber.write import idempotency

    platform.records.insert("Case", {"Subject": "x"}, idempotency_key="kept")
    assert idempotency.purge(platform.db, older_than=timedelta(0)) == 0  # never less than 24 h
    again = platform.records.insert("Case", {"Subject": "x"}, idempotency_key="kept")
    assert platform.records.count("Case") == 1 and again["CaseNumber"]


KEY_VARIANTS = ["order-CaseKey", "order-casekey", "order-CASEKEY", "order-ÇaseKey", "order-CaseKey "]
"""Keys MariaDB's default collation takes for one (case, accent, trailing space)."""


def test_keys_differing_in_case_or_accent_are_distinct(client: TestClient, platform: Platform) -> None:
    ids = []
    for key in KEY_VARIANTS:
        headers = {"Idempotency-Key": key.encode("latin-1")}  # a header is Latin-1 on the wire
        r = client.post("/api/records/Case", json={"Subject": key}, headers=headers)
        assert r.status_code == 201, (key, r.text)
        assert r.json()["Subject"] == key  # its own record, not the first variant's
        ids.append(r.json()["Id"])
    assert len(set(ids)) == len(KEY_VARIANTS)
    assert platform.records.count("Case") == len(KEY_VARIANTS)
    again = client.post(
        "/api/records/Case",
        json={"Subject": "order-ÇaseKey"},
        headers={"Idempotency-Key": "order-ÇaseKey".encode("latin-1")},
    )
    assert again.status_code == 201 and again.json()["Id"] == ids[3]


def test_library_keys_are_compared_exactly(platform: Platform) -> None:
    keys = [*KEY_VARIANTS, "order-çasekey", "order-ｃasekey", "order-ÇaseKey\u0301"]
    ids = [platform.records.insert("Case", {"Subject": k}, idempotency_key=k)["Id"] for k in keys]
    assert len(set(ids)) == len(keys)
    assert [platform.records.insert("Case", {"Subject": k}, idempotency_key=k)["Id"] for k in keys] == ids
    assert platform.records.count("Case") == len(keys)
