"""Server-rendered pages on SQLite: forms from metadata, flash messages, admin gating of the rules page."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from web_support import FormClient

from autonumber.rules import RuleEdit, set_rule
from autonumber.runtime import Platform


def test_home_lists_objects_with_counts(pages: TestClient, sqlite_platform: Platform) -> None:
    sqlite_platform.records.insert("Case", {"Subject": "x"})
    html = pages.get("/").text
    for name in ("Account", "Contract", "Quote", "Opportunity", "Order", "Case"):
        assert f'href="/o/{name}"' in html
    assert '<span class="count" data-object="Case">1</span>' in html
    assert '<span class="count" data-object="Account">0</span>' in html


def test_create_form_has_no_autonumber_inputs_and_offers_pickers(
    pages: TestClient, sqlite_platform: Platform
) -> None:
    sqlite_platform.records.insert("Account", {"Name": "Acme", "BillingCountryCode": "SG"})
    html = pages.get("/o/Contract/new").text
    assert 'name="Contract_Number__c"' not in html and "Assigned on save" in html
    assert '<option value="rt_Contract_Services_Agreement" >Services Agreement</option>' in html
    assert re.search(r'<option value="[0-9a-f]{32}" >Acme · IBG-B-\d{8}-000001</option>', html)
    assert "Opportunity" in pages.get("/o/Quote/new").text


def test_create_redirects_with_a_flash_naming_the_numbers(pages: TestClient) -> None:
    r = pages.post("/o/Account/new", data={"Name": "Acme", "BillingCountryCode": "SG"})
    assert r.status_code == 303 and r.headers["location"].startswith("/o/Account/")
    view = pages.get(r.headers["location"]).text
    assert re.search(r"Account created: IBG-B-\d{8}-000001", view)
    assert "Account created" not in pages.get(r.headers["location"]).text  # one-shot


def test_create_error_shows_the_form_again(pages: TestClient) -> None:
    r = pages.post("/o/Contract/new", data={"RecordTypeId": "rt_Contract_Services_Agreement"})
    assert r.status_code == 422
    assert "cannot resolve {Account.BillingCountryCode}" in r.text and "fk null" in r.text
    assert 'id="record-form"' in r.text


def test_edit_shows_numbers_read_only_and_refuses_a_tampered_one(
    pages: TestClient, sqlite_platform: Platform
) -> None:
    acc = sqlite_platform.records.insert("Account", {"Name": "Acme", "BillingCountryCode": "SG"})
    html = pages.get(f"/o/Account/{acc['Id']}/edit").text
    assert re.search(rf'name="Account_ID__c" value="{acc["Account_ID__c"]}" readonly', html)
    ok = pages.post(
        f"/o/Account/{acc['Id']}/edit", data={"Name": "Acme Ltd", "Account_ID__c": acc["Account_ID__c"]}
    )
    assert ok.status_code == 303
    bad = pages.post(f"/o/Account/{acc['Id']}/edit", data={"Name": "Acme", "Account_ID__c": "IBG-X"})
    assert bad.status_code == 422 and "read-only afterwards" in bad.text
    stored = sqlite_platform.records.get("Account", acc["Id"])
    assert stored["Account_ID__c"] == acc["Account_ID__c"] and stored["Name"] == "Acme Ltd"


def test_unknown_pages_are_html_404(pages: TestClient) -> None:
    for path in ("/o/Nope", "/o/Account/missing", "/no/such/page"):
        r = pages.get(path)
        assert r.status_code == 404 and "<html" in r.text and "flash-error" in r.text


def test_rules_page_needs_login_when_a_token_is_set(pages: TestClient, admin_token: str) -> None:
    assert pages.get("/rules").headers["location"] == "/login?next=/rules"
    assert pages.post("/login", data={"token": "wrong", "next": "/rules"}).status_code == 401
    r = pages.post("/login", data={"token": admin_token, "next": "//evil.example/"})
    assert r.status_code == 303 and r.headers["location"] == "/rules"
    html = pages.get("/rules").text
    assert "IBG-B-{YYYY}{MM}{DD}-{000000}" in html and "per_prefix" in html and "Log out" in html


def test_rules_save_goes_through_validation(pages: TestClient, admin_token: str) -> None:
    pages.post("/login", data={"token": admin_token})
    bad = pages.post("/rules/Case.CaseNumber", data={"format": "{0000}-{0000}"})
    assert "rule 1" in pages.get(bad.headers["location"]).text
    good = pages.post("/rules/Case.CaseNumber", data={"format": "CS-{00000000}"})
    html = pages.get(good.headers["location"]).text
    assert "Case.CaseNumber now uses CS-{00000000}" in html


def test_rules_page_without_a_token_is_read_only(sqlite_platform: Platform) -> None:
    from autonumber.web import create_app

    with FormClient(
        create_app(sqlite_platform), headers={"Accept": "text/html"}, follow_redirects=False
    ) as c:
        html = c.get("/rules").text
        assert 'id="admin-disabled"' in html and "AUTONUMBER_ADMIN_TOKEN=" in html
        assert "data-admin" not in html
        r = c.post("/rules/Case.CaseNumber", data={"format": "CS-{00000000}"})
        assert "admin changes are disabled" in c.get(r.headers["location"]).text


def test_rules_form_changes_scope_and_start(
    pages: TestClient, admin_token: str, sqlite_platform: Platform
) -> None:
    pages.post("/login", data={"token": admin_token})
    html = editor_of(pages, "Case.CaseNumber")
    case_form = html[html.index('data-field="Case.CaseNumber"') :]
    assert re.search(r'name="scope".*?<option value="global" selected>', case_form, re.S)
    assert 'name="start" value=""' in case_form
    form = {"format": "CS-{YYYY}{MM}{DD}-{0000}", "scope": "per_day", "start": "", "numbering": "standard"}
    r = pages.post("/rules/Case.CaseNumber", data={**form, "time_zone": "UTC"})
    assert "Case.CaseNumber now uses CS-{YYYY}{MM}{DD}-{0000}" in pages.get(r.headers["location"]).text
    assert re.fullmatch(
        r"CS-\d{8}-0001", sqlite_platform.records.insert("Case", {"Subject": "x"})["CaseNumber"]
    )
    account = {"format": "IBG-B-{YYYY}{MM}{DD}-{000000}", "scope": "global", "start": "5000"}
    r = pages.post(
        "/rules/Account.Account_ID__c", data={**account, "numbering": "standard", "time_zone": "UTC"}
    )
    assert "Account.Account_ID__c" in pages.get(r.headers["location"]).text
    acc = sqlite_platform.records.insert("Account", {"Name": "Acme", "BillingCountryCode": "SG"})
    assert acc["Account_ID__c"].endswith("-005000")


def editor_of(pages: TestClient, field: str) -> str:
    """A field's editors, as the rules page loads them when its "Edit" opens."""
    r = pages.get(f"/rules/{field}/edit", params={"fragment": 1})
    assert r.status_code == 200, r.text
    return r.text


