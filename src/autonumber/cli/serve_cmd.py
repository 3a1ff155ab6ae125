"""`autonumber serve`: the web console and HTTP API under Uvicorn, in one or several worker processes."""

from __future__ import annotations

import ipaddress
import os
import secrets
import shutil
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from autonumber.defaults import ADMIN_TOKEN_ENV as ENV
from autonumber.defaults import (
    ALLOWED_HOSTS_ENV,
    DATABASE_ENV,
    FORWARDED_ALLOW_IPS_ENV,
    MAX_CONNECTIONS_ENV,
    SECRET_ENV,
)
from autonumber.defaults import API_TOKEN_ENV as API_ENV

from .common import DEFAULT_URL, DbOption

HostOption = Annotated[
    str,
    typer.Option(
        "--host", metavar="HOST", help="Interface to bind; the default keeps the console on this machine."
    ),
]
PortOption = Annotated[
    int, typer.Option("--port", metavar="PORT", min=0, max=65535, help="TCP port (0 picks a free one).")
]
WorkersOption = Annotated[
    int,
    typer.Option(
        "--workers", metavar="N", min=1, max=64, help="Worker processes; each has its own connection budget."
    ),
]
MaxConnectionsOption = Annotated[
    int | None,
    typer.Option(
        "--max-connections",
        metavar="N",
        min=3,
        max=1000,
        envvar=MAX_CONNECTIONS_ENV,
        show_default=False,
        help="Database connections per worker, all pools together (default 10).",
    ),
]
ForwardedOption = Annotated[
    str | None,
    typer.Option(
        "--forwarded-allow-ips",
        metavar="ADDRESSES",
        envvar=FORWARDED_ALLOW_IPS_ENV,
        show_default=False,
        help="Comma-separated proxy addresses (or CIDR ranges) whose X-Forwarded-For/-Proto are "
        "believed; default: none, so a client cannot choose its address by header.",
    ),
]
AllowedHostOption = Annotated[
    list[str] | None,
    typer.Option(
        "--allowed-host",
        metavar="HOST",
        show_default=False,
        help=f"A Host name this server answers (repeat it; *.example.com for a domain). Default: the "
        f"bound address and localhost, or {ALLOWED_HOSTS_ENV} (comma-separated).",
    ),
]
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
GRACEFUL_SECONDS = 30
WORKER_HEALTHCHECK_SECONDS = 60
"""How long Uvicorn's supervisor waits for a worker to answer its ping before it SIGKILLs and replaces
it. Uvicorn's default, 5 s, is shorter than a worker's start-up (it imports the app before it can
answer) and than a busy worker's answer on a loaded machine: under load the supervisor then killed
workers in a loop, dropping their in-flight requests (docs/deploying.md)."""


def serve(
    host: HostOption = "127.0.0.1",
    port: PortOption = 8000,
    db: DbOption = DEFAULT_URL,
    workers: WorkersOption = 1,
    max_connections: MaxConnectionsOption = None,
    forwarded_allow_ips: ForwardedOption = None,
    allowed_host: AllowedHostOption = None,
) -> None:
    """Serve the web console and the JSON API (OpenAPI at /docs) on an existing database.

    Admin changes (the rules page) need AUTONUMBER_ADMIN_TOKEN; AUTONUMBER_API_TOKEN, when set, is
    required for every write. SIGTERM lets in-flight requests finish (up to 30 s) before exiting.

    Example: autonumber serve --workers 4 --max-connections 10 --db postgresql+psycopg://postgres@127.0.0.1/autonumber
    """
    start_server(
        db,
        host,
        port,
        workers=workers,
        max_connections=max_connections,
        forwarded_allow_ips=forwarded_allow_ips,
        allowed_hosts=allowed_host,
    )


