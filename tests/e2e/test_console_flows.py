"""The console over the full pack, at 1280 and 390 px: the home search after any sequence of typed and
submitted searches, the rules page's message where the admin is looking after Save and Set next
number (in the window, focused, announced), and the rules page's size."""

from __future__ import annotations

import re
from urllib.parse import quote_plus

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.e2e

RULES_PAGE_BOUND_BYTES = 150_000


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


def result_in_view(page: Page, text: str) -> None:
    """The message is shown inside the window, focused, and a live region."""
    message = page.locator("#result")
    expect(message).to_contain_text(text)
    expect(message).to_be_focused()
    assert message.get_attribute("role") == "status" and message.get_attribute("aria-live") == "polite"
    box = message.bounding_box()
    size = page.viewport_size
    assert box is not None and size is not None
    assert box["y"] >= 0 and box["y"] + box["height"] <= size["height"], (box, size)
    assert box["x"] >= 0 and box["x"] < size["width"], (box, size)


def last_global_field(page: Page) -> str:
    """The id of the last field on the page whose counter is global (far below the page's top)."""
    ids: list[str] = page.locator("tr.field-row").evaluate_all(
        "rows => rows.filter(r => r.querySelector('td[data-label=Scope]').textContent.trim() === 'global')"
        ".map(r => r.id)"
    )
    assert len(ids) > 10
    return ids[-1]


def open_editor(page: Page, field: str) -> None:
    page.click(f"text=Edit {field}")
    expect(page.locator(f"form.editor[data-field='{field}']")).to_be_visible()


def test_the_message_after_save_and_set_next_number_is_where_the_admin_looks(
    wide: Page, admin_token: str
) -> None:
    wide.goto("/")
    log_in(wide, admin_token)
    wide.goto("/rules")
    field = last_global_field(wide)
    key = field.replace(".", "-")
    open_editor(wide, field)
    wide.fill(f"[id='zone-{key}']", "Asia/Tokyo")
    wide.locator(f"form.editor[data-field='{field}'] button[type=submit]").click()
    wide.wait_for_url(re.compile(r"/rules\?result=" + re.escape(quote_plus(field)) + "#result$"))
    result_in_view(wide, " now uses ")
    # the message sits in the row after the field's own
    assert wide.locator(f"tr[id='{field}'] + tr.result-row #result").count() == 1

    open_editor(wide, field)
    counter = wide.locator(f"[id='counter-next-{key}']")
    next_value = int(counter.get_attribute("placeholder") or "0") + 100
    counter.fill(str(next_value))
    wide.click(f"form.counter-set[data-counter-field='{field}'] button[type=submit]")
    wide.wait_for_url(re.compile(r"result=" + re.escape(quote_plus(field))))
    result_in_view(wide, f"→ {next_value}")

    open_editor(wide, field)  # a refusal is shown the same way
    wide.fill(f"[id='counter-next-{key}']", "1")
    wide.click(f"form.counter-set[data-counter-field='{field}'] button[type=submit]")
    wide.wait_for_url(re.compile(r"result=" + re.escape(quote_plus(field))))
    result_in_view(wide, f"the lowest allowed is {next_value}")


def test_the_rules_page_is_small_and_its_editors_still_work_without_script(
    wide: Page, admin_token: str
) -> None:
    wide.goto("/")
    log_in(wide, admin_token)
    response = wide.request.get("/rules")
    assert response.ok
    body = response.body()
    assert 'id="nav-logout"' in body.decode()  # the admin's page, with an editor link per field
    rows = body.count(b'class="field-row"')
    assert rows >= 40 and body.count(b'class="editor-link') == rows
    assert len(body) <= RULES_PAGE_BOUND_BYTES, f"/rules is {len(body)} bytes"
    # the editor link opens a page of its own (what a browser without JavaScript gets)
    wide.goto("/rules")
    link = wide.locator("a.editor-link").first
    href = link.get_attribute("href")
    assert href
    wide.goto(href)
    expect(wide.locator("main h1")).to_contain_text("Edit ")
    expect(wide.locator("form.editor[data-field]")).to_be_visible()
    expect(wide.locator("form.editor[data-field] .preview .num")).to_be_visible()  # live preview runs
