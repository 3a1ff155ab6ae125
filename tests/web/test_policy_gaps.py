"""Over HTTP: the numbering policy and time zone in the fields API and the rules page,
the console preview in a zone, and the gap audit as JSON and as a page."""

from __future__ import annotations

import os
import socket
from typing import Any

import pytest
from fastapi.testclient import TestClient

from autonumber.runtime import Platform
from autonumber.web import create_app


class Boom(Exception):
    """The caller's failure after its insert."""


def fields(client: TestClient) -> dict[str, dict[str, Any]]:
    return {f["field_id"]: f for f in client.get("/api/autonumber/fields").json()}


def test_fields_show_policy_and_zone_and_admin_sets_them(admin: TestClient) -> None:
    case = fields(admin)["Case.CaseNumber"]
    assert (case["numbering"], case["time_zone"]) == ("standard", "UTC")
    r = admin.put(
        "/api/autonumber/fields/Case.CaseNumber",
        json={"format": "INV-{YYYY}-{00000}", "numbering": "gapless", "time_zone": "Asia/Tokyo"},
    )
    assert r.status_code == 200, r.text
    assert (r.json()["numbering"], r.json()["time_zone"]) == ("gapless", "Asia/Tokyo")
    case = fields(admin)["Case.CaseNumber"]
    assert (case["numbering"], case["time_zone"]) == ("gapless", "Asia/Tokyo")
    assert case["format"] == "INV-{YYYY}-{00000}"
    # a later format-only change keeps the policy and the zone
    r = admin.put("/api/autonumber/fields/Case.CaseNumber", json={"format": "INV-{YYYY}-{000000}"})
    assert (r.json()["numbering"], r.json()["time_zone"]) == ("gapless", "Asia/Tokyo")
    bad = admin.put(
        "/api/autonumber/fields/Case.CaseNumber", json={"format": "X-{0}", "time_zone": "Mars/Base"}
    )
    assert bad.status_code in (400, 422) and "Mars/Base" in bad.json()["error"]
    bad = admin.put("/api/autonumber/fields/Case.CaseNumber", json={"format": "X-{0}", "numbering": "fast"})
    assert bad.status_code == 422


def test_admin_sets_block_allocation_and_gapless_is_refused_with_it(admin: TestClient) -> None:
    url = "/api/autonumber/fields/Case.CaseNumber"
    assert fields(admin)["Case.CaseNumber"]["allocation"] == "single"
    r = admin.put(url, json={"format": "{00000000}", "allocation": "blocks:10"})
    assert r.status_code == 200, r.text
    assert r.json()["allocation"] == "blocks:10"
    bad = admin.put(url, json={"format": "{00000000}", "numbering": "gapless"})
    assert bad.status_code == 422 and "refused on a gapless field" in bad.json()["error"], bad.text
    bad = admin.put(url, json={"format": "{00000000}", "allocation": "blocks:0"})
    assert bad.status_code == 422 and "is not single or blocks:N" in bad.json()["error"], bad.text
    assert fields(admin)["Case.CaseNumber"]["allocation"] == "blocks:10"


def test_preview_in_the_fields_zone(client: TestClient) -> None:
    body = {"format": "D-{YYYY}{MM}{DD}-{00}", "at": "2026-04-17T20:00:00+00:00"}
    assert client.post("/api/autonumber/preview", json=body).json()["value"] == "D-20260417-01"
    tokyo = client.post("/api/autonumber/preview", json={**body, "time_zone": "Asia/Tokyo"}).json()
    assert tokyo["value"] == "D-20260418-01"
    bad = client.post("/api/autonumber/preview", json={**body, "time_zone": "Nowhere/Else"})
    assert bad.status_code in (400, 422) and "Nowhere/Else" in bad.json()["error"]


def test_gaps_api(client: TestClient, platform: Platform) -> None:
    platform.records.insert("Case", {"Subject": "a"})
    with pytest.raises(Boom), platform.begin() as conn:
        platform.records.insert("Case", {"Subject": "lost"}, conn)
        raise Boom()
    platform.records.insert("Case", {"Subject": "b"})
    r = client.get("/api/autonumber/fields/Case.CaseNumber/gaps")
    assert r.status_code == 200, r.text
    report = r.json()
    if platform.dialect.name == "sqlite":
        assert report["gaps"] == [] and report["missing"] == 0  # SQLite: the savepoint gave it back
    else:
        [gap] = report["gaps"]
        assert gap.pop("reserved_at") <= gap.pop("released_at")  # ISO times of one clock
        assert gap == {
            "scope_key": "",
            "first": 2,
            "last": 2,
            "count": 1,
            "reason": "rolled back",
            "numbers": "00000002",
            "caller": f"{socket.gethostname()[:80]}:{os.getpid()}",  # no label: the process
        }
    assert client.get("/api/autonumber/fields/Case.CaseNumber/gaps?from=3").json()["gaps"] == []
    assert client.get("/api/autonumber/fields/Case.Nope/gaps").status_code == 404


def test_rules_page_shows_policy_and_links_the_gap_page(sqlite_platform: Platform) -> None:
    with TestClient(
        create_app(sqlite_platform), headers={"Accept": "text/html"}, follow_redirects=False
    ) as c:
        html = c.get("/rules").text
        assert 'class="tag numbering"' in html and 'href="/rules/Case.CaseNumber/gaps"' in html
        assert 'name="numbering"' not in html  # the editor (policy, zone) is for a logged-in admin
        sqlite_platform.records.insert("Case", {"Subject": "a"})
        page = c.get("/rules/Case.CaseNumber/gaps")
        assert page.status_code == 200 and 'id="no-gaps"' in page.text and "Case.CaseNumber" in page.text
