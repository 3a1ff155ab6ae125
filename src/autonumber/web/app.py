"""`create_app(url_or_platform, admin_token=None)`: the FastAPI app behind `autonumber serve`."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.types import ASGIApp, Receive, Scope, Send

from autonumber.runtime import Platform, connect

from . import errors
from .api import WORKER, api, ops
from .auth import AdminAuth, cross_origin
from .openapi import install_docs
from .pages import pages, word_breaks
from .service import Console

HERE = Path(__file__).parent


def create_app(
    url_or_platform: str | Platform,
    admin_token: str | None = None,
    *,
    api_token: str | None = None,
    secret: str | None = None,
) -> FastAPI:
    """Build the app over a database URL (opened now) or an open Platform.

    `admin_token` enables admin changes (rules page, PUT /api/autonumber/fields/…); None disables
    them. `api_token`, when set, is required for every write. `autonumber serve` passes
    AUTONUMBER_ADMIN_TOKEN and AUTONUMBER_API_TOKEN; `secret` signs sessions and CSRF tokens
    (default AUTONUMBER_SECRET_KEY, else random per process).
    """
    platform = connect(url_or_platform) if isinstance(url_or_platform, str) else url_or_platform
    app = FastAPI(
        title="autonumber",
        summary="Salesforce-grade auto-numbers for CRM records: records API, rules and preview.",
        version="0.1.0",
        docs_url=None,
        redoc_url=None,
    )
    auth = AdminAuth(admin_token, api_token=api_token, engine=platform.db, secret=secret)
    app.state.console = Console(platform, auth)
    app.state.templates = Jinja2Templates(directory=HERE / "templates")
    app.state.templates.env.filters["wbr"] = word_breaks
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    app.include_router(api)
    app.include_router(ops)
    app.include_router(pages)
    errors.install(app)
    install_docs(app)
    WORKER.set(1)
    app.add_middleware(SameOriginOnly)
    return app


class SameOriginOnly:
    """Refuse a state-changing request that a page of another site made the browser send.

    Plain ASGI rather than `@app.middleware("http")`: that wrapper streams every response through
    an extra task and queue, which cost the records API about a fifth of its CPU per request."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            request = Request(scope)
            reason = cross_origin(request)
            if reason is not None:
                message = f"cross-origin request refused: {reason} (send it from this site's own pages)"
                response = await errors.respond_error(request, 403, message)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
