"""`create_app(url_or_platform, admin_token=None)`: the FastAPI app behind `autonumber serve`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from autonumber.defaults import release
from autonumber.runtime import Platform, connect

from . import errors
from .api import WORKER, api, ops
from .auth import AdminAuth, cross_origin, host_refused
from .limits import BodyLimit, body_limit, bulk_body_limit
from .openapi import install_docs
from .pages import LoginRequired, pages, to_login, word_breaks
from .state import Console

HERE = Path(__file__).parent


def create_app(
    url_or_platform: str | Platform,
    admin_token: str | None = None,
    *,
    api_token: str | None = None,
    secret: str | None = None,
    allowed_hosts: Sequence[str] | None = None,
) -> FastAPI:
    """Build the app over a database URL (opened now) or an open Platform.

    `admin_token` enables admin changes (rules page, PUT /api/autonumber/fields/…); None disables
    them. `api_token`, when set, is required for every write. `autonumber serve` passes
    AUTONUMBER_ADMIN_TOKEN and AUTONUMBER_API_TOKEN; `secret` signs sessions and CSRF tokens
    (default AUTONUMBER_SECRET_KEY, else random per process). `allowed_hosts` lists the Host
    header values answered (`*.example.com` for a domain, `*` for any); None leaves the Host check
    to whoever embeds the app (`serve` always passes a list).
    """
    platform = connect(url_or_platform) if isinstance(url_or_platform, str) else url_or_platform
    app = FastAPI(
        title="autonumber",
        summary="Salesforce-grade auto-numbers for CRM records: records API, rules and preview.",
        version=release(),
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
    app.add_exception_handler(LoginRequired, to_login)
    install_docs(app)
    WORKER.set(1)
    app.add_middleware(
        RequestGuard, allowed_hosts=None if allowed_hosts is None else tuple(h.lower() for h in allowed_hosts)
    )
    app.add_middleware(HeadAsGet)
    # added last, so it runs first: before any check reads the body
    app.add_middleware(BodyLimit, limit=body_limit(), bulk_limit=bulk_body_limit())
    return app


class RequestGuard:
    """Refuse a request for a host this server does not serve (DNS rebinding) and a state-changing
    request that a page of another site made the browser send; mark every cookie `Secure` when the
    request came over HTTPS (directly, or through a trusted proxy that says so).

    Plain ASGI rather than `@app.middleware("http")`: that wrapper streams every response through
    an extra task and queue, which cost the records API about a fifth of its CPU per request."""

    def __init__(self, app: ASGIApp, allowed_hosts: tuple[str, ...] | None = None) -> None:
        self.app = app
        self.allowed_hosts = allowed_hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        refused = host_refused(request, self.allowed_hosts)
        reason = cross_origin(request)
        if refused is not None or reason is not None:
            if refused is not None:
                response = await errors.respond_error(request, 400, refused)
            else:
                message = f"cross-origin request refused: {reason} (send it from this site's own pages)"
                response = await errors.respond_error(request, 403, message)
            await response(scope, receive, send)
            return
        if scope.get("scheme") != "https":
            await self.app(scope, receive, send)
            return

        async def secure_cookies(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                cookies = [v for k, v in headers.items() if k == "set-cookie"]
                if cookies:
                    del headers["set-cookie"]
                    for cookie in cookies:
                        secure = "; secure" in cookie.lower()
                        headers.append("set-cookie", cookie if secure else f"{cookie}; Secure")
            await send(message)

        await self.app(scope, receive, secure_cookies)


class HeadAsGet:
    """Answer HEAD wherever GET answers (FastAPI routes list GET alone): the GET runs, its headers
    go out and its body does not."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def headers_only(message: Message) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headers_only)
