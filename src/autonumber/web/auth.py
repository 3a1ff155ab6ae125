"""The admin token (AUTONUMBER_ADMIN_TOKEN): a Bearer header for the API, a cookie for the pages."""

from __future__ import annotations

import hashlib
import hmac

from fastapi import Request

from autonumber.errors import AutonumberError

COOKIE = "autonumber_admin"
ENV = "AUTONUMBER_ADMIN_TOKEN"


class AdminDisabled(AutonumberError):
    """No admin token is configured, so every admin change is refused."""

    def __init__(self) -> None:
        super().__init__(
            f"admin changes are disabled: start the server with {ENV}=<a secret> to enable them"
        )


class AdminRequired(AutonumberError):
    """An admin call without a valid token."""

    def __init__(self) -> None:
        super().__init__(
            f"admin token required: send 'Authorization: Bearer <{ENV}>' or log in at /login"
        )


class AdminAuth:
    """Checks requests against the configured token; the cookie holds a digest, never the token."""

    def __init__(self, token: str | None) -> None:
        self._token = token or None

    @property
    def enabled(self) -> bool:
        """True when a token is configured."""
        return self._token is not None

    def check_token(self, candidate: str) -> bool:
        """Constant-time comparison with the configured token."""
        if self._token is None:
            return False
        return hmac.compare_digest(candidate.encode(), self._token.encode())

    def cookie_value(self) -> str:
        """What the login cookie holds: a digest of the token."""
        assert self._token is not None
        return hashlib.sha256(f"autonumber-admin:{self._token}".encode()).hexdigest()

    def is_admin(self, request: Request) -> bool:
        """True for a valid Bearer header or login cookie."""
        if self._token is None:
            return False
        header = request.headers.get("authorization", "")
        if header.lower().startswith("bearer ") and self.check_token(header[7:].strip()):
            return True
        cookie = request.cookies.get(COOKIE, "")
        return bool(cookie) and hmac.compare_digest(cookie, self.cookie_value())

    def require(self, request: Request) -> None:
        """Raise AdminDisabled or AdminRequired unless the request is an admin's."""
        if not self.enabled:
            raise AdminDisabled()
        if not self.is_admin(request):
            raise AdminRequired()
