"""Database URLs: validation, password masking and engine construction with per-backend settings."""

from __future__ import annotations

import re
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from autonumber.defaults import DEFAULT_URL
from autonumber.errors import ConfigError, DatabaseUnavailable

from .liveness import drop_after_failed_end, ping_when_idle

__all__ = ["DEFAULT_URL", "check_reachable", "create_engine", "mask", "normalise", "parse_url"]
SUPPORTED = ("sqlite", "mysql", "mariadb", "postgresql")
_USERINFO_PASSWORD = re.compile(r"(://[^:/?#@]*:)[^/?#]*@")
"""The password part of `scheme://user:password@host` (up to the authority's last @), for text that
does not parse as a URL or whose password holds a raw @."""
_QUERY_SECRET = re.compile(r"([?&](?:password|passwd|pwd|sslpassword|sslkey|passfile)=)[^&#]*", re.IGNORECASE)
"""A password given as a query option (`?password=…`), which hide_password does not hide."""
SECRET_OPTIONS = frozenset({"password", "passwd", "pwd", "sslpassword", "sslkey", "passfile"})


def mask(url: str | URL) -> str:
    """The URL as text with every password (user info or query option) replaced by ***."""
    if isinstance(url, URL):
        query = {k: ("***" if k.lower() in SECRET_OPTIONS else v) for k, v in url.query.items()}
        return url.set(query=query).render_as_string(hide_password=True).replace("%2A%2A%2A", "***")
    return _QUERY_SECRET.sub(r"\1***", _USERINFO_PASSWORD.sub(r"\1***@", url))


def _authority(url: str) -> str:
    """The `user:password@host:port` part of a URL's text."""
    rest = url.split("://", 1)[1] if "://" in url else ""
    return re.split(r"[/?#]", rest, maxsplit=1)[0]


def parse_url(url: str) -> URL:
    """Parse and check a database URL, raising a one-line ConfigError naming the masked URL."""
    if _authority(url).count("@") > 1:
        raise ConfigError(
            f"malformed database URL {mask(url)!r}: the user name or password holds a raw '@'; "
            "write it as %40"
        )
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
    drop_after_failed_end(engine, impl.is_retryable)
    if idle_ping:
        ping_when_idle(engine)
    return engine


def check_reachable(engine: Engine) -> None:
    """Open one connection. A server that is down or refuses the connection is DatabaseUnavailable
    (retry later); anything else wrong with the URL (credentials, database name, an option the
    driver does not know) is a one-line ConfigError naming the masked URL."""
    from . import dialect_for_url

    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except TypeError as exc:  # the driver's connect() refused a keyword: a query option it lacks
        shown = mask(engine.url)
        raise ConfigError(f"database URL {shown!r} has an option the driver does not take: {exc}") from None
    except sa.exc.DBAPIError as exc:
        if dialect_for_url(engine.url).is_unreachable(exc):
            raise DatabaseUnavailable(f"connecting to {mask(engine.url)}", exc) from exc
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise ConfigError(f"cannot connect to {mask(engine.url)}: {reason}") from None