def _base_of(html: str, field: str) -> str:
    """The hidden `base` token of a field's editor form (the rule as the page showed it)."""
    form = html[html.index(f'data-field="{field}"') :]
    found = re.search(r'name="base" value="([0-9a-f]+)"', form)
    assert found, form[:2000]
    return found.group(1)


def test_a_rule_changed_after_the_page_was_loaded_is_not_overwritten(
    pages: TestClient, admin_token: str, sqlite_platform: Platform
) -> None:
    """Admin A loads the page; B changes the rule; A's submit is refused and B's change stays."""
    pages.post("/login", data={"token": admin_token})
    seen = _base_of(editor_of(pages, "Case.CaseNumber"), "Case.CaseNumber")
    set_rule(sqlite_platform.db, RuleEdit("Case", "CaseNumber", numbering="gapless"))  # B, meanwhile
    form = {"format": "{00000000}", "scope": "global", "start": "", "numbering": "standard"}
    r = pages.post("/rules/Case.CaseNumber", data={**form, "time_zone": "UTC", "base": seen})
    page = pages.get(r.headers["location"]).text
    assert "changed by someone else, re-read and retry" in page
    assert sqlite_platform.catalog.refresh().stored("Case.CaseNumber").numbering == "gapless"
    fresh = _base_of(editor_of(pages, "Case.CaseNumber"), "Case.CaseNumber")  # re-read: B's rule
    assert fresh != seen
    r = pages.post("/rules/Case.CaseNumber", data={**form, "time_zone": "Asia/Tokyo", "base": fresh})
    assert "Case.CaseNumber now uses {00000000}" in pages.get(r.headers["location"]).text
    assert sqlite_platform.catalog.refresh().stored("Case.CaseNumber").time_zone == "Asia/Tokyo"


