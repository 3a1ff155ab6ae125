"""The JSON API on every backend: each route, each error path, one JSON error shape, never a 500."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from fastapi.testclient import TestClient

from autonumber.db.tables import counter_table, reservation_journal, system_field
from autonumber.rules import verify
from autonumber.rules.store import RuleSpec, store_rule
from autonumber.runtime import Platform

SG_RT = "rt_Contract_Services_Agreement"


def today(fmt: str) -> str:
    return datetime.now(UTC).strftime(fmt)


def post(client: TestClient, obj: str, data: Any) -> dict[str, Any]:
    r = client.post(f"/api/records/{obj}", json=data)
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    return body


def sg_account(client: TestClient) -> dict[str, Any]:
    return post(client, "Account", {"Name": "Acme", "BillingCountryCode": "SG"})


def error(r: Any, status: int) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body: dict[str, Any] = r.json()
    assert isinstance(body["error"], str) and body["error"]
    return body


def test_create_account_returns_201_with_its_number(client: TestClient) -> None:
    acc = sg_account(client)
    assert re.fullmatch(rf"IBG-B-{today('%Y%m%d')}-000001", acc["Account_ID__c"])
    got = client.get(f"/api/records/Account/{acc['Id']}").json()
    assert same_instant(got.pop("CreatedDate"), acc.pop("CreatedDate")) and got == acc


def same_instant(a: str, b: str) -> bool:
    """Compare timestamps, a naive one read as UTC (SQLite returns them naive)."""

    def parse(s: str) -> datetime:
        d = datetime.fromisoformat(s)
        return d if d.tzinfo else d.replace(tzinfo=UTC)

    return parse(a) == parse(b)


def test_contract_and_quote_get_their_cross_record_numbers(client: TestClient) -> None:
    acc = sg_account(client)
    con = post(client, "Contract", {"AccountId": acc["Id"], "RecordTypeId": SG_RT})
    assert con["Contract_Number__c"] == f"SG-CSA-{today('%y%m%d')}-01"
    opp = post(client, "Opportunity", {"Name": "Deal", "AccountId": acc["Id"]})
    quote = post(client, "Quote", {"Name": "Q1", "OpportunityId": opp["Id"]})
    assert quote["Quote_No__c"] == f"SG-QT-{today('%y%m%d')}-01"


def test_list_is_paged_newest_first(client: TestClient) -> None:
    ids = [post(client, "Case", {"Subject": f"s{i}"})["Id"] for i in range(3)]
    first = client.get("/api/records/Case", params={"limit": 2}).json()
    rest = client.get("/api/records/Case", params={"limit": 2, "offset": 2}).json()
    assert (first["total"], first["limit"], first["offset"]) == (3, 2, 0)
    got = [r["Id"] for r in first["records"] + rest["records"]]
    assert sorted(got) == sorted(ids) and len(first["records"]) == 2
    numbers = [r["CaseNumber"] for r in first["records"] + rest["records"]]
    assert numbers == sorted(numbers, reverse=True)
    assert error(client.get("/api/records/Case", params={"limit": 0}), 422)["error"].startswith("invalid")
    error(client.get("/api/records/Case", params={"offset": -1}), 422)


def test_unknown_object_and_record_are_404(client: TestClient) -> None:
    body = error(client.post("/api/records/Nope", json={"Name": "x"}), 404)
    assert body["object"] == "Nope" and "unknown object 'Nope'" in body["error"]
    error(client.get("/api/records/Nope"), 404)
    error(client.get("/api/records/RecordType"), 404)
    assert "not found" in error(client.get("/api/records/Account/missing"), 404)["error"]
    error(client.patch("/api/records/Account/missing", json={"Name": "x"}), 404)
    error(client.get("/api/no/such/route"), 404)


def test_bad_json_and_wrong_types_are_422(client: TestClient) -> None:
    json_type = {"Content-Type": "application/json"}
    bad = client.post("/api/records/Account", content=b"{not json", headers=json_type)
    assert "JSON" in error(bad, 422)["error"]
    error(client.post("/api/records/Account", json=["Name"]), 422)
    error(client.post("/api/records/Account", json={"Name": {"nested": 1}}), 422)

    def refused(data: dict[str, Any]) -> str:
        return str(error(client.post("/api/records/Account", json=data), 422)["error"])

    assert "Account.Name must be text" in refused({"Name": 5})
    assert "no field 'Nope'" in refused({"Nope": "x"})
    assert "Account_ID__c" in refused({"Account_ID__c": "X"})
    long = error(client.post("/api/records/Account", json={"BillingCountryCode": "X" * 9}), 422)
    assert "at most 8" in long["error"]


def test_patch_changes_fields_but_refuses_autonumbers(client: TestClient) -> None:
    acc = sg_account(client)
    changed = client.patch(f"/api/records/Account/{acc['Id']}", json={"Name": "Acme Ltd"})
    assert changed.status_code == 200 and changed.json()["Name"] == "Acme Ltd"
    body = error(client.patch(f"/api/records/Account/{acc['Id']}", json={"Account_ID__c": "IBG-X"}), 422)
    assert body["field"] == "Account_ID__c" and "read-only" in body["error"]
    assert client.get(f"/api/records/Account/{acc['Id']}").json()["Account_ID__c"] == acc["Account_ID__c"]


def test_token_resolve_error_is_422_naming_token_and_cause(client: TestClient) -> None:
    body = error(client.post("/api/records/Contract", json={"RecordTypeId": SG_RT}), 422)
    assert body["token"] == "{Account.BillingCountryCode}" and body["cause"] == "fk null"
    assert body["field_id"] == "Contract.Contract_Number__c" and body["type"] == "TokenResolveError"


def test_bulk_inserts_in_one_transaction(client: TestClient) -> None:
    r = client.post("/api/records/Case/bulk", json={"records": [{"Subject": f"b{i}"} for i in range(3)]})
    assert r.status_code == 201, r.text
    assert [rec["CaseNumber"] for rec in r.json()["records"]] == ["00000001", "00000002", "00000003"]
    bad = client.post("/api/records/Case/bulk", json={"records": [{"Subject": "ok"}, {"Subject": 7}]})
    assert "record #2" in error(bad, 422)["error"]
    assert client.get("/api/records/Case").json()["total"] == 3
    error(client.post("/api/records/Case/bulk", json={"records": []}), 422)
    error(client.post("/api/records/Case/bulk", json=[{"Subject": "x"}]), 422)
    error(client.post("/api/records/Nope/bulk", json={"records": [{"Name": "x"}]}), 404)


def test_fields_show_rules_counters_and_status(client: TestClient) -> None:
    acc = sg_account(client)
    sg_account(client)
    post(client, "Contract", {"AccountId": acc["Id"], "RecordTypeId": SG_RT})
    fields = {f["field_id"]: f for f in client.get("/api/autonumber/fields").json()}
    account = fields["Account.Account_ID__c"]
    assert account["format"] == "IBG-B-{YYYY}{MM}{DD}-{000000}" and account["scope"] == "global"
    assert (
        account["counters"] == [{"scope_key": "", "next_value": 3, "next_number": None}]
        and account["status"] == "ok"
    )
    contract = fields["Contract.Contract_Number__c"]
    assert contract["scope"] == "per_prefix" and contract["counter_width"] == 2
    key = f"SG-CSA-{today('%y%m%d')}-"
    assert contract["counters"] == [{"scope_key": key, "next_value": 2, "next_number": None}]  # cross-record


def test_quarantined_rule_is_listed_and_inserts_are_409(client: TestClient, platform: Platform) -> None:
    with platform.begin() as conn:
        conn.execute(
            sa.update(system_field)
            .where(system_field.c.Id == "Case.CaseNumber")
            .values(auto_number_format="{0000}-{0000}")
        )
    platform.catalog.refresh()  # what the 1 s poll does in a running server
    fields = {f["field_id"]: f for f in client.get("/api/autonumber/fields").json()}
    assert fields["Case.CaseNumber"]["status"] == "quarantined"
    assert "rule 1" in fields["Case.CaseNumber"]["reason"]
    body = error(client.post("/api/records/Case", json={"Subject": "x"}), 409)
    assert body["field_id"] == "Case.CaseNumber" and "quarantined" in body["error"]


def test_preview_renders_without_consuming_a_number(client: TestClient) -> None:
    req = {
        "format": "{Account.BillingCountryCode}-CSA-{YY}{MM}{DD}-{00}",
        "counter": 7,
        "date": "2026-04-17",
        "values": {"Account.BillingCountryCode": "SG"},
        "object": "Contract",
        "scope": "per_prefix",
    }
    r = client.post("/api/autonumber/preview", json=req)
    assert r.status_code == 200, r.text
    assert r.json()["value"] == "SG-CSA-260417-07" and r.json()["scope_key"] == "SG-CSA-260417-"
    for _ in range(3):
        client.post("/api/autonumber/preview", json={"format": "X-{000}", "field": "Case.CaseNumber"})
    assert post(client, "Case", {"Subject": "s"})["CaseNumber"] == "00000001"


def test_preview_errors_name_the_rule(client: TestClient) -> None:
    body = error(client.post("/api/autonumber/preview", json={"format": "{0000}-{0000}"}), 422)
    assert body["rule"] == 1 and body["error"].startswith("rule 1:")
    req = {"format": "{Account.Nope}-{00}", "object": "Contract"}
    body = error(client.post("/api/autonumber/preview", json=req), 422)
    assert body["rule"] == 4
    error(client.post("/api/autonumber/preview", json={"format": "X-{00}", "scope": "per_day"}), 422)
    error(client.post("/api/autonumber/preview", json={"format": "X-{00}", "object": "Nope"}), 404)
    error(client.post("/api/autonumber/preview", json={"format": "X-{00}", "field": "Case.Nope"}), 404)
    error(client.post("/api/autonumber/preview", json={"format": "X-{00}", "date": "17/04/2026"}), 422)
    overflow = error(client.post("/api/autonumber/preview", json={"format": "X-{00}", "counter": 100}), 409)
    assert overflow["width"] == 2


def test_admin_change_needs_the_token(client: TestClient) -> None:
    r = client.put("/api/autonumber/fields/Case.CaseNumber", json={"format": "CS-{00000000}"})
    assert "Bearer" in error(r, 401)["error"]
    r = client.put(
        "/api/autonumber/fields/Case.CaseNumber",
        json={"format": "CS-{00000000}"},
        headers={"Authorization": "Bearer wrong"},
    )
    error(r, 401)


def test_admin_change_is_refused_when_no_token_is_configured(platform: Platform) -> None:
    from autonumber.web import create_app

    with TestClient(create_app(platform)) as c:
        r = c.put(
            "/api/autonumber/fields/Case.CaseNumber",
            json={"format": "CS-{00000000}"},
            headers={"Authorization": "Bearer anything"},
        )
        assert "AUTONUMBER_ADMIN_TOKEN" in error(r, 403)["error"]


def test_admin_changes_a_format_through_validation(admin: TestClient) -> None:
    r = admin.put("/api/autonumber/fields/Case.CaseNumber", json={"format": "CS-{00000000}"})
    assert r.status_code == 200, r.text
    assert r.json()["format"] == "CS-{00000000}"
    assert post(admin, "Case", {"Subject": "after"})["CaseNumber"] == "CS-00000001"
    bad = admin.put("/api/autonumber/fields/Case.CaseNumber", json={"format": "{0000}-{0000}"})
    assert error(bad, 422)["rule"] == 1
    error(admin.put("/api/autonumber/fields/Case.Subject", json={"format": "{00}"}), 404)
    error(admin.put("/api/autonumber/fields/Case.CaseNumber", json={"format": "X", "scope": "per_day"}), 422)


def test_admin_change_keeps_the_stored_values_valid(admin: TestClient, platform: Platform) -> None:
    first = post(admin, "Case", {"Subject": "stored under {00000000}"})
    r = admin.put("/api/autonumber/fields/Case.CaseNumber", json={"format": "CS-{00000000}"})
    assert r.status_code == 200, r.text
    assert post(admin, "Case", {"Subject": "after"})["CaseNumber"] == "CS-00000002"  # the counter continues
    assert admin.get(f"/api/records/Case/{first['Id']}").json()["CaseNumber"] == first["CaseNumber"]
    assert [str(f) for f in verify(platform.db)] == []


def test_admin_change_keeps_cross_record_chains(admin: TestClient) -> None:
    r = admin.put(
        "/api/autonumber/fields/Quote.Quote_No__c",
        json={"format": "{Account.BillingCountryCode}-Q-{YY}{MM}{DD}-{000}"},
    )
    assert r.status_code == 200, r.text
    acc = sg_account(admin)
    opp = post(admin, "Opportunity", {"Name": "Deal", "AccountId": acc["Id"]})
    assert post(admin, "Quote", {"OpportunityId": opp["Id"]})["Quote_No__c"] == f"SG-Q-{today('%y%m%d')}-001"


def test_admin_change_refuses_a_width_the_counter_overflows(admin: TestClient, platform: Platform) -> None:
    with platform.begin() as conn:
        conn.execute(
            sa.update(counter_table)
            .where(counter_table.c.field_id == "Case.CaseNumber")
            .values(next_value=1000)
        )
    body = error(admin.put("/api/autonumber/fields/Case.CaseNumber", json={"format": "C-{00}"}), 409)
    assert "cannot hold the next value 1000" in body["error"]
    fields = {f["field_id"]: f for f in admin.get("/api/autonumber/fields").json()}
    assert fields["Case.CaseNumber"]["format"] == "{00000000}"


def test_admin_change_raises_a_counter_behind_the_stored_values(
    admin: TestClient, platform: Platform
) -> None:
    post(admin, "Case", {"Subject": "one"})
    post(admin, "Case", {"Subject": "two"})
    with platform.begin() as conn:  # a counter behind the live data (a bad restore, say)
        conn.execute(sa.delete(reservation_journal))  # without a journal that would know better
        conn.execute(
            sa.update(counter_table).where(counter_table.c.field_id == "Case.CaseNumber").values(next_value=2)
        )
    r = admin.put("/api/autonumber/fields/Case.CaseNumber", json={"format": "C-{00000000}"})
    assert r.status_code == 200, r.text
    assert r.json()["counters"] == [{"scope_key": "", "next_value": 2, "next_number": "C-00000002"}]
    r = admin.put("/api/autonumber/fields/Case.CaseNumber", json={"format": "{00000000}"})
    assert r.status_code == 200, r.text
    # raised: never reissued
    assert r.json()["counters"] == [{"scope_key": "", "next_value": 3, "next_number": "00000003"}]
    assert post(admin, "Case", {"Subject": "three"})["CaseNumber"] == "00000003"


def test_health_metrics_and_openapi(client: TestClient) -> None:
    health = client.get("/healthz").json()
    assert health["status"] == "ok" and health["backend"] in ("sqlite", "mysql", "postgresql")
    sg_account(client)
    metrics = client.get("/metrics")
    assert metrics.status_code == 200 and "autonumber_reservation_seconds" in metrics.text
    assert metrics.headers["content-type"].startswith("text/plain")
    spec = client.get("/openapi.json").json()
    for path in (
        "/api/records/Account",
        "/api/records/Account/{record_id}",
        "/api/records/Case/bulk",
        "/api/autonumber/fields",
        "/api/autonumber/preview",
        "/healthz",
        "/readyz",
        "/metrics",
    ):
        assert path in spec["paths"]
    assert client.get("/docs").status_code == 200


def test_admin_change_refuses_a_start_the_counter_cannot_hold(admin: TestClient, platform: Platform) -> None:
    with platform.begin() as conn:  # a stored start of 500 (set through the applier's path)
        store_rule(conn, RuleSpec("Case", "CaseNumber", "{00000000}", start=500))
    platform.catalog.refresh()
    body = error(admin.put("/api/autonumber/fields/Case.CaseNumber", json={"format": "C-{00}"}), 422)
    assert body["rule"] == 2
    want = "Case.CaseNumber: start 500 does not fit the counter of 'C-{00}' (width 2, largest 99)"
    assert want in body["error"]
    fields = {f["field_id"]: f for f in admin.get("/api/autonumber/fields").json()}
    assert fields["Case.CaseNumber"]["format"] == "{00000000}"


def test_a_change_sent_with_a_stale_base_is_refused_with_409(admin: TestClient) -> None:
    """`base` is the field's `token` as read: a change made since by someone else is not overwritten."""
    url = "/api/autonumber/fields/Case.CaseNumber"

    def case() -> dict[str, Any]:
        found: dict[str, Any] = {f["field_id"]: f for f in admin.get("/api/autonumber/fields").json()}
        return found["Case.CaseNumber"]

    seen = case()["token"]
    ok = admin.put(url, json={"format": "{00000000}", "start": 3, "base": seen})
    assert ok.status_code == 200, ok.text
    assert ok.json()["token"] != seen
    stale = admin.put(url, json={"format": "{00000000}", "start": 9, "base": seen})
    assert stale.status_code == 409, stale.text
    assert "changed by someone else, re-read and retry" in error(stale, 409)["error"]
    assert case()["start"] == 3


