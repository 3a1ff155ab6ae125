"""Who may change what: the admin token (rules), the optional API token (every write), console
sessions, CSRF tokens, the same-origin check and login rate limiting.

- `AUTONUMBER_ADMIN_TOKEN` enables admin changes; `AUTONUMBER_API_TOKEN`, when set, is required for
  every call through the API, reads included (Bearer header), and every console page (a login).
  The admin token also reads and writes.
- A console login gets a signed session cookie that expires; the session also lives in
  `_System_WebSession`, so a logout ends it on every worker.
- Every form carries a CSRF token tied to a cookie; every state-changing request whose Origin (or
  Referer) names another host is refused before it reaches a route.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import threading
import time
from collections import deque
from collections.abc import Mapping
from datetime import timedelta
from typing import Literal, cast
from urllib.parse import urlsplit

import sqlalchemy as sa
from fastapi import Request
from sqlalchemy.engine import Engine

from autonumber.db import dialect_for
from autonumber.db.schema import ensure_table
from autonumber.db.tables import web_session_table
from autonumber.defaults import ADMIN_TOKEN_ENV, ALLOWED_HOSTS_ENV, API_TOKEN_ENV, SECRET_ENV
from autonumber.errors import AutonumberError

COOKIE = "autonumber_session"
CSRF_COOKIE = "autonumber_csrf"
CSRF_FIELD = "csrf_token"
ENV = ADMIN_TOKEN_ENV
API_ENV = API_TOKEN_ENV

ORIGINS_ENV = "AUTONUMBER_ALLOWED_ORIGINS"
SESSION_LIFETIME = timedelta(hours=8)
LOGIN_ATTEMPTS = 5
LOGIN_WINDOW = 60.0
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

Role = Literal["admin", "writer"]


class AdminDisabled(AutonumberError):
    """No admin token is configured, so every admin change is refused."""

    def __init__(self) -> None:
        super().__init__(f"admin changes are disabled: start the server with {ENV}=<a secret> to enable them")


class AdminRequired(AutonumberError):
    """An admin call without a valid token."""

    def __init__(self) -> None:
        super().__init__(f"admin token required: send 'Authorization: Bearer <{ENV}>' or log in at /login")


class WriteTokenRequired(AutonumberError):
    """A call (read or write) without the API token while AUTONUMBER_API_TOKEN is set."""

    def __init__(self) -> None:
        super().__init__(
            f"this server requires a token: send 'Authorization: Bearer <{API_ENV}>' or log in at /login"
        )


class ForbiddenRequest(AutonumberError):
    """A cross-origin state change or a form without a valid CSRF token."""


class TooManyLogins(AutonumberError):
    """Too many failed logins from one client within the window."""

    def __init__(self, retry_after: int) -> None:
        self.retry_after = retry_after
        super().__init__(f"too many failed logins; try again in {retry_after} s")


def _bytes(text: str) -> bytes:
    """Any str (lone surrogates included) as bytes, for constant-time comparisons."""
    return text.encode("utf-8", "surrogatepass")


def _same(a: str, b: str) -> bool:
    return hmac.compare_digest(_bytes(a), _bytes(b))


class LoginLimiter:
    """At most LOGIN_ATTEMPTS failed logins per client per LOGIN_WINDOW seconds (per process)."""

    def __init__(self, attempts: int = LOGIN_ATTEMPTS, window: float = LOGIN_WINDOW) -> None:
        self.attempts = attempts
        self.window = window
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def check(self, client: str) -> None:
        """TooManyLogins while the client has used up its failures."""
        now = time.monotonic()
        with self._lock:
            recent = self._failures.get(client)
            if recent is None:
                return
            while recent and now - recent[0] > self.window:
                recent.popleft()
            if len(recent) >= self.attempts:
                raise TooManyLogins(int(self.window - (now - recent[0])) + 1)

    def failed(self, client: str) -> None:
        """Count one failed login."""
        with self._lock:
            self._failures.setdefault(client, deque()).append(time.monotonic())


class AdminAuth:
    """Tokens, sessions and CSRF for one app; the cookie never holds a token."""

    def __init__(
        self,
        token: str | None,
        *,
        api_token: str | None = None,
        engine: Engine | None = None,
        secret: str | None = None,
    ) -> None:
        self._token = token or None
        self._api_token = api_token or None
        self._engine = engine
        self._secret = _bytes(secret or os.environ.get(SECRET_ENV) or secrets.token_hex(32))
        self.limiter = LoginLimiter()

    @property
    def enabled(self) -> bool:
        """True when an admin token is configured."""
        return self._token is not None

    @property
    def writes_need_token(self) -> bool:
        """True when AUTONUMBER_API_TOKEN is set."""
        return self._api_token is not None

    @property
    def login_enabled(self) -> bool:
        """True when some token can log in."""
        return self.enabled or self.writes_need_token

    def role_of_token(self, candidate: str) -> Role | None:
        """The role a token grants (constant-time comparisons), or None."""
        if self._token is not None and _same(candidate, self._token):
            return "admin"
        if self._api_token is not None and _same(candidate, self._api_token):
            return "writer"
        return None

    def check_token(self, candidate: str) -> bool:
        """True for the admin token."""
        return self.role_of_token(candidate) == "admin"

    # --- sessions --------------------------------------------------------------------------------
    def _sign(self, text: str) -> str:
        return hmac.new(self._secret, _bytes(text), hashlib.sha256).hexdigest()

    def start_session(self, role: Role) -> tuple[str, int]:
        """A new session for `role`: the cookie value and its lifetime in seconds."""
        sid = secrets.token_urlsafe(32)
        engine = self._require_engine()
        ensure_table(engine, web_session_table)
        with engine.begin() as conn:
            expires = dialect_for(conn).utc_now(conn).replace(tzinfo=None) + SESSION_LIFETIME
            conn.execute(
                sa.insert(web_session_table).values(
                    session_digest=_digest(sid),
                    role=role,
                    expires_at=expires,
                )
            )
        payload = f"{sid}.{role}.{int(time.time() + SESSION_LIFETIME.total_seconds())}"
        return f"{payload}.{self._sign(payload)}", int(SESSION_LIFETIME.total_seconds())

    def end_session(self, request: Request) -> None:
        """Delete the request's session on the server (a copied cookie stops working too)."""
        parsed = self._parse_cookie(request.cookies.get(COOKIE, ""))
        if parsed is None or self._engine is None:
            return
        ensure_table(self._engine, web_session_table)
        with self._engine.begin() as conn:
            conn.execute(
                sa.delete(web_session_table).where(web_session_table.c.session_digest == _digest(parsed[0]))
            )

    def _parse_cookie(self, value: str) -> tuple[str, Role] | None:
        parts = value.split(".")
        if len(parts) != 4:
            return None
        sid, role, expires, signature = parts
        if not _same(signature, self._sign(f"{sid}.{role}.{expires}")):
            return None
        if not expires.isdigit() or int(expires) < time.time() or role not in ("admin", "writer"):
            return None
        return sid, role  # type: ignore[return-value]

    def session_role(self, request: Request) -> Role | None:
        """The role of a signed, unexpired session that the server still holds, or None."""
        if hasattr(request.state, "autonumber_role"):
            return cast("Role | None", request.state.autonumber_role)
        role = self._lookup_session(request.cookies.get(COOKIE, ""))
        request.state.autonumber_role = role
        return role

    def _lookup_session(self, cookie: str) -> Role | None:
        parsed = self._parse_cookie(cookie)
        if parsed is None or self._engine is None:
            return None
        sid, role = parsed
        ensure_table(self._engine, web_session_table)
        t = web_session_table
        with self._engine.connect() as conn:
            now = dialect_for(conn).utc_now(conn).replace(tzinfo=None)
            row = conn.execute(
                sa.select(t.c.role).where(t.c.session_digest == _digest(sid), t.c.expires_at > now)
            ).first()
        return role if row is not None and row.role == role else None

    def _require_engine(self) -> Engine:
        if self._engine is None:
            raise AdminDisabled()
        return self._engine

    # --- who is asking ---------------------------------------------------------------------------
    def bearer_role(self, request: Request) -> Role | None:
        """The role of the request's Bearer token, or None."""
        header = request.headers.get("authorization", "")
        if header[:7].lower() == "bearer ":
            return self.role_of_token(header[7:].strip())
        return None

    def role(self, request: Request) -> Role | None:
        """The role of the request: Bearer token first, then the session cookie."""
        return self.bearer_role(request) or (self.session_role(request) if self.login_enabled else None)

    def is_admin(self, request: Request) -> bool:
        """True for the admin token, as a Bearer header or a session."""
        return self.enabled and self.role(request) == "admin"

    def can_write(self, request: Request) -> bool:
        """True when writes are open, or the request carries a writer's or admin's credentials."""
        return not self.writes_need_token or self.role(request) is not None

    def require(self, request: Request) -> None:
        """Raise AdminDisabled or AdminRequired unless the request is an admin's."""
        if not self.enabled:
            raise AdminDisabled()
        if not self.is_admin(request):
            raise AdminRequired()

    def require_writer(self, request: Request) -> None:
        """Raise WriteTokenRequired when AUTONUMBER_API_TOKEN is set and the request lacks it."""
        if not self.can_write(request):
            raise WriteTokenRequired()

    # --- CSRF ------------------------------------------------------------------------------------
    def csrf_token(self, cookie_value: str) -> str:
        """The form token that goes with a CSRF cookie."""
        return self._sign(f"csrf:{cookie_value}")

    def check_csrf(self, request: Request, form: Mapping[str, object]) -> None:
        """ForbiddenRequest unless the form's token matches the request's CSRF cookie."""
        cookie = request.cookies.get(CSRF_COOKIE, "")
        sent = form.get(CSRF_FIELD)
        if not cookie or not isinstance(sent, str) or not _same(sent, self.csrf_token(cookie)):
            raise ForbiddenRequest(
                "the form's CSRF token is missing or stale: reload the page and submit it again"
            )


