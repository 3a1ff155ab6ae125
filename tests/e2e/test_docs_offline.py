"""/docs renders in Chromium with every request outside the server refused: Swagger UI comes from a
Python package's files, never from a CDN."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, Route, expect

pytestmark = pytest.mark.e2e


def offline(page: Page, base_url: str) -> list[str]:
    """Abort every request to another host; return the URLs that were tried."""
    own = urlsplit(base_url).netloc
    blocked: list[str] = []

    def route(r: Route) -> None:
        if urlsplit(r.request.url).netloc == own:
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    return blocked


def test_swagger_ui_renders_with_no_network(page: Page, base_url: str) -> None:
    blocked = offline(page, base_url)
    page.goto("/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("autonumber")
    expect(page.locator(".opblock-tag-section").first).to_be_visible()
    expect(page.get_by_text("/api/autonumber/preview").first).to_be_attached()
    page.goto("/docs/records/Account")
    expect(page.get_by_text("/api/records/Account/bulk").first).to_be_attached()
    assert blocked == []