def test_admin_sets_the_next_number_never_below_what_was_reserved(
    client: TestClient, admin: TestClient
) -> None:
    post(admin, "Case", {"Subject": "one"})
    [shown] = admin.get("/api/autonumber/fields/Case.CaseNumber/counters").json()["counters"]
    assert shown == {"scope_key": "", "next_value": 2, "next_number": "00000002", "floor": 2}
    client.headers.pop("Authorization")
    error(client.put("/api/autonumber/fields/Case.CaseNumber/counters", json={"next": 500}), 401)
    client.headers["Authorization"] = "Bearer test-admin-token"
    r = admin.put("/api/autonumber/fields/Case.CaseNumber/counters", json={"next": 500})
    assert r.status_code == 200, r.text
    assert (r.json()["was"], r.json()["now"]) == (2, 500)
    assert post(admin, "Case", {"Subject": "two"})["CaseNumber"] == "00000500"
    body = error(admin.put("/api/autonumber/fields/Case.CaseNumber/counters", json={"next": 100}), 409)
    assert "the lowest allowed is 501" in body["error"]
    error(admin.put("/api/autonumber/fields/Case.CaseNumber/counters", json={"next": -1}), 422)
    error(admin.put("/api/autonumber/fields/Case.Subject/counters", json={"next": 5}), 404)
    assert (
        admin.get("/api/autonumber/fields/Case.CaseNumber/counters").json()["counters"][0]["next_value"]
        == 501
    )
