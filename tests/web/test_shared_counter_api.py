"""Shared counters over HTTP and in the console: the field PUT joins and leaves a shared
counter, a member that does not fit is a 409 with one line and nothing changed, the fields API
shows it, and the rules form sets it (empty: a counter of the field's own)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from autonumber.objects.custom import add_object
from autonumber.rules import RuleRequest, RuleSpec, commit_requests
from autonumber.runtime import Platform
from support import csrf_token


def _ticket(p: Platform) -> None:
    """A custom object Ticket with TicketNo `T-{00000000}` on a counter of its own."""
    with p.db.begin() as conn:
        add_object(conn, "Ticket", ["Note:text(20)"])
    commit_requests(p.db, [RuleRequest("add", RuleSpec("Ticket", "TicketNo", "T-{00000000}"))])
    p.catalog.refresh()


def _new(client: TestClient, obj: str) -> str:
    r = client.post(f"/api/records/{obj}", json={"Subject" if obj == "Case" else "Note": "x"})
    assert r.status_code == 201, r.text
    return str(r.json()["CaseNumber" if obj == "Case" else "TicketNo"])


def test_admin_joins_and_leaves_a_shared_counter(admin: TestClient, platform: Platform) -> None:
    _ticket(platform)
    assert [_new(admin, "Case"), _new(admin, "Case"), _new(admin, "Ticket")] == [
        "00000001",
        "00000002",
        "T-00000001",
    ]
    for field in ("Case.CaseNumber", "Ticket.TicketNo"):
        fmt = "{00000000}" if field.startswith("Case") else "T-{00000000}"
        r = admin.put(f"/api/autonumber/fields/{field}", json={"format": fmt, "shared_counter": "CT"})
        assert r.status_code == 200, r.text
        assert r.json()["shared_counter"] == "CT"
    assert [_new(admin, "Ticket"), _new(admin, "Case"), _new(admin, "Ticket")] == [
        "T-00000003",
        "00000004",
        "T-00000005",
    ]
    listed = {f["field_id"]: f for f in admin.get("/api/autonumber/fields").json()}
    assert listed["Case.CaseNumber"]["counters"][0]["next_value"] == 6
    assert listed["Ticket.TicketNo"]["counters"][0]["next_number"] == "T-00000006"
    counters = admin.get("/api/autonumber/fields/Ticket.TicketNo/counters").json()
    assert counters["counters"][0]["floor"] == 6

    bad = admin.put("/api/autonumber/fields/Ticket.TicketNo", json={"format": "T-{000}"})
    assert (
        bad.status_code == 409
        and "counter width 3 differs from member Case.CaseNumber's 8" in bad.json()["error"]
    )
    bad = admin.put(
        "/api/autonumber/fields/Ticket.TicketNo",
        json={"format": "T-{00000000}", "shared_counter": "bad name"},
    )
    assert bad.status_code in (400, 409, 422), bad.text
    assert admin.get("/api/autonumber/fields").json() == list(listed.values())  # nothing changed

    r = admin.put(
        "/api/autonumber/fields/Ticket.TicketNo", json={"format": "T-{00000000}", "shared_counter": ""}
    )
    assert r.status_code == 200 and r.json()["shared_counter"] is None, r.text
    assert r.json()["counters"][0]["next_value"] == 6  # its own counter, above the shared one
    assert [_new(admin, "Ticket"), _new(admin, "Case")] == ["T-00000006", "00000006"]


def test_rules_form_sets_and_clears_the_shared_counter(
    pages: TestClient, admin_token: str, sqlite_platform: Platform
) -> None:
    _ticket(sqlite_platform)
    pages.post("/login", data={"token": admin_token})
    form = {"format": "{00000000}", "start": "", "shared_counter": "CT", "csrf_token": csrf_token(pages)}
    r = pages.post("/rules/Case.CaseNumber", data=form)
    assert "Case.CaseNumber now uses {00000000}" in pages.get(r.headers["location"]).text
    assert sqlite_platform.catalog.refresh().rule("Case.CaseNumber").counter_id == "shared:CT"
    assert "shared CT</span>" in pages.get("/rules").text
    assert 'name="shared_counter" value="CT"' in pages.get("/rules/Case.CaseNumber/edit").text
    r = pages.post("/rules/Ticket.TicketNo", data={**form, "format": "T-{0000}"})
    assert (
        "counter width 4 differs from member Case.CaseNumber&#39;s 8" in pages.get(r.headers["location"]).text
    )
    r = pages.post("/rules/Case.CaseNumber", data={**form, "shared_counter": ""})
    assert sqlite_platform.catalog.refresh().rule("Case.CaseNumber").counter_id == "Case.CaseNumber"
