"""The request-body limit: a body over it is a 413 with one line, decided before the token check
and before JSON parsing, and a streamed body is read no further than the limit."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from autonumber.defaults import MAX_BODY_ENV, MAX_BULK_BODY_ENV
from autonumber.errors import ConfigError
from autonumber.runtime import Platform
from autonumber.web import create_app

CHUNK = 64 * 1024


@pytest.fixture
def limited(monkeypatch: pytest.MonkeyPatch, sqlite_platform: Platform) -> Iterator[TestClient]:
    """An app with a 4,000-byte limit on ordinary bodies (the bulk one left at its default) whose
    writes need a token."""
    monkeypatch.setenv(MAX_BODY_ENV, "4000")
    with TestClient(create_app(sqlite_platform, api_token="write-token")) as c:
        yield c


def test_a_declared_body_over_the_limit_is_refused_before_the_token_check(limited: TestClient) -> None:
    r = limited.post("/api/records/Case", json={"Subject": "x" * 5000})
    assert r.status_code == 413, r.text
    assert r.json()["error"] == f"request body larger than 4000 bytes; the limit is set by {MAX_BODY_ENV}"


def test_a_streamed_body_is_read_no_further_than_the_limit(
    monkeypatch: pytest.MonkeyPatch, sqlite_platform: Platform
) -> None:
    """Called as the server calls it (ASGI, a chunked body with no Content-Length): the app stops
    asking for the body once the limit is passed."""
    monkeypatch.setenv(MAX_BODY_ENV, "4000")
    app = create_app(sqlite_platform, api_token="write-token")
    sent, replies = 0, []

    async def receive() -> dict[str, object]:
        nonlocal sent
        sent += 1
        return {"type": "http.request", "body": b"[" * CHUNK, "more_body": sent < 10_000}  # 640 MB

    async def send(message: dict[str, object]) -> None:
        replies.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/api/records/Case",
        "raw_path": b"/api/records/Case",
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"testserver"),
            (b"content-type", b"application/json"),
            (b"authorization", b"Bearer write-token"),
            (b"transfer-encoding", b"chunked"),
        ],
        "client": ("127.0.0.1", 1),
        "server": ("testserver", 80),
        "state": {},
    }
    asyncio.run(app(scope, receive, send))  # type: ignore[arg-type]
    assert replies[0]["status"] == 413, replies
    assert sent <= 2, f"{sent} chunks of {CHUNK} bytes were read for a 4,000-byte limit"


def test_a_body_under_the_limit_and_a_bulk_body_over_it_go_through(limited: TestClient) -> None:
    auth = {"Authorization": "Bearer write-token"}
    assert limited.post("/api/records/Case", json={"Subject": "x" * 100}, headers=auth).status_code == 201
    records = [{"Subject": f"bulk {i} " + "y" * 80} for i in range(60)]  # about 6 KB, over 4,000
    r = limited.post("/api/records/Case/bulk", json={"records": records}, headers=auth)
    assert r.status_code == 201, r.text
    assert len(r.json()["records"]) == 60


@pytest.mark.parametrize("name", [MAX_BODY_ENV, MAX_BULK_BODY_ENV])
def test_a_limit_that_is_not_a_byte_count_is_refused(
    monkeypatch: pytest.MonkeyPatch, sqlite_platform: Platform, name: str
) -> None:
    monkeypatch.setenv(name, "1MB")
    with pytest.raises(ConfigError, match=f"{name}='1MB'"):
        create_app(sqlite_platform)
