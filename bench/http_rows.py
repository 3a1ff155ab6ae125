"""HTTP rows of the job benchmark: the product's server against a minimal FastAPI app, same workers.

`autonumber serve --workers N` and the peer app (bench/http_apps.py, served by bench/http_serve.py
with the same Uvicorn configuration) each run with N workers; `wrk` (C, event-driven) drives POSTs
at 10 and 100 connections. `wrk` against a bare asyncio server (bench/trivial_server.py) at 100
connections shows the ceiling of the load generator on this machine: it must reach ≥ 3× the best
measured POST rate.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from autonumber.catalog.cache import Catalog

from .database import engine_for, stored_numbers
from .harness import Log
from .http_apps import ENV
from .job import JOB_OBJECT, create_native_table, native_table
from .startup import executable

CONNECTIONS = (10, 100)
WORKERS = 2
GENERATOR_MARGIN = 3.0
APPS = {
    "autonumber serve": ("autonumber", f"/api/records/{JOB_OBJECT}"),
    "peer:fastapi-native-insert": ("native", "/cases"),
}
ROOT = Path(__file__).resolve().parents[1]
"""The repository root, which holds the `bench` package the server workers import."""


def wrk_missing() -> str | None:
    """None when `wrk` is on PATH, else how to get it."""
    return None if shutil.which("wrk") else "wrk is not installed (make wrk, or apt-get install wrk)"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_up(port: int, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"the server did not listen on port {port} within {timeout:g} s")


def _command(app: str, url: str, port: int, workers: int) -> list[str]:
    """The command that serves `app` ("autonumber", "native" or "trivial") on `port`."""
    if app == "autonumber":
        script = executable()
        if script is None:
            raise RuntimeError("the `autonumber` console script is not installed (pip install -e .)")
        return [script, "serve", "--db", url, "--port", str(port), "--workers", str(workers)]
    module = "bench.trivial_server" if app == "trivial" else "bench.http_serve"
    extra = [] if app == "trivial" else [app, "--workers", str(workers)]
    return [sys.executable, "-m", module, *extra, "--port", str(port)]


class Server:
    """One server process tree (N Uvicorn workers, or the trivial server) on a free port."""

    def __init__(self, app: str, url: str, workers: int) -> None:
        self.port = _free_port()
        path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        env = {**os.environ, ENV: url, "PYTHONPATH": path}  # the workers import the `bench` package
        self.proc = subprocess.Popen(
            _command(app, url, self.port, workers),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            _wait_up(self.port, self.proc)
        except Exception:
            self.stop()
            raise

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


_RATE = re.compile(r"Requests/sec:\s+([\d.]+)")
_P = re.compile(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$", re.MULTILINE)
_NON2XX = re.compile(r"Non-2xx or 3xx responses:\s+(\d+)")
_ERRORS = re.compile(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)")
_TOTAL = re.compile(r"(\d+) requests in")
_UNIT = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def parse_wrk(text: str) -> dict[str, Any]:
    """Requests/s, p50/p99 ms and failures from `wrk --latency` output."""
    rate = _RATE.search(text)
    total = _TOTAL.search(text)
    pct = {q: float(v) * _UNIT[u] for q, v, u in _P.findall(text)}
    non2xx = _NON2XX.search(text)
    sock = _ERRORS.search(text)
    errors = (int(non2xx.group(1)) if non2xx else 0) + (sum(map(int, sock.groups())) if sock else 0)
    return {
        "throughput": float(rate.group(1)) if rate else 0.0,
        "requests": int(total.group(1)) if total else 0,
        "p50_ms": pct.get("50"),
        "p99_ms": pct.get("99"),
        "errors": errors,
    }


def drive(url: str, connections: int, seconds: float, *, post: bool) -> dict[str, Any]:
    """Run wrk against `url`; POST a small JSON body, or GET."""
    script = None
    args = [
        "wrk",
        f"-t{min(2, connections)}",
        f"-c{connections}",
        f"-d{max(1, round(seconds))}s",
        "--latency",
        "--timeout",
        "10s",
    ]
    if post:
        fd, script = tempfile.mkstemp(suffix=".lua")
        with os.fdopen(fd, "w") as fh:
            fh.write(
                'wrk.method = "POST"\nwrk.body = \'{"Subject": "bench"}\'\n'
                'wrk.headers["Content-Type"] = "application/json"\n'
            )
        args += ["-s", script]
    try:
        done = subprocess.run([*args, url], capture_output=True, text=True, timeout=seconds + 60)
    finally:
        if script:
            Path(script).unlink(missing_ok=True)
    return {**parse_wrk(done.stdout), "connections": connections}


def _stored(url: str, name: str) -> dict[str, int]:
    with engine_for(url) as db:
        if name == "autonumber serve":
            column = Catalog(db).current().table(JOB_OBJECT).c.CaseNumber
        else:
            column = native_table().c.number
        return stored_numbers(db, column)


def run_http(
    url: str,
    backend: str,
    *,
    workers: int = WORKERS,
    connections: tuple[int, ...] = CONNECTIONS,
    seconds: float = 5.0,
    log: Log = print,
) -> dict[str, Any]:
    """Both servers at every connection count, plus the load generator's ceiling."""
    reason = wrk_missing()
    if reason is not None:
        return {"skipped": reason}
    create_native_table(url)
    out: dict[str, Any] = {"workers": workers, "generator": "wrk", "cells": {}, "stored": {}}
    for name, (app, path) in APPS.items():
        server = Server(app, url, workers)
        try:
            base = f"http://127.0.0.1:{server.port}"
            drive(base + path, connections[0], 1, post=True)  # warm-up: pools, caches, JIT of routes
            rows = []
            for n in connections:
                row = drive(base + path, n, seconds, post=True)
                rows.append(row)
                log(
                    f"  {backend:<10} HTTP {name:<28} {n:>3} conn  {row['throughput']:>8.0f}/s  "
                    f"p99 {row['p99_ms'] or 0:>8.1f} ms  errors={row['errors']}"
                )
            out["cells"][name] = rows
        finally:
            server.stop()
        out["stored"][name] = _stored(url, name)
    trivial = Server("trivial", url, 1)
    try:
        ping = f"http://127.0.0.1:{trivial.port}/ping"
        out["generator_ceiling"] = drive(ping, max(connections), seconds, post=False)
    finally:
        trivial.stop()
    log(
        f"  {backend:<10} HTTP trivial GET {max(connections)} conn "
        f"{out['generator_ceiling']['throughput']:>8.0f}/s (load generator ceiling)"
    )
    best = max((r["throughput"] for rows in out["cells"].values() for r in rows), default=0.0)
    ceiling = out.get("generator_ceiling", {}).get("throughput", 0.0)
    out["generator_margin"] = round(ceiling / best, 2) if best else None
    out["generator_ok"] = bool(best) and ceiling >= GENERATOR_MARGIN * best
    return out
