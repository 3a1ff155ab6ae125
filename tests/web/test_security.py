"""Console and API security: same-origin check, CSRF tokens, signed expiring sessions that logout
ends on the server, login rate limiting that headers cannot reset, the Host allowlist, Secure
cookies over HTTPS, the optional API token, the loud warning of `serve`."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from web_support import CSRF_INPUT, FormClient, csrf_token

from autonumber.runtime import Platform
from autonumber.web import auth as web_auth
from autonumber.web import create_app
from autonumber.web.server import default_allowed_hosts, proxy_options, serve_in_thread

ADMIN = "admin-secret"
API = "api-secret"
CASE_RULE = "Case.CaseNumber"
HOST = "http://testserver"


@pytest.fixture
def browser(platform: Platform) -> Iterator[FormClient]:
    """An admin-enabled console on each backend, seen through a browser-like client."""
    app = create_app(platform, admin_token=ADMIN, api_token=API)
    with FormClient(app, base_url=HOST, headers={"Accept": "text/html"}, follow_redirects=False) as c:
        yield c


def login(c: TestClient, token: str = ADMIN) -> None:
    r = c.post("/login", data={"token": token, "next": "/rules"})
    assert r.status_code == 303, r.text


def case_format(platform: Platform) -> str:
    platform.catalog.refresh()
    rule = platform.catalog.current().rules[platform.catalog.current().field_id(CASE_RULE)]
    return str(rule.format.source)


def test_cross_origin_rule_change_with_a_valid_admin_session_is_refused(
    browser: FormClient, platform: Platform
) -> None:
    login(browser)
    before = case_format(platform)
    token = csrf_token(browser)
    for headers in (
        {"Origin": "http://testserver:8001"},
        {"Origin": "http://evil.example"},
        {"Referer": "http://sub.testserver/page"},
        {"Origin": "null"},
    ):
        r = browser.post(
            f"/rules/{CASE_RULE}", data={"format": "X-{00000000}", "csrf_token": token}, headers=headers
        )
        assert r.status_code == 403, (headers, r.status_code)
        assert "cross-origin" in r.text
    assert case_format(platform) == before
    # the same request from the console's own origin goes through
    r = browser.post(
        f"/rules/{CASE_RULE}", data={"format": "X-{00000000}", "csrf_token": token}, headers={"Origin": HOST}
    )
    assert r.status_code == 303 and case_format(platform) == "X-{00000000}"


def test_a_form_without_its_csrf_token_is_refused(browser: FormClient, platform: Platform) -> None:
    login(browser)
    before = case_format(platform)
    for token in ("", "forged", csrf_token(browser) + "x"):
        r = browser.post(f"/rules/{CASE_RULE}", data={"format": "Y-{00000000}", "csrf_token": token})
        assert r.status_code == 403 and "CSRF" in r.text
    assert case_format(platform) == before
    r = browser.post("/o/Case/new", data={"Subject": "x", "csrf_token": ""})
    assert r.status_code == 403 and platform.records.count("Case") == 0


def test_every_console_form_carries_a_csrf_token(browser: FormClient) -> None:
    login(browser)
    for path in ("/rules", "/o/Case/new", "/login"):
        html = browser.get(path).text
        forms = re.findall(r"<form[^>]*method=\"post\".*?</form>", html, re.S)
        assert forms, path
        for form in forms:
            assert 'name="csrf_token"' in form, (path, form[:120])


def test_logout_ends_the_session_on_the_server(browser: FormClient, platform: Platform) -> None:
    login(browser)
    stolen = browser.cookies.get(web_auth.COOKIE)
    assert stolen and browser.get("/rules").status_code == 200
    assert browser.post("/logout", data={}).status_code == 303
    browser.cookies.set(web_auth.COOKIE, stolen)  # a copy of the cookie kept by an attacker
    assert browser.get("/rules").headers["location"] == "/login?next=/rules"
    r = browser.post(f"/rules/{CASE_RULE}", data={"format": "Z-{00000000}"})
    assert r.status_code == 303 and r.headers["location"].startswith("/login")  # no login: sent there
    assert case_format(platform) != "Z-{00000000}"


def test_sessions_expire_and_cannot_be_forged(browser: FormClient, monkeypatch: pytest.MonkeyPatch) -> None:
    login(browser, API)  # a writer session
    cookie = browser.cookies.get(web_auth.COOKIE)
    assert cookie is not None
    sid, role, expires, signature = cookie.split(".")
    assert role == "writer"
    browser.cookies.set(web_auth.COOKIE, f"{sid}.admin.{expires}.{signature}")  # promoted by hand
    assert browser.get("/rules").status_code == 303
    browser.cookies.set(web_auth.COOKIE, cookie)
    assert browser.get("/o/Case/new").status_code == 200
    later = time.time() + web_auth.SESSION_LIFETIME.total_seconds() + 60
    monkeypatch.setattr(web_auth.time, "time", lambda: later)
    assert browser.get("/o/Case/new").headers["location"].startswith("/login")


def test_login_is_rate_limited(browser: FormClient) -> None:
    for _ in range(web_auth.LOGIN_ATTEMPTS):
        assert browser.post("/login", data={"token": "guess"}).status_code == 401
    r = browser.post("/login", data={"token": ADMIN})
    assert r.status_code == 429 and int(r.headers["Retry-After"]) > 0
    assert web_auth.COOKIE not in browser.cookies


def test_api_token_is_required_for_every_write(browser: FormClient, platform: Platform) -> None:
    api = TestClient(browser.app)
    assert api.post("/api/records/Case", json={"Subject": "x"}).status_code == 401
    assert api.post("/api/records/Case/bulk", json={"records": [{"Subject": "x"}]}).status_code == 401
    wrong = {"Authorization": "Bearer nope"}
    assert api.post("/api/records/Case", json={"Subject": "x"}, headers=wrong).status_code == 401
    assert platform.records.count("Case") == 0
    for token in (API, ADMIN):
        bearer = {"Authorization": f"Bearer {token}"}
        ok = api.post("/api/records/Case", json={"Subject": "x"}, headers=bearer)
        assert ok.status_code == 201
    rec = ok.json()
    assert api.patch(f"/api/records/Case/{rec['Id']}", json={"Subject": "y"}).status_code == 401
    writer = {"Authorization": f"Bearer {API}"}
    assert (
        api.put(
            f"/api/autonumber/fields/{CASE_RULE}", json={"format": "W-{00000000}"}, headers=writer
        ).status_code
        == 401
    )  # the API token is not an admin token
    # the console: no login, no create form; a post is refused
    assert browser.get("/o/Case/new").headers["location"] == "/login?next=/o/Case/new"
    refused = browser.post("/o/Case/new", data={"Subject": "z"})
    assert refused.status_code == 303 and refused.headers["location"].startswith("/login")
    login(browser, API)
    assert browser.post("/o/Case/new", data={"Subject": "z"}).status_code == 303
    assert platform.records.count("Case") == 3


def test_with_an_api_token_every_read_needs_it_too(browser: FormClient, platform: Platform) -> None:
    """Records, fields, counters, the gap audit and the preview of the API, and every console page
    but the login: refused without a token or login, answered with one; health stays open."""
    record = platform.records.insert("Case", {"Subject": "secret"})
    api = TestClient(browser.app)
    reads = [
        ("GET", "/api/records/Case", None),
        ("GET", f"/api/records/Case/{record['Id']}", None),
        ("GET", "/api/autonumber/fields", None),
        ("GET", f"/api/autonumber/fields/{CASE_RULE}/counters", None),
        ("GET", f"/api/autonumber/fields/{CASE_RULE}/gaps", None),
        ("POST", "/api/autonumber/preview", {"format": "A-{0000}"}),
    ]
    for method, path, body in reads:
        r = api.request(method, path, json=body)
        assert r.status_code == 401 and "requires a token" in r.json()["error"], (path, r.text)
        ok = api.request(method, path, json=body, headers={"Authorization": f"Bearer {API}"})
        assert ok.status_code == 200, (path, ok.text)
    assert "secret" not in api.get("/api/records/Case").text
    for page in ("/", "/o/Case", f"/o/Case/{record['Id']}", f"/rules/{CASE_RULE}/gaps"):
        r = browser.get(page)
        assert r.status_code == 303 and r.headers["location"].startswith("/login?next="), page
    assert browser.get("/login").status_code == 200 and api.get("/healthz").status_code == 200
    login(browser, API)
    assert "secret" in browser.get(f"/o/Case/{record['Id']}").text


def test_405_names_the_allowed_methods(client: TestClient) -> None:
    r = client.delete("/api/records/Account")
    assert r.status_code == 405 and r.headers["Allow"] == "GET, POST"
    assert client.put("/api/autonumber/preview").headers["Allow"] == "POST"


def test_serve_warns_loudly_on_a_public_host_without_an_api_token(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from autonumber.cli.serve_cmd import _warn_if_exposed

    monkeypatch.delenv(web_auth.API_ENV, raising=False)
    for host in ("127.0.0.1", "::1", "localhost"):
        _warn_if_exposed(host)
        assert capsys.readouterr().err == ""
    _warn_if_exposed("0.0.0.0")
    assert "WARNING" in capsys.readouterr().err
    monkeypatch.setenv(web_auth.API_ENV, "t")
    _warn_if_exposed("0.0.0.0")
    assert capsys.readouterr().err == ""


def _login_over_http(http: Any, token: str, forwarded_for: str, proto: str = "http") -> Any:
    page = http.get("/login", headers={"X-Forwarded-For": forwarded_for, "X-Forwarded-Proto": proto})
    found = CSRF_INPUT.search(page.text)
    assert found, page.text
    headers = {"X-Forwarded-For": forwarded_for, "X-Forwarded-Proto": proto}
    return http.post("/login", data={"token": token, "csrf_token": found.group(1)}, headers=headers)


def test_forwarded_for_cannot_reset_the_login_rate_limit(sqlite_platform: Platform) -> None:
    """Uvicorn's own default believes X-Forwarded-For from 127.0.0.1; ours believes no proxy."""
    app = create_app(sqlite_platform, admin_token=ADMIN)
    with serve_in_thread(app) as base, httpx.Client(base_url=base, timeout=30) as http:
        for i in range(web_auth.LOGIN_ATTEMPTS):
            assert _login_over_http(http, "guess", f"203.0.113.{i}").status_code == 401
        r = _login_over_http(http, ADMIN, "198.51.100.7")
        assert r.status_code == 429 and web_auth.COOKIE not in r.cookies


