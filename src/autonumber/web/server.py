"""Run the app under Uvicorn in a background thread (tests, demos, embedding); `serve` runs it in front."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from fastapi import FastAPI
from uvicorn.protocols.http.h11_impl import H11Protocol


class NoDelay(asyncio.Protocol):
    """Turn Nagle's algorithm off on every accepted TCP connection.

    asyncio does so only when the listening socket says IPPROTO_TCP, and the socket Uvicorn binds
    for `--workers N` says 0: each keep-alive response (headers and body sent apart) then waited
    ~40 ms for the client's delayed ACK."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)


class NoDelayHTTP(NoDelay, H11Protocol):
    """Uvicorn's HTTP/1.1 protocol with TCP_NODELAY, for every `serve` path."""


def proxy_options(forwarded_allow_ips: str | None) -> dict[str, Any]:
    """Uvicorn's proxy settings: believe X-Forwarded-For/-Proto only from the listed proxies.

    Uvicorn's own default trusts 127.0.0.1, so any local client could pick its address by header
    (and reset the login rate limit each time); by default no proxy is trusted."""
    trusted = ",".join(p.strip() for p in (forwarded_allow_ips or "").split(",") if p.strip())
    return {"proxy_headers": bool(trusted), "forwarded_allow_ips": trusted or None}


def default_allowed_hosts(bound: str) -> list[str]:
    """The Host values served when none are given: the bound address and this machine's names."""
    hosts = ["localhost", "127.0.0.1", "::1"]
    bound = bound.strip("[]").lower()
    if bound not in hosts and bound not in ("0.0.0.0", "::"):
        hosts.insert(0, bound)
    return hosts


@contextmanager
def serve_in_thread(
    app: FastAPI, host: str = "127.0.0.1", timeout: float = 15.0, *, forwarded_allow_ips: str | None = None
) -> Iterator[str]:
    """Serve `app` on a free port of `host`; yield its base URL; stop the server on exit."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, http=NoDelayHTTP, log_level="warning", lifespan="off", **proxy_options(forwarded_allow_ips)
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"uvicorn did not start on {host}:{port}")
        time.sleep(0.02)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout)
        sock.close()


def app_from_env() -> FastAPI:
    """The app a `serve` worker runs, configured from the environment `serve` prepared."""
    from autonumber.defaults import ALLOWED_HOSTS_ENV, DATABASE_ENV, DEFAULT_URL
    from autonumber.runtime import connect

    from . import create_app
    from .auth import API_ENV, ENV

    url = os.environ.get(DATABASE_ENV, DEFAULT_URL)
    hosts = os.environ.get(ALLOWED_HOSTS_ENV)
    return create_app(
        connect(url),
        admin_token=os.environ.get(ENV) or None,
        api_token=os.environ.get(API_ENV) or None,
        allowed_hosts=None if hosts is None else [h.strip() for h in hosts.split(",") if h.strip()],
    )
