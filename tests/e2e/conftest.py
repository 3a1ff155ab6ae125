"""Browser fixtures: Debian's Chromium driven by Playwright against a real Uvicorn server on SQLite.

Chromium comes from apt (`make test` installs it); Playwright's own browser download is never used.
Under CI=true a missing /usr/bin/chromium fails the tests instead of skipping them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import autonumber
from autonumber.runtime import Platform
from autonumber.web import create_app
from autonumber.web.server import serve_in_thread
from support import bootstrap_url

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TOKEN = "e2e-admin-token"
EVIDENCE = Path(__file__).resolve().parents[2] / "evidence" / "autonumber-v2"

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import Browser, Page, sync_playwright  # noqa: E402


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One headless Chromium for the session."""
    if not os.access(CHROMIUM, os.X_OK):
        message = f"{CHROMIUM} is missing: apt-get install -y chromium (make test does)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{message}; CI=true: browser tests must run")
        pytest.skip(message)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def platform(sqlite_url: str) -> Iterator[Platform]:
    """A bootstrapped SQLite database."""
    bootstrap_url(sqlite_url)
    p = autonumber.connect(sqlite_url)
    yield p
    p.close()


@pytest.fixture
def base_url(platform: Platform) -> Iterator[str]:
    """The console served by Uvicorn on a free 127.0.0.1 port, admin token enabled."""
    with serve_in_thread(create_app(platform, admin_token=TOKEN)) as url:
        yield url


@pytest.fixture
def page(browser: Browser, base_url: str) -> Iterator[Page]:
    """A fresh browser tab (own cookies) pointed at the console."""
    context = browser.new_context(base_url=base_url, viewport={"width": 1280, "height": 860})
    context.set_default_timeout(15_000)
    tab = context.new_page()
    yield tab
    context.close()


@pytest.fixture
def admin_token() -> str:
    """The token the console under test accepts."""
    return TOKEN


@pytest.fixture
def shot(page: Page) -> Callable[[str], Path]:
    """Save a full-page screenshot under evidence/autonumber-v2/ (git-ignored)."""

    def save(name: str) -> Path:
        EVIDENCE.mkdir(parents=True, exist_ok=True)
        path = EVIDENCE / name
        page.screenshot(path=str(path), full_page=True)
        return path

    return save


DOCS = Path(__file__).resolve().parents[2] / "docs"
"""Where the README's screenshots live: written by the browser tests so they cannot go stale."""
WIDTHS = {"desktop": 1280, "phone": 390}


@pytest.fixture(scope="module")
def full_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The console over the full pack (every object `setup apply` creates), admin token enabled."""
    from autonumber.commands.setup import apply_setup
    from autonumber.progress import NullReporter

    url = f"sqlite:///{tmp_path_factory.mktemp('full') / 'autonumber.db'}"
    apply_setup(url, NullReporter())
    p = autonumber.connect(url)
    try:
        p.records.insert("Case", {"Subject": "Printer jam"})
        p.records.insert("Account", {"Name": "Acme Pte Ltd", "BillingCountryCode": "SG"})
        with serve_in_thread(create_app(p, admin_token=TOKEN)) as served:
            yield served
    finally:
        p.close()


@pytest.fixture(params=sorted(WIDTHS), ids=sorted(WIDTHS))
def wide(request: pytest.FixtureRequest, browser: Browser, full_url: str) -> Iterator[Page]:
    """A tab on the full pack at 1280 px (desktop) or 390 px (phone)."""
    width = WIDTHS[request.param]
    context = browser.new_context(base_url=full_url, viewport={"width": width, "height": 860})
    context.set_default_timeout(15_000)
    tab = context.new_page()
    yield tab
    context.close()


@pytest.fixture
def docs_dir() -> Path:
    """docs/, where the browser tests write the README's screenshots."""
    return DOCS