def test_an_adopted_table_lists_its_rows_with_links_by_its_own_key(
    pages: TestClient, sqlite_platform: Platform
) -> None:
    import sqlalchemy as sa

    from autonumber.objects import adopt_table

    with sqlite_platform.db.begin() as conn:
        conn.execute(sa.text("CREATE TABLE invoices (id INTEGER PRIMARY KEY, number VARCHAR(20))"))
        conn.execute(
            sa.text("INSERT INTO invoices (id, number) VALUES (41, 'INV-000041'), (42, 'INV-000042')")
        )
        adopt_table(conn, "Invoice__c", "invoices")
    sqlite_platform.catalog.refresh()
    listing = pages.get("/o/Invoice__c").text
    assert 'href="/o/Invoice__c/41"' in listing and 'href="/o/Invoice__c/42"' in listing
    view = pages.get("/o/Invoice__c/42")
    assert (
        view.status_code == 200 and "INV-000042" in view.text and 'href="/o/Invoice__c/42/edit"' in view.text
    )
    assert pages.get("/o/Invoice__c/42/edit").status_code == 200


def test_home_search_works_without_javascript_and_lists_objects_with_records_first(
    pages: TestClient, sqlite_platform: Platform
) -> None:
    sqlite_platform.records.insert("Case", {"Subject": "x"})
    html = pages.get("/").text
    cards = re.findall(r'<span class="count" data-object="(\w+)">(\d+)</span>', html)
    assert cards[0] == ("Case", "1") and all(count == "0" for _, count in cards[1:])
    assert 'type="search" id="q" name="q"' in html and '<label for="q"' in html
    found = pages.get("/", params={"q": "contr"}).text
    shown = re.compile(r'<a class="card" href="/o/(\w+)"  data-search')
    assert shown.findall(found) == ["Contract"]
    # the others are on the page, hidden, so a search typed next can show them
    assert len(re.findall(r'<a class="card" href="/o/\w+" hidden data-search', found)) == len(cards) - 1
    assert re.search(r'<span id="match-count">1</span> object\(s\) match', found)
    assert shown.findall(pages.get("/", params={"q": "account_id"}).text) == ["Account"]  # its field's name
    none = pages.get("/", params={"q": "<nope>"}).text
    assert 'id="no-match" >' in none and "&lt;nope&gt;" in none and "<nope>" not in none


def test_long_names_wrap_at_word_parts() -> None:
    from autonumber.web.pages import word_breaks

    assert str(word_breaks("AlternativePaymentMethod")) == "Alternative<wbr>Payment<wbr>Method"
    assert str(word_breaks("Contract_Number__c")) == "Contract_<wbr>Number__<wbr>c"
    assert str(word_breaks("<b>XMLParser")) == "&lt;b&gt;XML<wbr>Parser"


