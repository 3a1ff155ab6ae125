"""Database URLs: validation, password masking and engine construction with per-backend settings."""

from __future__ import annotations

import re
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from autonumber.defaults import DEFAULT_URL
from autonumber.errors import ConfigError

from .liveness import ping_when_idle

__all__ = ["DEFAULT_URL", "check_reachable", "create_engine", "mask", "normalise", "parse_url"]
SUPPORTED = ("sqlite", "mysql", "mariadb", "postgresql")
_USERINFO_PASSWORD = re.compile(r"(://[^:/?#@]*:)[^/?#]*@")
"""The password part of `scheme://user:password@host`, for text that does not parse as a URL."""


def mask(url: str | URL) -> str:
    """Return the URL as text with any password replaced by ***."""
    try:
        parsed = url if isinstance(url, URL) else make_url(url)
    except (ArgumentError, ValueError):
        return _USERINFO_PASSWORD.sub(r"\1***@", str(url))
    return parsed.render_as_string(hide_password=True)


def parse_url(url: str) -> URL:
    """Parse and check a database URL, raising a one-line ConfigError naming the masked URL."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError) as exc:
        raise ConfigError(f"malformed database URL {mask(url)!r}: {exc}") from None
    if parsed.get_backend_name() not in SUPPORTED:
        raise ConfigError(
            f"unsupported database URL {mask(parsed)!r}: use sqlite:///…, "
            "mysql+pymysql://… or postgresql+psycopg://…"
        )
    return normalise(parsed)


def normalise(url: URL) -> URL:
    """Pick the drivers this package ships with when the URL names none."""
    backend, driver = url.get_backend_name(), url.get_driver_name()
    if backend in ("mysql", "mariadb") and driver in ("mysqldb", ""):
        return url.set(drivername=f"{backend}+pymysql")
    if backend == "postgresql" and driver in ("psycopg2", ""):
        return url.set(drivername="postgresql+psycopg")
    return url


def create_engine(
    url: str | URL, *, pool_size: int = 8, statement_batches: bool = False, **kwargs: Any
) -> Engine:
    """Create a SQLAlchemy engine configured by the dialect layer (WAL and busy timeout on SQLite).

    Its connections are pinged at checkout once they sat idle (db/liveness.py), unless
    `pool_pre_ping=False`: then never. `statement_batches`: see Dialect.configure_engine (only the
    group writer's and the reservations' pools ask for it: a batch is never made from anything but
    the product's own statements)."""
    from . import dialect_for_url

    parsed = parse_url(url) if isinstance(url, str) else normalise(url)
    impl = dialect_for_url(parsed)
    options: dict[str, Any] = {**impl.engine_options(pool_size), **kwargs}
    idle_ping = options.pop("pool_pre_ping", True)
    try:
        engine = sa.create_engine(parsed, **options)
    except (ArgumentError, NoSuchModuleError) as exc:
        raise ConfigError(f"cannot use database URL {mask(parsed)!r}: {exc}") from None
    impl.configure_engine(engine, statement_batches=statement_batches)
    if idle_ping:
        ping_when_idle(engine)
    return engine


def check_reachable(engine: Engine) -> None:
    """Open one connection, turning any failure into a one-line ConfigError with the masked URL."""
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except sa.exc.DBAPIError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise ConfigError(f"cannot connect to {mask(engine.url)}: {reason}") from None
