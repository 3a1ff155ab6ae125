"""Exception handlers: every error becomes JSON `{"error": "...", ...ids}` (or an HTML page off /api).

Bad input is a 4xx naming what is wrong; a 500 only ever means a bug or a broken database.
"""

from __future__ import annotations

import logging
from typing import Any

import sqlalchemy as sa
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from autonumber import errors as e

from .auth import AdminDisabled, AdminRequired, ForbiddenRequest, TooManyLogins, WriteTokenRequired

log = logging.getLogger("autonumber.web")
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")

STATUS: list[tuple[type[e.AutonumberError], int]] = [
    (AdminRequired, 401),
    (WriteTokenRequired, 401),
    (ForbiddenRequest, 403),
    (TooManyLogins, 429),
    (AdminDisabled, 403),
    (e.UnknownObject, 404),
    (e.RecordNotFound, 404),
    (e.UnknownField, 404),
    (e.RuleQuarantined, 409),
    (e.CounterOverflow, 409),
    (e.NumberAlreadyStored, 409),
    (e.TransactionConflict, 409),
    (e.RuleChangeRefused, 409),
    (e.VerifyError, 409),
    (e.FormatError, 422),
    (e.TokenResolveError, 422),
    (e.RecordError, 422),
    (e.InvalidIdentifier, 422),
    (e.ConfigError, 422),
    (e.IdempotencyConflict, 422),
    (e.CommitOutcomeUnknown, 503),
    (e.DatabaseUnavailable, 503),
    (e.ConnectionBudgetExhausted, 503),
    (e.ReservationFailed, 503),
    (e.WriteConflict, 503),
    (e.LockTimeout, 503),
    (e.CounterMissing, 500),
]
"""Most specific first: the first class an error is an instance of gives the status."""

_IDS = (
    "rule",
    "format",
    "position",
    "field_id",
    "field",
    "token",
    "cause",
    "chains",
    "record_id",
    "scope_key",
    "value",
    "width",
    "reason",
    "attempts",
    "violations",
    "record_ids",
    "stored",
    "stored_through",
    "unknown_from",
    "unknown_through",
    "retry_after",
)


def status_of(exc: e.AutonumberError) -> int:
    """The HTTP status of a library error (400 for one not listed)."""
    return next((code for cls, code in STATUS if isinstance(exc, cls)), 400)


def error_body(exc: e.AutonumberError) -> dict[str, Any]:
    """The message plus the ids the error carries."""
    body: dict[str, Any] = {"error": str(exc), "type": type(exc).__name__}
    for name in _IDS:
        value = getattr(exc, name, None)
        if value not in (None, "", ()):
            body[name] = list(value) if isinstance(value, tuple) else value
    if isinstance(exc, e.UnknownObject):
        body["object"] = exc.object_name
    return body


def _wants_json(request: Request) -> bool:
    path = request.url.path
    return (
        path.startswith("/api")
        or path in ("/metrics", "/healthz")
        or "html" not in request.headers.get("accept", "")
    )


def _html(request: Request, status: int, message: str) -> Response:
    templates = request.app.state.templates
    return templates.TemplateResponse(  # type: ignore[no-any-return]
        request, "error.html", {"status": status, "message": message}, status_code=status
    )


def encodable(value: Any) -> Any:
    """`value` with every lone surrogate in its text written as an escape, so the answer can be
    encoded as UTF-8 (an error message may quote the bad input it refuses)."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {encodable(k): encodable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encodable(v) for v in value]
    return value


def _respond(request: Request, status: int, body: dict[str, Any]) -> Response:
    body = encodable(body)
    if _wants_json(request):
        return JSONResponse(body, status_code=status, headers=_retry(status, body))
    response = _html(request, status, str(body["error"]))
    response.headers.update(_retry(status, body))
    return response


def _retry(status: int, body: dict[str, Any]) -> dict[str, str]:
    if status == 503:
        return {"Retry-After": "1"}
    if status == 429:
        return {"Retry-After": str(body.get("retry_after", 60))}
    return {}


async def respond_error(request: Request, status: int, message: str) -> Response:
    """An error response outside the exception handlers (middleware)."""
    return _respond(request, status, {"error": message})


async def on_autonumber_error(request: Request, exc: Exception) -> Response:
    """A library error: its status and ids."""
    assert isinstance(exc, e.AutonumberError)
    return _respond(request, status_of(exc), error_body(exc))


async def on_validation_error(request: Request, exc: Exception) -> Response:
    """Bad JSON or a wrong type: 422 naming each place."""
    assert isinstance(exc, RequestValidationError)
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
        problems.append(f"{where}: {err.get('msg', 'invalid')}")
    body = {"error": "invalid request: " + "; ".join(problems), "problems": problems}
    return _respond(request, 422, body)


async def on_http_error(request: Request, exc: Exception) -> Response:
    """Routing errors (404, 405) in the same shape; a 405 says which methods are allowed."""
    assert isinstance(exc, StarletteHTTPException)
    message = str(exc.detail)
    headers = dict(exc.headers or {})
    if exc.status_code == 404 and message == "Not Found":
        message = f"no such page or endpoint: {request.method} {request.url.path}"
    if exc.status_code == 405:
        allowed = allowed_methods(request)
        headers["Allow"] = ", ".join(allowed)
        message = f"{request.method} is not allowed on {request.url.path}; use {' or '.join(allowed)}"
    response = _respond(request, exc.status_code, {"error": message})
    response.headers.update(headers)
    return response


def allowed_methods(request: Request) -> list[str]:
    """The methods some route of this path accepts."""
    routes = request.app.router.routes
    return [
        method
        for method in METHODS
        if any(route.matches({**request.scope, "method": method})[0] is Match.FULL for route in routes)
    ]


async def on_database_error(request: Request, exc: Exception) -> Response:
    """The database went away or refused: 503 so the client retries later (logged for operators).

    A PendingRollbackError is the same fault seen one statement later: the connection died inside
    a transaction, which then rolled back."""
    assert isinstance(exc, (sa.exc.DBAPIError, sa.exc.PendingRollbackError))
    log.warning("database error on %s %s: %s", request.method, request.url.path, getattr(exc, "orig", exc))
    if isinstance(exc, sa.exc.DataError):  # SQLSTATE class 22: a value the database cannot take
        first = (str(exc.orig).splitlines() or [""])[0][:200]
        return _respond(request, 422, {"error": f"the database refused a value of this request: {first}"})
    if isinstance(exc, sa.exc.DBAPIError) and not isinstance(
        exc, (sa.exc.OperationalError, sa.exc.InterfaceError)
    ):
        return await on_unexpected(request, exc)
    return _respond(request, 503, {"error": "the database is unavailable; retry later"})


async def on_unexpected(request: Request, exc: Exception) -> Response:
    """A bug: logged with its traceback, answered without one. The server closes the connection
    after it, so the answer says so and the client does not reuse the socket."""
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    response = _respond(request, 500, {"error": f"internal error ({type(exc).__name__}); see the server log"})
    response.headers["Connection"] = "close"
    return response


def install(app: FastAPI) -> None:
    """Register the handlers on an app."""
    app.add_exception_handler(e.AutonumberError, on_autonumber_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(sa.exc.DBAPIError, on_database_error)
    app.add_exception_handler(sa.exc.PendingRollbackError, on_database_error)
    app.add_exception_handler(Exception, on_unexpected)
