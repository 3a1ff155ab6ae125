"""Run the app under Uvicorn in a background thread (tests, demos, embedding); `serve` runs it in front."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from fastapi import FastAPI
from uvicorn.protocols.http.h11_impl import H11Protocol


class NoDelay(asyncio.Protocol):
    """Turn Nagle's algorithm off on every accepted TCP connection.

    asyncio does so only when the listening socket says IPPROTO_TCP, and the socket Uvicorn binds
    for `--workers N` says 0: each keep-alive response (headers and body sent apart) then waited
    ~40 ms for the client's delayed ACK (Uvicorn issue #3149)."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)


class NoDelayHTTP(NoDelay, H11Protocol):
    """Uvicorn's HTTP/1.1 protocol with TCP_NODELAY, for every `serve` path."""


@contextmanager
def serve_in_thread(app: FastAPI, host: str = "127.0.0.1", timeout: float = 15.0) -> Iterator[str]:
    """Serve `app` on a free port of `host`; yield its base URL; stop the server on exit."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, http=NoDelayHTTP, log_level="warning", lifespan="off"))
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
    from autonumber.defaults import DATABASE_ENV, DEFAULT_URL
    from autonumber.runtime import connect

    from . import create_app
    from .auth import API_ENV, ENV

    url = os.environ.get(DATABASE_ENV, DEFAULT_URL)
    return create_app(
        connect(url), admin_token=os.environ.get(ENV) or None, api_token=os.environ.get(API_ENV) or None
    )
