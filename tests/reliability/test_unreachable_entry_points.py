"""Every public entry point meets a database that refuses, resets or hangs: the library's calls,
every CLI command (run as its own help's example) and every HTTP route. Each answers within a
bound and classified — an AutonumberError (DatabaseUnavailable when nothing was written), a
one-line `error:` with a non-zero exit, an HTTP status below 500 or 503 — never a driver's raw
error, a traceback or a caller held forever.

The database sits behind a proxy (tests/reliability/fault_proxy.py): `refuse` closes it (nothing
listens), `reset` cuts every connection and every new one, `stall` cuts them and accepts new ones
that then hear nothing. Connects are bounded by `connect_timeout` (1 s here; 10 s by default).
"""

from __future__ import annotations

import os
import re
import shlex
import time
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from fault_proxy import FaultProxy, fault_proxy

import autonumber
from autonumber.errors import AutonumberError
from autonumber.runtime import Platform
from autonumber.web import create_app
from support import bootstrap_url, cli_commands, run_cli

FAULTS = ("refuse", "reset", "stall")
BOUND_S = 60.0
"""Seconds one call may take against a faulty database (every connect is bounded by 1 s)."""
EXAMPLE = re.compile(r"Example: (autonumber .+)")


@pytest.fixture
def proxied(server_db_url: str) -> Iterator[tuple[str, FaultProxy]]:
    """The core pack on the server, reached through a fault proxy with a 1 s connect timeout."""
    bootstrap_url(server_db_url)
    with fault_proxy(server_db_url) as proxy:
        url = sa.make_url(proxy.url(server_db_url)).update_query_dict({"connect_timeout": "1"})
        yield url.render_as_string(hide_password=False), proxy


def break_(proxy: FaultProxy, fault: str) -> None:
    """Make the database behind `proxy` refuse, reset or hang."""
    {"refuse": proxy.close, "reset": proxy.down, "stall": proxy.stall}[fault]()


def bounded(call: Callable[[], Any]) -> Any:
    """`call()`'s result or the exception it raised, failing the test past BOUND_S."""
    started = time.monotonic()
    try:
        outcome = call()
    except Exception as exc:  # the outcome under test
        outcome = exc
    took = time.monotonic() - started
    assert took < BOUND_S, f"{call} took {took:.0f} s against a faulty database"
    return outcome


def classified(outcome: Any, what: str) -> None:
    """A result, or one of the product's errors: never a raw SQLAlchemy or driver error."""
    if isinstance(outcome, Exception):
        assert isinstance(outcome, AutonumberError), f"{what}: {type(outcome).__name__}: {outcome}"


LIBRARY: dict[str, Callable[[Platform], Any]] = {
    "records.insert": lambda p: p.records.insert("Case", {"Subject": "s"}),
    "records.insert_many": lambda p: p.records.insert_many("Case", [{"Subject": "a"}, {"Subject": "b"}]),
    "records.get": lambda p: p.records.get("Case", "0" * 32),
    "records.count": lambda p: p.records.count("Case"),
    "engine.assign_one": lambda p: p.engine.assign_one("Case.CaseNumber", {}),
    "catalog.refresh": lambda p: p.catalog.refresh(),
}


@pytest.mark.parametrize("fault", FAULTS)
def test_the_library_says_the_database_is_unavailable(proxied: tuple[str, FaultProxy], fault: str) -> None:
    url, proxy = proxied
    p = autonumber.connect(url)
    try:
        p.records.insert("Case", {"Subject": "before"})  # pools and the group writer hold connections
        break_(proxy, fault)
        for name, call in LIBRARY.items():
            classified(bounded(lambda call=call: call(p)), name)
        refused = bounded(lambda: autonumber.connect(url))
        assert isinstance(refused, autonumber.errors.DatabaseUnavailable), refused
    finally:
        p.close()


def cli_examples() -> list[tuple[list[str], bool]]:
    """Every command's own example, as argv without `autonumber` and without its `--db`, and
    whether the command takes `--db` (the `format` commands need no database)."""
    found: list[tuple[list[str], bool]] = []
    for _, cmd in cli_commands():
        if hasattr(cmd, "commands"):
            continue  # a group
        match = EXAMPLE.search(cmd.help or "")
        assert match is not None, f"{cmd.name}: no example in its help"
        argv = shlex.split(match.group(1))[1:]
        if "--db" in argv:
            at = argv.index("--db")
            del argv[at : at + 2]
        found.append((argv, any("--db" in p.opts for p in cmd.params)))
    return found


EXAMPLES = cli_examples()


@pytest.mark.parametrize("fault", FAULTS)
def test_every_cli_command_fails_in_one_line_or_works(
    proxied: tuple[str, FaultProxy], fault: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url, proxy = proxied
    break_(proxy, fault)
    for argv, takes_db in EXAMPLES:
        shown = " ".join(argv)
        full = [*argv, "--db", url] if takes_db else argv
        with mock.patch.dict(os.environ):  # `serve` exports its settings for its workers
            code, out = bounded(lambda full=full: run_cli(full, capsys))
        if code == 0:
            continue  # a command that needs no database (format check, spec generate)
        lines = [line for line in out.splitlines() if line.strip()]
        errors = [line for line in lines if line.startswith("error: ")]
        assert len(errors) == 1, f"{shown} (exit {code}): {out[-500:]}"
        assert "Traceback" not in out and "internal error" not in out, f"{shown}: {out[-500:]}"


@pytest.mark.parametrize("fault", FAULTS)
def test_every_route_answers_below_500_or_503(proxied: tuple[str, FaultProxy], fault: str) -> None:
    url, proxy = proxied
    p = autonumber.connect(url)
    try:
        with TestClient(create_app(p, admin_token="t"), raise_server_exceptions=False) as client:
            assert client.get("/healthz").status_code == 200  # up, connections in the pools
            paths = client.get("/openapi.json").json()["paths"]
            break_(proxy, fault)
            for path, item in sorted(paths.items()):
                concrete = re.sub(r"\{[^}]+\}", "x", path)
                for method in item:
                    response = bounded(
                        lambda m=method, c=concrete: client.request(
                            m.upper(), c, json={}, headers={"Authorization": "Bearer t"}
                        )
                    )
                    status = response.status_code
                    assert status < 500 or status == 503, (
                        f"{method.upper()} {path} → {status}: {response.text[:300]}"
                    )
    finally:
        p.close()