def start_server(
    db: str,
    host: str,
    port: int,
    *,
    workers: int = 1,
    max_connections: int | None = None,
    forwarded_allow_ips: str | None = None,
    allowed_hosts: list[str] | None = None,
) -> None:
    """Check the database, print the URL and run Uvicorn until interrupted or terminated."""
    import uvicorn

    from autonumber.db.budget import max_connections_from
    from autonumber.web.server import default_allowed_hosts, proxy_options

    budget = max_connections_from(max_connections)
    proxies = proxy_options(forwarded_allow_ips)
    hosts = allowed_hosts or _env_list(ALLOWED_HOSTS_ENV) or default_allowed_hosts(host)
    os.environ[ALLOWED_HOSTS_ENV] = ",".join(hosts)
    os.environ[DATABASE_ENV] = db
    os.environ[MAX_CONNECTIONS_ENV] = str(budget)
    # sessions and CSRF tokens must verify on whichever worker answers
    os.environ.setdefault(SECRET_ENV, secrets.token_hex(32))
    from autonumber.web.server import NoDelayHTTP, app_from_env

    app = app_from_env() if workers == 1 else None  # opens the database now: a bad URL fails here
    if app is None:
        _check_database(db)
    metrics_dir = _metrics_dir() if workers > 1 else None  # after the checks: a refusal leaves none
    _warn_if_exposed(host)
    token = os.environ.get(ENV)
    shown = f"[{host}]" if ":" in host else host
    typer.echo(
        f"autonumber console on http://{shown}:{port}/  (API docs: /docs; {workers} worker(s) × "
        f"{budget} database connections; admin "
        f"{'enabled' if token else f'disabled, set {ENV} to enable'}; writes "
        f"{'need ' + API_ENV if os.environ.get(API_ENV) else 'open to anyone who can reach it'}; "
        f"Host {', '.join(hosts)}; proxies trusted: {proxies['forwarded_allow_ips'] or 'none'})"
    )
    try:
        if app is not None:
            uvicorn.run(
                app,
                host=host,
                port=port,
                http=NoDelayHTTP,
                log_level="warning",
                timeout_graceful_shutdown=GRACEFUL_SECONDS,
                **proxies,
            )
        else:
            uvicorn.run(
                "autonumber.web.server:app_from_env",
                factory=True,
                host=host,
                port=port,
                workers=workers,
                http=NoDelayHTTP,
                log_level="warning",
                timeout_graceful_shutdown=GRACEFUL_SECONDS,
                timeout_worker_healthcheck=WORKER_HEALTHCHECK_SECONDS,
                **proxies,
            )
    finally:
        if metrics_dir is not None and os.environ.get(MULTIPROC_ENV) == str(metrics_dir):
            shutil.rmtree(metrics_dir, ignore_errors=True)


def _env_list(name: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, "").split(",") if item.strip()]


def _metrics_dir() -> Path | None:
    """PROMETHEUS_MULTIPROC_DIR for the workers: /metrics then sums every worker's numbers.

    An operator's own directory is emptied (files of an earlier run would be counted); without one
    a private temporary directory is made and removed on exit.
    """
    given = os.environ.get(MULTIPROC_ENV)
    if given:
        path = Path(given)
        path.mkdir(parents=True, exist_ok=True)
        for stale in path.glob("*.db"):
            stale.unlink()
        return None
    path = Path(tempfile.mkdtemp(prefix="autonumber-metrics-"))
    os.environ[MULTIPROC_ENV] = str(path)
    return path


def _check_database(db: str) -> None:
    """Open the database once in the supervisor so a bad URL is one line, not N worker tracebacks."""
    from autonumber.commands.session import platform

    with platform(db, max_connections=3):
        pass


def _warn_if_exposed(host: str) -> None:
    """Say loudly when writes are open to a network beyond this machine."""
    if os.environ.get(API_ENV) or _loopback(host):
        return
    typer.secho(
        f"WARNING: serving on {host} without {API_ENV}: anyone who can reach this port can create "
        f"and edit records. Set {API_ENV}=<a secret> (and put a TLS reverse proxy in front).",
        err=True,
        fg=typer.colors.RED,
        bold=True,
    )


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