def test_a_trusted_proxy_names_the_client_and_its_https(sqlite_platform: Platform) -> None:
    app = create_app(sqlite_platform, admin_token=ADMIN)
    with (
        serve_in_thread(app, forwarded_allow_ips="127.0.0.1") as base,
        httpx.Client(base_url=base, timeout=30) as http,
    ):
        for _ in range(web_auth.LOGIN_ATTEMPTS):
            assert _login_over_http(http, "guess", "203.0.113.1").status_code == 401
        assert _login_over_http(http, ADMIN, "203.0.113.1").status_code == 429
        r = _login_over_http(http, ADMIN, "198.51.100.7", proto="https")  # another client
        assert r.status_code == 303
        cookies = r.headers.get_list("set-cookie")
        assert cookies and all("; secure" in c.lower() for c in cookies), cookies


def test_cookies_are_secure_only_over_https(sqlite_platform: Platform) -> None:
    app = create_app(sqlite_platform, admin_token=ADMIN)
    with TestClient(app, base_url="https://testserver") as https:
        r = https.get("/login")
        assert "secure" in r.headers["set-cookie"].lower()
    with TestClient(app, base_url="http://testserver") as plain:
        r = plain.get("/login", headers={"X-Forwarded-Proto": "https"})  # no trusted proxy said so
        assert "secure" not in r.headers["set-cookie"].lower()


