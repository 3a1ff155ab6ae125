"""Fixtures of the web tests: a bootstrapped database, the app over it, clients with and without admin."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from web_support import FormClient

from autonumber.runtime import Platform
from autonumber.web import create_app
from support import make_platform

TOKEN = "test-admin-token"


@pytest.fixture
def admin_token() -> str:
    """The token the apps under test accept."""
    return TOKEN


@pytest.fixture
def sqlite_platform(sqlite_url: str) -> Iterator[Platform]:
    """The core pack on SQLite only (page tests)."""
    p = make_platform(sqlite_url)
    yield p
    p.close()


@pytest.fixture
def client(platform: Platform) -> Iterator[TestClient]:
    """An API client; the app has an admin token but this client does not send it."""
    with TestClient(create_app(platform, admin_token=TOKEN)) as c:
        yield c


@pytest.fixture
def admin(client: TestClient) -> TestClient:
    """The same app, sending the admin Bearer token."""
    client.headers["Authorization"] = f"Bearer {TOKEN}"
    return client


@pytest.fixture
def pages(sqlite_platform: Platform) -> Iterator[TestClient]:
    """A browser-like client (Accept: text/html) on SQLite, not following redirects."""
    app = create_app(sqlite_platform, admin_token=TOKEN)
    with FormClient(app, headers={"Accept": "text/html"}, follow_redirects=False) as c:
        yield c
