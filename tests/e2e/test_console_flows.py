"""The console over the full pack, at 1280 and 390 px: the home search after any sequence of typed and
submitted searches."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.e2e


def log_in(page: Page, token: str) -> None:
    """Use the navigation's login link, come back to the page it was clicked on."""
    here = page.url
    page.click("#nav-login")
    page.wait_for_url(re.compile(r"/login\?next="))
    page.fill("#token", token)
    page.click("main button[type=submit]")
    page.wait_for_url(here)
    expect(page.locator("#nav-logout")).to_be_visible()


def shown_objects(page: Page) -> list[str]:
    """The objects whose cards are visible now."""
    names: list[str] = page.locator("#object-cards .card:visible .count").evaluate_all(
        "els => els.map(e => e.dataset.object)"
    )
    return names


def search_box_finds(page: Page, text: str, expected: str) -> None:
    """Typing `text` shows `expected` and only objects that match."""
    page.fill("#q", text)
    expect(page.locator(f"#object-cards .card:visible .count[data-object='{expected}']")).to_be_visible()
    names = shown_objects(page)
    assert names and expected in names, names
    for name in names:
        card = page.locator(f"#object-cards .card:visible:has(.count[data-object='{name}'])")
        assert text.lower() in (card.get_attribute("data-search") or ""), (text, name)


def submit_search(page: Page, text: str) -> None:
    page.fill("#q", text)
    page.press("#q", "Enter")
    page.wait_for_url(re.compile(r"\?q=" + re.escape(text) + "$"))


def test_search_works_after_any_sequence_of_typed_and_submitted_searches(wide: Page) -> None:
    wide.goto("/")
    total = wide.locator("#object-cards .card").count()
    assert total > 100
    search_box_finds(wide, "payment", "Payment")
    submit_search(wide, "contract")
    assert "Contract" in shown_objects(wide)
    expect(wide.locator("#search-summary")).to_contain_text("match contract")
    # typed after a submitted search: every object is still searchable
    search_box_finds(wide, "quote", "Quote")
    expect(wide.locator("#search-summary")).to_contain_text("match quote")
    search_box_finds(wide, "case", "Case")
    wide.fill("#q", "")
    expect(wide.locator("#object-cards .card:visible")).to_have_count(total)
    expect(wide.locator("#search-summary")).to_be_hidden()
    submit_search(wide, "zzz-no-such-object")
    expect(wide.locator("#no-match")).to_be_visible()
    search_box_finds(wide, "account", "Account")
    expect(wide.locator("#no-match")).to_be_hidden()
    wide.fill("#q", "zzz-still-nothing")
    expect(wide.locator("#no-match")).to_be_visible()
    expect(wide.locator("#no-match")).to_contain_text("zzz-still-nothing")
    submit_search(wide, "payment")
    search_box_finds(wide, "contract", "Contract")
    wide.go_back()  # the earlier submitted search, then typing again
    wide.wait_for_url(re.compile(r"\?q=zzz-no-such-object$"))
    search_box_finds(wide, "order", "Order")
