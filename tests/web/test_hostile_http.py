"""Inputs that used to answer 500 (each reproduced on a real deployment) now get a 4xx naming the
problem, and nothing is written: no record, no number consumed. On SQLite, MariaDB and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from autonumber.db.tables import counter_table
from autonumber.runtime import Platform


def counters(platform: Platform) -> dict[tuple[str, str], int]:
    """Every counter row: a number consumed shows up here even when the insert failed."""
    with platform.db.connect() as conn:
        rows = conn.execute(
            sa.select(counter_table.c.field_id, counter_table.c.scope_key, counter_table.c.next_value)
        )
        return {(r.field_id, r.scope_key): int(r.next_value) for r in rows}


def records(platform: Platform, obj: str) -> int:
    return platform.records.count(obj)


def raw_json(client: TestClient, method: str, url: str, body: str) -> Any:
    """Send a JSON text exactly as written (escapes like \\ud800 reach the server unchanged)."""
    return client.request(method, url, content=body.encode(), headers={"Content-Type": "application/json"})


def nothing_written(platform: Platform, before: dict[tuple[str, str], int], obj: str = "Account") -> None:
    assert counters(platform) == before
    assert records(platform, obj) == 0


@pytest.mark.parametrize(
    "body",
    [
        '{"Name": "\\ud800"}',
        '{"Name": "ok\\udfff"}',
        '{"Name": "ab\\u0000cd"}',
        '{"Name": "Acme", "BillingCountryCode": "S\\u0000"}',
    ],
)
def test_bad_text_is_422_before_any_number_is_reserved(
    client: TestClient, platform: Platform, body: str
) -> None:
    before = counters(platform)
    r = raw_json(client, "POST", "/api/records/Account", body)
    assert r.status_code == 422, r.text
    assert "NUL" in r.json()["error"] or "surrogate" in r.json()["error"]
    r = raw_json(client, "POST", "/api/records/Account/bulk", f'{{"records": [{body}]}}')
    assert r.status_code == 422, r.text
    nothing_written(platform, before)


def test_patch_with_nul_is_422_and_leaves_the_record(client: TestClient, platform: Platform) -> None:
    acc = client.post("/api/records/Account", json={"Name": "Acme", "BillingCountryCode": "SG"}).json()
    r = raw_json(client, "PATCH", f"/api/records/Account/{acc['Id']}", '{"Name": "ab\\u0000cd"}')
    assert r.status_code == 422 and "NUL" in r.json()["error"]
    assert platform.records.get("Account", acc["Id"])["Name"] == "Acme"


@pytest.mark.parametrize("path", ["/api/records/Account/ab%00cd", "/api/records/Account/%ED%A0%80"])
def test_record_id_with_nul_is_404(client: TestClient, path: str) -> None:
    r = client.get(path)
    assert r.status_code == 404 and r.json()["error"]


@pytest.mark.parametrize(
    "query", ["offset=99999999999999999999999", "offset=-1", "limit=0", "limit=99999999999999999999"]
)
def test_paging_out_of_range_is_422(client: TestClient, query: str) -> None:
    r = client.get(f"/api/records/Account?{query}")
    assert r.status_code == 422 and r.json()["error"].startswith("invalid request")


def test_console_page_number_out_of_range_is_422(platform: Platform) -> None:
    from autonumber.web import create_app

    with TestClient(create_app(platform), headers={"Accept": "text/html"}) as c:
        r = c.get("/o/Account?page=99999999999999999999")
        assert r.status_code == 422 and "<html" in r.text


@pytest.mark.parametrize(
    "cookie",
    [
        "autonumber_admin=é",
        "autonumber_session=é",
        "autonumber_session=a.b.c.d",
        "autonumber_csrf=\x7f\x01",
        "autonumber_flash=%ff%fe",
        "autonumber_session=\udcff",
    ],
)
def test_cookies_of_any_bytes_are_ignored(platform: Platform, cookie: str) -> None:
    from autonumber.web import create_app

    app = create_app(platform, admin_token="t")
    raw = cookie.encode("utf-8", "surrogateescape")
    with TestClient(app, headers={"Accept": "text/html"}) as c:
        for path in ("/", "/rules", "/o/Account", "/api/autonumber/fields"):
            r = c.get(path, headers={"Cookie": raw})
            assert r.status_code == 200, (path, r.status_code, r.text[:200])


def test_wrong_types_and_huge_numbers_are_422(client: TestClient, platform: Platform) -> None:
    before = counters(platform)
    long_name = '{"Name": "x' + "y" * 300 + '"}'
    for body in (
        '{"Name": 5}',
        '{"Name": "x", "Nope": 1}',
        '{"Name": ["a"]}',
        long_name,
        "[1, 2]",
        '{"Name": NaN}',
        "not json",
    ):
        r = raw_json(client, "POST", "/api/records/Account", body)
        assert r.status_code == 422, (body, r.text)
    nothing_written(platform, before)


def test_bulk_rows_with_different_fields_are_stored(client: TestClient, platform: Platform) -> None:
    body = {"records": [{"Name": "A", "BillingCountryCode": "SG"}, {"Name": "B"}, {}]}
    r = client.post("/api/records/Account/bulk", json=body)
    assert r.status_code == 201, r.text
    stored = [platform.records.get("Account", rec["Id"]) for rec in r.json()["records"]]
    assert [(s["Name"], s["BillingCountryCode"]) for s in stored] == [("A", "SG"), ("B", None), (None, None)]


def json_error(r: Any, status: int) -> str:
    """The one-line error of a JSON error answer with `status`."""
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    message = r.json()["error"]
    assert isinstance(message, str) and message and "\n" not in message
    return message


@pytest.mark.parametrize(
    "req",
    [
        {"format": "X-{YYYY}-{00}", "at": "9999-12-31T23:59:59-12:00", "time_zone": "Pacific/Kiritimati"},
        {"format": "X-{YYYY}-{00}", "at": "0001-01-01T00:00:00+14:00"},
        {"format": "X-{YYYY}-{00}", "at": "9999-12-31T23:00:00+00:00", "time_zone": "Pacific/Kiritimati"},
        {"format": "X-{YYYY}-{00}", "at": "0001-01-01T00:00:00+00:00", "time_zone": "America/Los_Angeles"},
    ],
)
def test_preview_at_the_edge_of_the_calendar_is_422(client: TestClient, req: dict[str, str]) -> None:
    assert "years 1-9999" in json_error(client.post("/api/autonumber/preview", json=req), 422)


@pytest.mark.parametrize(
    "body",
    [
        '{"format": "{Account.BillingCountryCode}-{00}", '
        '"values": {"Account.BillingCountryCode": "\\ud800"}}',
        '{"format": "X-{00}", "values": {"\\udfff": "x"}}',
        '{"format": "X-{00}", "field": "Case.\\ud800"}',
        '{"format": "X-{00}", "field": "\\ud800"}',
        '{"format": "X-{00}", "object": "\\ud800"}',
        '{"format": "X-{00}", "time_zone": "\\ud800"}',
        '{"format": "X-\\ud800{00}"}',
    ],
)
def test_preview_with_a_lone_surrogate_is_4xx(client: TestClient, body: str) -> None:
    r = raw_json(client, "POST", "/api/autonumber/preview", body)
    assert 400 <= r.status_code < 500, r.text
    json_error(r, r.status_code)


@pytest.mark.parametrize("scope_key", ["%00", "a%00b"])
def test_gaps_with_a_nul_scope_key_is_422(client: TestClient, scope_key: str) -> None:
    r = client.get(f"/api/autonumber/fields/Case.CaseNumber/gaps?scope_key={scope_key}")
    assert "scope key" in json_error(r, 422)


@pytest.mark.parametrize("fmt", ["Q-\\u0000{00000000}", "Q-{0000}\\n", "Q\\u007f{0000}", "Q-\\u0085{0000}"])
def test_a_format_with_a_control_character_is_refused(
    admin: TestClient, platform: Platform, fmt: str
) -> None:
    before = admin.get("/api/autonumber/fields").json()
    r = raw_json(admin, "PUT", "/api/autonumber/fields/Case.CaseNumber", f'{{"format": "{fmt}"}}')
    assert "rule 11" in json_error(r, 422)
    r = raw_json(admin, "POST", "/api/autonumber/preview", f'{{"format": "{fmt}"}}')
    assert "rule 11" in json_error(r, 422)
    assert admin.get("/api/autonumber/fields").json() == before


def test_a_500_says_connection_close_before_the_server_drops_the_socket(sqlite_platform: Platform) -> None:
    """After an unhandled error Uvicorn closes the connection; the answer must say so, or a client
    reusing the keep-alive socket gets ECONNRESET on its next request."""
    import http.client
    from urllib.parse import urlsplit

    from autonumber.web import create_app
    from autonumber.web.server import serve_in_thread

    app = create_app(sqlite_platform)

    @app.get("/api/test-bug")
    def bug() -> None:
        raise RuntimeError("a bug")

    with serve_in_thread(app) as base:
        url = urlsplit(base)
        conn = http.client.HTTPConnection(url.hostname or "", url.port, timeout=30)
        try:
            conn.request("GET", "/api/records/Case")
            ok = conn.getresponse()
            ok.read()
            assert ok.status == 200 and (ok.getheader("connection") or "").lower() != "close"
            conn.request("GET", "/api/test-bug")
            r = conn.getresponse()
            body = r.read()
            assert r.status == 500 and r.getheader("connection", "").lower() == "close"
            assert b"RuntimeError" in body and b"a bug" not in body
        finally:
            conn.close()
