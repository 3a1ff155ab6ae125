"""Cases 30-34 in a real browser: numbers appear on save, stay locked, rules preview live."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from autonumber.runtime import Platform

Shot = Callable[[str], Path]

pytestmark = pytest.mark.e2e


def today(fmt: str) -> str:
    return datetime.now(UTC).strftime(fmt)


def create_account(page: Page, name: str, country: str) -> str:
    page.goto("/o/Account/new")
    expect(page.locator("#f-Account_ID__c")).to_have_text("Assigned on save")
    page.fill("#f-Name", name)
    page.fill("#f-BillingCountryCode", country)
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/o/Account/[0-9a-f]{32}$"))
    return page.url.rsplit("/", 1)[1]


def test_30_create_account_shows_its_number(page: Page, shot: Shot) -> None:
    create_account(page, "Acme Pte Ltd", "SG")
    number = page.locator("#v-Account_ID__c")
    expect(number).to_have_text(re.compile(rf"^IBG-B-{today('%Y%m%d')}-000001$"))
    expect(page.locator(".flash-ok")).to_contain_text("Account created: IBG-B-")
    expect(page.locator("#v-Name")).to_have_text("Acme Pte Ltd")
    shot("account-create.png")


def test_31_contract_for_sg_account_gets_csa_number(page: Page, platform: Platform, shot: Shot) -> None:
    platform.records.insert("Account", {"Name": "Lion City Foods", "BillingCountryCode": "SG"})
    page.goto("/o/Contract/new")
    page.select_option("#f-RecordTypeId", label="Services Agreement")
    options = page.locator("#f-AccountId option").all_inner_texts()
    page.select_option("#f-AccountId", label=next(o for o in options if o.startswith("Lion City Foods")))
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/o/Contract/[0-9a-f]{32}$"))
    expect(page.locator("#v-Contract_Number__c")).to_have_text(f"SG-CSA-{today('%y%m%d')}-01")
    expect(page.locator("#v-RecordTypeId")).to_have_text("Services Agreement")
    expect(page.locator("#v-AccountId")).to_have_text("Lion City Foods")
    shot("contract-create.png")


def test_32_quote_through_opportunity_uses_the_depth_2_chain(
    page: Page, platform: Platform, shot: Shot
) -> None:
    platform.records.insert("Account", {"Name": "Merlion Trading", "BillingCountryCode": "SG"})
    page.goto("/o/Opportunity/new")
    page.fill("#f-Name", "Harbour renewal")
    page.select_option("#f-AccountId", index=1)
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/o/Opportunity/[0-9a-f]{32}$"))
    page.goto("/o/Quote/new")
    page.fill("#f-Name", "Q-Harbour")
    page.select_option("#f-OpportunityId", label="Harbour renewal")
    expect(page.locator("#f-AccountId")).to_have_value("")  # no direct Account: the chain must do it
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/o/Quote/[0-9a-f]{32}$"))
    expect(page.locator("#v-Quote_No__c")).to_have_text(f"SG-QT-{today('%y%m%d')}-01")
    expect(page.locator("#v-OpportunityId")).to_have_text("Harbour renewal")
    shot("quote-create.png")


def test_33_edit_account_shows_account_id_read_only(page: Page, shot: Shot) -> None:
    record_id = create_account(page, "Keppel Works", "SG")
    number = page.locator("#v-Account_ID__c").inner_text()
    page.goto(f"/o/Account/{record_id}/edit")
    field = page.locator("#f-Account_ID__c")
    expect(field).to_have_value(number)
    expect(field).not_to_be_editable()
    expect(field).to_have_attribute("readonly", "")
    page.fill("#f-Name", "Keppel Works Ltd")
    shot("account-edit-readonly.png")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(rf"/o/Account/{record_id}$"))
    expect(page.locator("#v-Name")).to_have_text("Keppel Works Ltd")
    expect(page.locator("#v-Account_ID__c")).to_have_text(number)


def test_34_rules_page_previews_and_rejects_two_counters(page: Page, shot: Shot, admin_token: str) -> None:
    page.goto("/rules")
    page.wait_for_url(re.compile(r"/login"))
    page.fill("#token", admin_token)
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/rules"))
    row = page.locator("tr#Account\\.Account_ID__c")
    expect(row).to_contain_text("IBG-B-{YYYY}{MM}{DD}-{000000}")
    expect(row).to_contain_text("ok")
    page.click("text=Edit Account.Account_ID__c")
    editor = page.locator("form.editor[data-field='Account.Account_ID__c']")
    editor.get_by_label("Format", exact=True).fill("IBG-{YYYY}-{0000}")
    expect(editor.locator(".preview")).to_contain_text(f"IBG-{today('%Y')}-0001")
    shot("rules-preview.png")
    editor.locator("input[name=format]").fill("{0000}-{0000}")
    preview = editor.locator(".preview")
    expect(preview).to_contain_text("rule 1")
    expect(preview).to_contain_text("a format has exactly one counter")
    expect(preview).to_have_class(re.compile(r"\berror\b"))
    expect(editor.locator("button[type=submit]")).to_be_disabled()
    page.reload()  # nothing was stored
    expect(page.locator("tr#Account\\.Account_ID__c")).to_contain_text("IBG-B-{YYYY}{MM}{DD}-{000000}")
    shot("rules-reject.png")
