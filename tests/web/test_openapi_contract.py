"""The OpenAPI document tells the truth: per-object schemas from the catalog (types, lengths,
autonumber fields read-only), the error statuses a client must handle, and one name (`at`) for the
preview day in CLI and API."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from autonumber.runtime import Platform
from autonumber.web import create_app


@pytest.fixture
def client(sqlite_platform: Platform) -> Iterator[TestClient]:
    """The document comes from the catalog, the same on every backend: SQLite is enough."""
    with TestClient(create_app(sqlite_platform)) as c:
        yield c


def doc(client: TestClient) -> dict[str, Any]:
    body: dict[str, Any] = client.get("/openapi.json").json()
    return body


def test_each_object_has_its_own_request_and_response_schema(client: TestClient) -> None:
    d = doc(client)
    schemas = d["components"]["schemas"]
    account_in, account = schemas["AccountIn"], schemas["Account"]
    assert "Account_ID__c" not in account_in["properties"] and account_in["additionalProperties"] is False
    assert account["properties"]["Account_ID__c"]["readOnly"] is True
    assert account["properties"]["Id"]["readOnly"] is True
    assert account_in["properties"]["BillingCountryCode"]["maxLength"] == 8
    body = d["paths"]["/api/records/Account"]["post"]["requestBody"]["content"]["application/json"]
    assert body["schema"] == {"$ref": "#/components/schemas/AccountIn"}
    bulk = d["paths"]["/api/records/Case/bulk"]["post"]["requestBody"]["content"]["application/json"]
    assert bulk["schema"]["properties"]["records"]["items"] == {"$ref": "#/components/schemas/CaseIn"}
    assert "/api/records/{object}" not in d["paths"]


def test_error_statuses_are_documented(client: TestClient) -> None:
    post = doc(client)["paths"]["/api/records/Account"]["post"]
    for status in ("400", "401", "403", "404", "409", "422", "503"):
        assert status in post["responses"], status
    assert any(p["name"] == "Idempotency-Key" for p in post["parameters"])


def test_preview_takes_at_like_the_cli_and_date(client: TestClient) -> None:
    for key in ("at", "date"):
        body = {"format": "X-{YYYY}{MM}{DD}-{00}", key: "2026-04-17"}
        r = client.post("/api/autonumber/preview", json=body)
        assert r.status_code == 200 and r.json()["value"] == "X-20260417-01", r.text
    schema = doc(client)["components"]["schemas"]["PreviewIn"]["properties"]
    assert {"at", "date"} <= set(schema)