def test_a_host_not_served_is_refused(sqlite_platform: Platform) -> None:
    """DNS rebinding: evil.example resolves to this server; its pages may not talk to the API."""
    app = create_app(sqlite_platform, allowed_hosts=["localhost", "127.0.0.1", "::1", "*.corp.example"])
    with TestClient(app, base_url="http://localhost:8000") as c:
        assert c.get("/api/records/Case").status_code == 200
        for host in ("127.0.0.1:8000", "[::1]:8000", "crm.corp.example", "LOCALHOST"):
            assert c.get("/api/records/Case", headers={"Host": host}).status_code == 200, host
        for host in ("evil.example", "evil.example:8000", "corp.example.evil", "localhost.evil", ""):
            headers = {"Host": host, "Origin": f"http://{host}"}
            r = c.post("/api/records/Case", json={"Subject": "x"}, headers=headers)
            assert r.status_code == 400, (host, r.text)
            assert "--allowed-host" in r.json()["error"]
    assert sqlite_platform.records.count("Case") == 0


def test_the_origin_check_compares_the_scheme(sqlite_platform: Platform) -> None:
    app = create_app(sqlite_platform)
    with TestClient(app, base_url="https://testserver") as c:
        r = c.post("/api/records/Case", json={"Subject": "x"}, headers={"Origin": "http://testserver"})
        assert r.status_code == 403 and "http://testserver" in r.json()["error"]
        r = c.post("/api/records/Case", json={"Subject": "x"}, headers={"Origin": "https://testserver"})
        assert r.status_code == 201
    assert sqlite_platform.records.count("Case") == 1


def test_serve_trusts_no_proxy_and_serves_its_own_names_by_default() -> None:
    assert proxy_options(None) == {"proxy_headers": False, "forwarded_allow_ips": None}
    assert proxy_options(" 10.0.0.1, 10.0.0.0/8 ") == {
        "proxy_headers": True,
        "forwarded_allow_ips": "10.0.0.1,10.0.0.0/8",
    }
    assert default_allowed_hosts("127.0.0.1") == ["localhost", "127.0.0.1", "::1"]
    assert default_allowed_hosts("192.0.2.5") == ["192.0.2.5", "localhost", "127.0.0.1", "::1"]
    assert "0.0.0.0" not in default_allowed_hosts("0.0.0.0")
