"""Run the app under Uvicorn in a background thread (tests, demos, embedding); `serve` runs it in front."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from fastapi import FastAPI


@contextmanager
def serve_in_thread(app: FastAPI, host: str = "127.0.0.1", timeout: float = 15.0) -> Iterator[str]:
    """Serve `app` on a free port of `host`; yield its base URL; stop the server on exit."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
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
