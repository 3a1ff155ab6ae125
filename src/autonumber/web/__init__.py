"""The web console and HTTP API (FastAPI + Jinja2): a thin shell over `autonumber.connect()`."""

from __future__ import annotations

from .app import create_app as create_app

__all__ = ["create_app"]
