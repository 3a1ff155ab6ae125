"""Over HTTP and in the console: the fiscal year start in the fields API and the rules
form, and the preview of time-of-day, fiscal-year and null-default tokens."""

from __future__ import annotations

from fastapi.testclient import TestClient

from autonumber.runtime import Platform
from support import csrf_token


def test_admin_sets_the_fiscal_year_start_and_a_bad_month_is_refused(admin: TestClient) -> None:
    r = admin.put(
        "/api/autonumber/fields/Case.CaseNumber",
        json={"format": "CS/{FYYYY}/{00000}", "scope": "per_prefix", "fiscal_year_start": 4},
    )
    assert r.status_code == 200, r.text
    assert r.json()["fiscal_year_start"] == 4
    r = admin.put("/api/autonumber/fields/Case.CaseNumber", json={"format": "CS/{FYY}/{00000}"})
    assert r.json()["fiscal_year_start"] == 4  # kept when not given
    bad = admin.put(
        "/api/autonumber/fields/Case.CaseNumber", json={"format": "CS/{FYY}/{00000}", "fiscal_year_start": 0}
    )
    assert bad.status_code in (400, 409, 422) and "fiscal_year_start 0" in bad.json()["error"]
    preview = admin.post(
        "/api/autonumber/preview",
        json={"format": "CS/{FYYYY}/{00000}", "field": "Case.CaseNumber", "at": "2026-04-01T00:00:00+00:00"},
    )
    assert preview.json()["value"] == "CS/2027/00001"  # the field's own fiscal year


def test_preview_of_time_fiscal_and_default_tokens(client: TestClient) -> None:
    body = {"format": "T-{YYYY}{MM}{DD}{HH}{mm}{ss}-{000}", "at": "2026-04-17T20:05:09+00:00"}
    assert client.post("/api/autonumber/preview", json=body).json()["value"] == "T-20260417200509-001"
    body = {"format": "INV/{FYYYY}/{FYY}/{0}", "at": "2026-03-31T12:00:00+00:00", "fiscal_year_start": 4}
    assert client.post("/api/autonumber/preview", json=body).json()["value"] == "INV/2026/26/1"
    body = {"format": "{Account.BillingCountryCode|XX}-{00}", "counter": 3}
    out = client.post("/api/autonumber/preview", json=body).json()
    assert (out["value"], out["samples_defaulted"]) == ("XX-03", [])
    bad = client.post("/api/autonumber/preview", json={**body, "fiscal_year_start": 13})
    assert bad.status_code in (400, 422) and "fiscal_year_start 13" in bad.json()["error"]


def test_rules_form_sets_the_fiscal_year_start(
    pages: TestClient, admin_token: str, sqlite_platform: Platform
) -> None:
    pages.post("/login", data={"token": admin_token})
    form = {
        "format": "CS/{FYYYY}/{0000}",
        "scope": "per_prefix",
        "start": "",
        "numbering": "standard",
        "time_zone": "UTC",
        "fiscal_year_start": "7",
        "csrf_token": csrf_token(pages),
    }
    r = pages.post("/rules/Case.CaseNumber", data=form)
    assert "Case.CaseNumber now uses CS/{FYYYY}/{0000}" in pages.get(r.headers["location"]).text
    assert sqlite_platform.catalog.refresh().rule("Case.CaseNumber").fiscal_year_start == 7
    assert (
        'name="fiscal_year_start" type="number" min="1" max="12" value="7"'
        in pages.get("/rules/Case.CaseNumber/edit").text
    )
    r = pages.post("/rules/Case.CaseNumber", data={**form, "fiscal_year_start": "x"})
    assert "fiscal year start &#39;x&#39; is not a month 1-12" in pages.get(r.headers["location"]).text
