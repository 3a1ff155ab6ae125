"""Helpers of the web tests: a browser-like client whose forms carry their CSRF token."""

from __future__ import annotations

from support import CSRF_INPUT, FormClient, csrf_token

__all__ = ["CSRF_INPUT", "FormClient", "csrf_token"]
