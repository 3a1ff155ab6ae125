"""Helpers shared by the engine and reliability suites (not a test module)."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import autonumber
import testdb
from autonumber.db import create_engine
from autonumber.runtime import Platform
from autonumber.setup.bootstrap import bootstrap

CASE = "Case.CaseNumber"
_TRAILING_DIGITS = re.compile(r"(\d+)$")


def cli_commands() -> list[tuple[list[str], Any]]:
    """Every command under `autonumber` (groups and leaves, the root first) with its path; the
    groups the CLI builds lazily are built here."""
    import typer

    from autonumber.cli.app import app

    found: list[tuple[list[str], Any]] = []

    def walk(cmd: Any, path: list[str]) -> None:
        found.append((path, cmd))
        if hasattr(cmd, "commands"):  # a Click group
            ctx = typer.Context(cmd)
            for name in sorted(cmd.list_commands(ctx)):
                walk(cmd.get_command(ctx, name), [*path, name])

    walk(typer.main.get_command(app), [])
    return found


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Run the `autonumber` CLI in-process; return its exit code and everything it printed."""
    from autonumber.cli import main

    with pytest.raises(SystemExit) as info:
        main(argv)
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out + err


def import_cases(
    path: Path, db_url: str, capsys: pytest.CaptureFixture[str], *options: str
) -> tuple[int, str]:
    """`autonumber records insert-many Case --file PATH OPTIONS… --db URL`, run by `run_cli`."""
    return run_cli(["records", "insert-many", "Case", "--file", str(path), *options, "--db", db_url], capsys)


def bootstrap_url(url: str) -> None:
    """The core pack on `url`, as `bootstrap()` makes it: a copy of this session's bootstrapped
    snapshot when `url` is an empty test database (milliseconds), else `bootstrap()` itself."""
    if testdb.restore_platform(url):
        return
    setup = create_engine(url)
    try:
        bootstrap(setup)
    finally:
        setup.dispose()


def make_platform(url: str, **options: Any) -> Platform:
    """Bootstrap the core pack on `url` (see `bootstrap_url`) and connect to it."""
    bootstrap_url(url)
    return autonumber.connect(url, **options)


def number(value: str) -> int:
    """The counter part of a rendered value (its trailing digits)."""
    match = _TRAILING_DIGITS.search(value)
    assert match is not None, f"no counter digits in {value!r}"
    return int(match.group(1))


CSRF_INPUT = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_token(client: TestClient) -> str:
    """The CSRF token a form of this client's pages carries (fetching a page sets its cookie)."""
    for path in ("/login", "/o/Case/new"):
        found = CSRF_INPUT.search(client.get(path).text)
        if found:
            return found.group(1)
    raise AssertionError("no page with a form to read a CSRF token from")


class FormClient(TestClient):
    """A browser-like TestClient whose form posts carry the page's CSRF token, as a browser's do."""

    def post(self, url: Any, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        data = kwargs.get("data")
        if isinstance(data, dict) and "csrf_token" not in data:
            kwargs["data"] = {**data, "csrf_token": csrf_token(self)}
        return super().post(url, *args, **kwargs)


def invoice_counters(values: Sequence[str]) -> list[int]:
    """The counters of `INV-{YYYY}-{00000}` values of this year, in order (the ORM adapter suites)."""
    year = datetime.now(UTC).year
    out = []
    for v in values:
        m = re.fullmatch(rf"INV-{year}-(\d{{5}})", v)
        assert m is not None, v
        out.append(int(m.group(1)))
    return out


def run_together(work: Callable[[int], None], threads: int) -> list[BaseException]:
    """Run `work(t)` for t in range(threads) on threads released at once; return what they raised."""
    errors: list[BaseException] = []
    barrier = threading.Barrier(threads)

    def run(t: int) -> None:
        try:
            barrier.wait()
            work(t)
        except BaseException as exc:  # returned to the test, which asserts on it
            errors.append(exc)

    pool = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    return errors


def send_batch(engine: Any, table: Any, rows: list[dict[str, Any]], steps: list[str]) -> None:
    """Write `rows` by the backend's bulk send in one transaction of `engine`, appending "handed"
    to `steps` when the send hands them over (the batch sender's importing thread goes on then)."""
    from autonumber.db import dialect_for

    with engine.begin() as conn:
        send = dialect_for(engine).bulk_sender(conn, table, rows)
        assert send is not None
        send(lambda: steps.append("handed"))
