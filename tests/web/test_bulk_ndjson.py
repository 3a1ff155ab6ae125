"""The bulk endpoint with an NDJSON body streamed from a generator, on every backend: all or
nothing, `on_error=skip`, `commit_every`, the line-length bound, and the JSON body unchanged."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from fastapi.testclient import TestClient

from autonumber.bulk.jsonl import MAX_LINE_BYTES
from autonumber.runtime import Platform

NDJSON = {"Content-Type": "application/x-ndjson"}


def _body(count: int, bad: dict[int, str] | None = None) -> Iterator[bytes]:
    """Lines streamed in small chunks that split lines, as a network would."""
    data = "".join(
        ((bad or {}).get(i) or json.dumps({"Subject": f"n{i}"})) + "\n" for i in range(1, count + 1)
    ).encode()
    for start in range(0, len(data), 37):
        yield data[start : start + 37]


def _post(client: TestClient, body: Any, **params: Any) -> Any:
    return client.post("/api/records/Case/bulk", content=body, headers=NDJSON, params=params)


def _numbers(platform: Platform) -> list[str]:
    return [r["CaseNumber"] for r in platform.records.list("Case", limit=1000)]


def test_ndjson_streams_in_batches(client: TestClient, platform: Platform) -> None:
    r = _post(client, _body(45), batch_size=10)
    assert r.status_code == 201, r.text
    assert r.json() == {"object": "Case", "count": 45, "last_line": 45, "rejected_count": 0, "rejected": []}
    assert sorted(_numbers(platform)) == [f"{i:08d}" for i in range(1, 46)]


def test_a_bad_line_writes_nothing(client: TestClient, platform: Platform) -> None:
    r = _post(client, _body(30, {22: '{"Subject": "ok", "Colour": 1}'}), batch_size=5)
    assert r.status_code == 422 and "body:22: Case has no field 'Colour'" in r.json()["error"], r.text
    assert platform.records.count("Case") == 0


def test_skip_imports_the_rest_and_lists_the_refused(client: TestClient, platform: Platform) -> None:
    r = _post(client, _body(12, {3: "nope", 9: '{"CaseNumber": "1"}'}), on_error="skip", batch_size=4)
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["count"] == 10 and body["rejected_count"] == 2
    assert [x["line"] for x in body["rejected"]] == [3, 9] and "invalid JSON" in body["rejected"][0]["error"]
    assert platform.records.count("Case") == 10


def test_commit_every_keeps_whole_batches_and_says_which(client: TestClient, platform: Platform) -> None:
    r = _post(client, _body(25, {17: "[]"}), commit_every=5)
    assert r.status_code == 422, r.text
    assert (
        "body:17: expected a JSON object" in r.json()["error"]
        and "lines 1-15 are stored" in r.json()["error"]
    )
    assert platform.records.count("Case") == 15


def test_an_endless_line_is_refused_at_the_bound(client: TestClient, platform: Platform) -> None:
    def endless() -> Iterator[bytes]:
        yield b'{"Subject": "a"}\n'
        for _ in range(MAX_LINE_BYTES // 65536 + 2):
            yield b"x" * 65536

    r = _post(client, endless())
    assert r.status_code == 422 and f"body:2: line longer than {MAX_LINE_BYTES} bytes" in r.json()["error"]
    assert platform.records.count("Case") == 0


def test_json_bodies_still_take_the_json_route(client: TestClient) -> None:
    r = client.post("/api/records/Case/bulk", json={"records": [{"Subject": "j"}]})
    assert r.status_code == 201 and r.json()["records"][0]["CaseNumber"] == "00000001"


def test_an_idempotency_key_is_refused_rather_than_ignored(client: TestClient, platform: Platform) -> None:
    headers = {**NDJSON, "Idempotency-Key": "k1"}
    r = client.post("/api/records/Case/bulk", content=b'{"Subject": "a"}\n', headers=headers)
    assert r.status_code == 422 and "Idempotency-Key is not supported" in r.json()["error"]
    assert platform.records.count("Case") == 0
