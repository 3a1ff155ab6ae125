"""`serve --workers N` gives Uvicorn's supervisor a worker health-check timeout a loaded machine can
meet. Uvicorn's 5 s default made it SIGKILL workers that were still importing the app or busy, in a
loop (measured on this two-core machine at load 8-12: three workers, a replacement every 5-10 s;
with 60 s the same three pids for the whole run), dropping their in-flight requests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import uvicorn

from autonumber.cli import serve_cmd
from autonumber.defaults import ALLOWED_HOSTS_ENV, DATABASE_ENV, MAX_CONNECTIONS_ENV, SECRET_ENV
from support import make_platform

WRITTEN = (ALLOWED_HOSTS_ENV, DATABASE_ENV, MAX_CONNECTIONS_ENV, SECRET_ENV, serve_cmd.MULTIPROC_ENV)
"""What start_server writes into the environment (for its workers): restored after the test."""


@pytest.mark.parametrize("workers", [1, 3])
def test_the_supervisor_waits_for_slow_workers(
    workers: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    make_platform(url).close()
    for name in WRITTEN:
        monkeypatch.setenv(name, "")  # monkeypatch now restores the original after the test
        monkeypatch.delenv(name)
    seen: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: seen.update(kw))
    serve_cmd.start_server(url, "127.0.0.1", 0, workers=workers)
    if workers > 1:
        assert seen["workers"] == workers
        assert seen["timeout_worker_healthcheck"] == serve_cmd.WORKER_HEALTHCHECK_SECONDS >= 30
    else:
        assert "workers" not in seen  # one process: no supervisor to time out
