"""`create_app(url_or_platform, admin_token=None)`: the FastAPI app behind `autonumber serve`."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from autonumber.platform import Platform, connect

from . import errors
from .api import api, ops
from .auth import AdminAuth
from .pages import pages
from .service import Console

HERE = Path(__file__).parent


def create_app(url_or_platform: str | Platform, admin_token: str | None = None) -> FastAPI:
    """Build the app over a database URL (opened now) or an open Platform.

    `admin_token` enables admin changes (rules page, PUT /api/autonumber/fields/…); None disables
    them. `autonumber serve` passes AUTONUMBER_ADMIN_TOKEN.
    """
    platform = connect(url_or_platform) if isinstance(url_or_platform, str) else url_or_platform
    app = FastAPI(
        title="autonumber",
        summary="Salesforce-grade auto-numbers for CRM records: records API, rules and preview.",
        version="0.1.0",
    )
    app.state.console = Console(platform, AdminAuth(admin_token))
    app.state.templates = Jinja2Templates(directory=HERE / "templates")
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    app.include_router(api)
    app.include_router(ops)
    app.include_router(pages)
    errors.install(app)
    return app
