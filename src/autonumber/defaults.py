"""Defaults every entry point shares (library, CLI, web server) and the release's identity; imports
nothing, so the CLI starts fast."""

from __future__ import annotations

SCHEMA_VERSION = 8
"""The schema this release reads and writes: the number of the last migration it ships."""


def release() -> str:
    """This package's version, as installed (`autonumber --version`)."""
    from importlib import metadata as _metadata  # 20 ms of imports: only when asked

    try:
        return _metadata.version("autonumber")
    except _metadata.PackageNotFoundError:  # a source tree that was never installed
        return "unknown"


DEFAULT_URL = "sqlite:///autonumber.db"
"""The database used when none is named: a SQLite file in the working directory."""

DATABASE_ENV = "AUTONUMBER_DATABASE_URL"
"""The environment variable naming the database (`--db` and the web server read it)."""

MAX_CONNECTIONS_ENV = "AUTONUMBER_MAX_CONNECTIONS"
"""Database connections per process, all pools together (`--max-connections`)."""

ADMIN_TOKEN_ENV = "AUTONUMBER_ADMIN_TOKEN"
"""The token that enables admin changes on the web console (rules page, PUT of a rule)."""

API_TOKEN_ENV = "AUTONUMBER_API_TOKEN"
"""When set, the Bearer token every web write needs."""

SECRET_ENV = "AUTONUMBER_SECRET_KEY"
"""The key signing web sessions and CSRF tokens (shared by every worker)."""

FORWARDED_ALLOW_IPS_ENV = "AUTONUMBER_FORWARDED_ALLOW_IPS"
"""Proxies whose X-Forwarded-For/-Proto the web server believes (comma-separated); none by default."""

ALLOWED_HOSTS_ENV = "AUTONUMBER_ALLOWED_HOSTS"
"""Host header values the web server answers (comma-separated); `serve` sets it for its workers."""

MAX_BODY_ENV = "AUTONUMBER_MAX_BODY"
"""The largest request body the web server reads, in bytes (default MAX_BODY)."""

MAX_BULK_BODY_ENV = "AUTONUMBER_MAX_BULK_BODY"
"""The largest body of a bulk insert (`POST /api/records/{object}/bulk`), in bytes (default MAX_BULK_BODY)."""

MAX_BODY = 1024 * 1024
"""1 MiB: one record, a rule change or a console form is a few kilobytes."""

MAX_BULK_BODY = 64 * 1024 * 1024
"""64 MiB: about half a million short records as NDJSON; larger imports go through the CLI."""
