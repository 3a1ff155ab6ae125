"""HEAD answers wherever GET does, with GET's status and headers and no body; /docs and
/openapi.json carry the package's version."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from autonumber.defaults import release


@pytest.mark.parametrize(
    "path", ["/docs", "/openapi.json", "/", "/api/autonumber/fields", "/healthz", "/nope"]
)
def test_head_answers_as_get_does_without_a_body(client: TestClient, path: str) -> None:
    got, head = client.get(path), client.head(path)
    assert head.status_code == got.status_code
    assert head.headers.get("content-type") == got.headers.get("content-type")
    assert head.content == b""


def test_the_api_document_carries_the_package_version(client: TestClient) -> None:
    assert client.get("/openapi.json").json()["info"]["version"] == release() != "0.1.0"
