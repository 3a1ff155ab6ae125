"""The request-body limit: counted before authentication and before any JSON is parsed, from the
Content-Length header when there is one and byte by byte as a streamed body arrives, so a hostile
body never grows a worker's memory past the limit."""

from __future__ import annotations

import os

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from autonumber.defaults import MAX_BODY, MAX_BODY_ENV, MAX_BULK_BODY, MAX_BULK_BODY_ENV
from autonumber.errors import ConfigError

from . import errors


class BodyTooLarge(HTTPException):
    """A body over the limit (413). An HTTPException so FastAPI's body reading passes it through
    as it is rather than as a 400 "error parsing the body"."""

    def __init__(self, limit: int, setting: str) -> None:
        super().__init__(413, f"request body larger than {limit} bytes; the limit is set by {setting}")


def limit_from_env(name: str, default: int) -> int:
    """A byte count from the environment; a value that is not a positive integer is a ConfigError."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"{name}={raw!r}: give the largest request body as a number of bytes, e.g. 1048576")
    return int(raw)


def body_limit() -> int:
    """The limit on an ordinary body: AUTONUMBER_MAX_BODY, else 1 MiB."""
    return limit_from_env(MAX_BODY_ENV, MAX_BODY)


def bulk_body_limit() -> int:
    """The limit on a bulk insert's body: AUTONUMBER_MAX_BULK_BODY, else 64 MiB."""
    return limit_from_env(MAX_BULK_BODY_ENV, MAX_BULK_BODY)


class BodyLimit:
    """Refuse a body over `limit` bytes (`bulk_limit` on the bulk insert route) with a 413."""

    def __init__(self, app: ASGIApp, limit: int, bulk_limit: int) -> None:
        self.app, self.limit, self.bulk_limit = app, limit, bulk_limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        bulk = scope["path"].endswith("/bulk")
        limit, setting = (self.bulk_limit, MAX_BULK_BODY_ENV) if bulk else (self.limit, MAX_BODY_ENV)
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > limit:
            request = Request(scope)
            response = await errors.respond_error(request, 413, BodyTooLarge(limit, setting).detail)
            await response(scope, receive, send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(limit, setting)
            return message

        await self.app(scope, counted, send)