def test_rules_filter_pages_and_groups_by_object(
    pages: TestClient, admin_token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from autonumber.web import pages as page_module

    pages.post("/login", data={"token": admin_token})
    everything = re.findall(r'<tr id="([^"]+)" class="field-row">', pages.get("/rules").text)
    monkeypatch.setattr(page_module, "RULES_PAGE_SIZE", 2)
    first = pages.get("/rules").text
    assert re.findall(r'<tr id="([^"]+)" class="field-row">', first) == everything[:2]
    assert 'href="?page=2" id="next-page"' in first
    second = pages.get("/rules", params={"page": 2}).text
    assert re.findall(r'<tr id="([^"]+)" class="field-row">', second) == everything[2:4]
    monkeypatch.undo()
    only = pages.get("/rules", params={"object": "contract"}).text
    assert re.findall(r'<tr id="([^"]+)" class="field-row">', only) == [
        "Contract.ContractNumber",
        "Contract.Contract_Number__c",
    ]
    assert 'data-object="Contract"' in only and 'value="contract"' in only
    scoped = pages.get("/rules", params={"scope": "per_prefix"}).text
    rows = re.findall(r'<tr id="([^"]+)" class="field-row">', scoped)
    assert "Contract.Contract_Number__c" in rows and "Case.CaseNumber" not in rows
    assert "No autonumber field matches" in pages.get("/rules", params={"status": "quarantined"}).text
    assert pages.get("/rules", params={"scope": "weekly"}).status_code == 422


def test_rules_editor_is_labelled_and_only_for_an_admin(
    pages: TestClient, admin_token: str, sqlite_platform: Platform
) -> None:
    from autonumber.web import create_app

    with FormClient(
        create_app(sqlite_platform), headers={"Accept": "text/html"}, follow_redirects=False
    ) as c:
        html = c.get("/rules").text
        assert "field-row" in html and "editor-row" not in html and 'class="editor"' not in html
        assert c.get("/rules/Case.CaseNumber/edit").headers["location"] == "/rules"
    assert pages.get("/rules/Case.CaseNumber/edit").headers["location"].startswith("/login?next=")
    pages.post("/login", data={"token": admin_token})
    assert 'href="/rules/Case.CaseNumber/edit?back="' in pages.get("/rules").text
    html = editor_of(pages, "Case.CaseNumber")
    editor = html[html.index('data-field="Case.CaseNumber"') :]
    editor = editor[: editor.index("</form>")]
    inputs = re.findall(r'<(?:input|select) id="([^"]+)" name="(\w+)"', editor)
    assert [name for _, name in inputs] == [
        "format",
        "scope",
        "start",
        "numbering",
        "time_zone",
        "allocation",
        "fiscal_year_start",
        "date_source",
        "shared_counter",
    ]
    for input_id, _ in inputs:
        assert f'<label for="{input_id}">' in editor


def test_navigation_offers_log_in_then_log_out(pages: TestClient, admin_token: str) -> None:
    html = pages.get("/o/Case").text
    assert '<a href="/login?next=/o/Case" id="nav-login"' in html
    pages.post("/login", data={"token": admin_token})
    html = pages.get("/o/Case").text
    assert 'id="nav-logout"' in html and 'id="nav-login"' not in html


def test_fields_sharing_a_label_show_their_api_names(pages: TestClient) -> None:
    html = pages.get("/o/Contract/new").text
    labels = re.findall(r'<label for="f-(\w+)">([^<]+)<', html)
    texts = [text.strip() for _, text in labels]
    assert len(texts) == len(set(texts))
    assert "Contract Number (ContractNumber)" in texts and "Contract Number (Contract_Number__c)" in texts


def test_an_adopted_tables_schema_is_typed_and_its_key_is_not_an_input(sqlite_platform: Platform) -> None:
    import sqlalchemy as sa

    from autonumber.objects import adopt_table
    from autonumber.web import create_app

    with sqlite_platform.db.begin() as conn:
        conn.execute(sa.text("CREATE TABLE invoices (id INTEGER PRIMARY KEY, number VARCHAR(20), due DATE)"))
        adopt_table(conn, "Invoice__c", "invoices")
    sqlite_platform.catalog.refresh()
    with FormClient(create_app(sqlite_platform)) as c:
        schemas = c.get("/openapi.json").json()["components"]["schemas"]
    assert "id" not in schemas["Invoice__cIn"]["properties"]
    assert schemas["Invoice__cIn"]["properties"]["number"] == {"type": ["string", "null"], "maxLength": 20}
    assert schemas["Invoice__cIn"]["properties"]["due"] == {"type": ["string", "null"], "format": "date"}
    stored = schemas["Invoice__c"]["properties"]["id"]
    assert stored["type"] == ["integer", "null"] and stored["readOnly"] is True


def test_docs_pages_link_back_and_load_one_small_document_each(pages: TestClient) -> None:
    html = pages.get("/docs").text
    assert '<a href="/" id="back-to-console"' in html and '<a href="/docs/records/Account"' in html
    assert "'/openapi/core.json'" in html or '"/openapi/core.json"' in html
    core = pages.get("/openapi/core.json").json()
    assert "/api/autonumber/preview" in core["paths"] and not any("/records/" in p for p in core["paths"])
    account = pages.get("/openapi/records/Account.json").json()
    assert set(account["paths"]) == {
        "/api/records/Account",
        "/api/records/Account/bulk",
        "/api/records/Account/{record_id}",
    }
    assert {"Account", "AccountIn"} <= set(account["components"]["schemas"])
    assert "CaseIn" not in account["components"]["schemas"]
    assert pages.get("/docs/records/Nope").status_code == 404


def test_rules_counter_form_sets_the_next_number_for_an_admin_only(
    pages: TestClient, admin_token: str, sqlite_platform: Platform
) -> None:
    r = pages.post("/rules/Case.CaseNumber/counter", data={"next": "700"})  # not logged in: refused
    assert r.status_code == 303 and r.headers["location"] == "/rules?result=Case.CaseNumber#result"
    assert sqlite_platform.records.insert("Case", {"Subject": "x"})["CaseNumber"] == "00000001"
    pages.post("/login", data={"token": admin_token})
    html = editor_of(pages, "Case.CaseNumber")
    assert 'action="/rules/Case.CaseNumber/counter"' in html and 'for="counter-next-Case-CaseNumber"' in html
    r = pages.post("/rules/Case.CaseNumber/counter", data={"next": "700"})
    assert "next value 2 → 700" in pages.get(r.headers["location"]).text
    r = pages.post("/rules/Case.CaseNumber/counter", data={"next": "7"})
    assert "the lowest allowed is 700" in pages.get(r.headers["location"]).text
    assert sqlite_platform.records.insert("Case", {"Subject": "y"})["CaseNumber"] == "00000700"


def test_rules_page_removes_a_rule_and_an_empty_format_keeps_the_stored_one(
    pages: TestClient, admin_token: str, sqlite_platform: Platform
) -> None:
    pages.post("/login", data={"token": admin_token})
    r = pages.post("/rules/Case.CaseNumber", data={"format": "", "time_zone": "Asia/Tokyo"})
    assert "Case.CaseNumber now uses {00000000}" in pages.get(r.headers["location"]).text
    html = editor_of(pages, "Case.CaseNumber")
    assert 'action="/rules/Case.CaseNumber/remove"' in html
    first = sqlite_platform.records.insert("Case", {"Subject": "x"})["CaseNumber"]
    r = pages.post("/rules/Case.CaseNumber/remove", data={})
    assert "Case.CaseNumber: rule removed, stored values kept" in pages.get(r.headers["location"]).text
    assert '<tr id="Case.CaseNumber"' not in pages.get("/rules").text
    r = pages.post("/rules/Case.CaseNumber/remove", data={})
    assert "error:" in pages.get(r.headers["location"]).text
    sqlite_platform.catalog.refresh()
    assert (
        sqlite_platform.records.insert("Case", {"Subject": "y", "CaseNumber": first + "0"})["CaseNumber"]
        == first + "0"
    )


def test_the_message_after_a_rule_change_sits_next_to_its_row_on_the_page_it_came_from(
    pages: TestClient, admin_token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from autonumber.web import pages as page_module

    pages.post("/login", data={"token": admin_token})
    everything = re.findall(r'<tr id="([^"]+)" class="field-row">', pages.get("/rules").text)
    field = "Case.CaseNumber"
    page = str(everything.index(field) + 1)
    assert page != "1"
    monkeypatch.setattr(page_module, "RULES_PAGE_SIZE", 1)
    editor = pages.get(
        f"/rules/{field}/edit", params={"back": f"page={page}&evil=1&scope=weekly", "fragment": 1}
    )
    back = re.search(r'name="back" value="([^"]*)"', editor.text)
    assert back and back.group(1) == f"page={page}"  # only the filter and page, checked
    r = pages.post(f"/rules/{field}/counter", data={"next": "900", "back": f"page={page}"})
    assert r.headers["location"] == f"/rules?page={page}&result={field}#result"
    html = pages.get(r.headers["location"]).text
    row = re.search(
        rf'<tr id="{re.escape(field)}" class="field-row">.*?</tr>\s*<tr class="result-row">(.*?)</tr>',
        html,
        re.S,
    )
    assert row, html
    assert re.search(
        r'<div id="result" class="flash flash-ok" role="status" aria-live="polite" tabindex="-1">[^<]*→ 900',
        row.group(1),
    )
    assert html.count('id="result"') == 1
    # not on that page any more (a refusal of a field filtered away): the message is at the top
    r = pages.post(
        f"/rules/{field}/counter", data={"next": "5", "back": f"page={page}&object=nothing-matches"}
    )
    html = pages.get(r.headers["location"]).text
    assert html.count('id="result"') == 1 and 'class="result-row"' not in html
    assert html.index('id="result"') < html.index('id="rules-count"') and "the lowest allowed is 900" in html