def new_csrf_cookie() -> str:
    """A fresh random CSRF cookie value."""
    return secrets.token_urlsafe(32)


def _digest(sid: str) -> str:
    return hashlib.sha256(sid.encode()).hexdigest()


def allowed_origins() -> set[str]:
    """Extra origins (scheme://host[:port]) from AUTONUMBER_ALLOWED_ORIGINS, e.g. behind a proxy."""
    raw = os.environ.get(ORIGINS_ENV, "")
    return {o.strip().rstrip("/").lower() for o in raw.split(",") if o.strip()}


def host_name(host_header: str) -> str:
    """The host of a Host header, port and IPv6 brackets removed, lower case."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def host_refused(request: Request, allowed: tuple[str, ...] | None) -> str | None:
    """Why the request's Host is not one this server answers (DNS rebinding), or None."""
    if allowed is None or "*" in allowed:
        return None
    header = request.headers.get("host", "")
    host = host_name(header)
    for name in allowed:
        if host == name or (name.startswith("*.") and host.endswith(name[1:])):
            return None
    shown = header[:80].encode("ascii", "backslashreplace").decode()
    return f"host {shown!r} is not served here; add it with --allowed-host (or {ALLOWED_HOSTS_ENV})"


def cross_origin(request: Request) -> str | None:
    """Why a state-changing request comes from another site, or None when it is same-origin or
    carries neither Origin nor Referer (a non-browser client). Same origin means the same scheme
    and host:port: an http:// page may not post to the https:// site."""
    if request.method not in WRITE_METHODS:
        return None
    source = request.headers.get("origin") or request.headers.get("referer")
    if source is None:
        return None
    host = request.headers.get("host", "").lower()
    try:
        parts = urlsplit(source)
        origin = f"{parts.scheme}://{parts.netloc}".lower()
        netloc = parts.netloc.lower()
    except ValueError:
        return f"malformed Origin/Referer {source[:80]!r}"
    if source == "null" or not netloc:
        return "a request from an opaque origin"
    own = f"{request.url.scheme}://{host}"
    if origin == own or origin in allowed_origins():
        return None
    return f"a request from {origin} to {own}"
