"""Helpers of the web tests: a browser-like client whose forms carry their CSRF token."""

from __future__ import annotations

import re
from typing import Any

from fastapi.testclient import TestClient

CSRF_INPUT = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_token(client: TestClient) -> str:
    """The CSRF token a form of this client's pages carries (fetching a page sets its cookie)."""
    for path in ("/login", "/o/Case/new"):
        found = CSRF_INPUT.search(client.get(path).text)
        if found:
            return found.group(1)
    raise AssertionError("no page with a form to read a CSRF token from")


class FormClient(TestClient):
    """A browser-like TestClient whose form posts carry the page's CSRF token, as a browser's do."""

    def post(self, url: Any, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        data = kwargs.get("data")
        if isinstance(data, dict) and "csrf_token" not in data:
            kwargs["data"] = {**data, "csrf_token": csrf_token(self)}
        return super().post(url, *args, **kwargs)
