"""A bulk import whose database fails says exactly what is stored, on MariaDB and PostgreSQL.

The fault proxy cuts one COMMIT (before it reaches the server, or after the server answered it) and
then the database is unreachable. A `commit_every` import whose batch 2 is cut must say that lines
1-3 are stored and that lines 4-6 have an unknown outcome settled by one Id; an all-or-nothing
import whose final COMMIT is cut, that no line is known stored and which Id settles all of them.
Following the answer (resume, or look the Id up and send the rest) stores every line exactly once.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from fault_proxy import AFTER, BEFORE, FaultProxy, fault_proxy
from rel_support import make_platform
from test_commit_outcome import subjects

from autonumber.bulk.imports import ImportOptions, run_import
from autonumber.bulk.jsonl import Line, read_lines
from autonumber.cli import main
from autonumber.errors import DatabaseUnavailable, ImportInterrupted, ImportOutcomeUnknown
from autonumber.events import RecordBeforeCreate
from autonumber.runtime import Platform
from autonumber.web import create_app

LINES = 9
BODY = "".join(json.dumps({"Subject": f"r{i}"}) + "\n" for i in range(1, LINES + 1)).encode()


@pytest.fixture
def proxied(server_db_url: str) -> Iterator[tuple[Platform, FaultProxy]]:
    with fault_proxy(server_db_url) as proxy:
        p = make_platform(proxy.url(server_db_url), poll_interval=3600)
        yield p, proxy
        p.close()


def cut_batch(p: Platform, proxy: FaultProxy, where: str, batch: int) -> None:
    """Cut the first COMMIT after batch number `batch` is written, then take the database away."""
    seen = [0]

    def on_create(_: RecordBeforeCreate) -> None:
        seen[0] += 1
        if seen[0] == batch:
            proxy.cut_next(where)

    p.events.subscribe(RecordBeforeCreate, on_create)


def body_lines(body: bytes = BODY) -> Callable[[int], Iterable[Line]]:
    def lines(after: int) -> Iterable[Line]:
        return read_lines(io.BytesIO(body), "body", after=after)

    return lines


def exactly_once(server_db_url: str, p: Platform) -> None:
    stored = subjects(server_db_url, p)
    assert sorted(stored) == sorted(f"r{i}" for i in range(1, LINES + 1)), stored
    assert all(len(ids) == 1 for ids in stored.values()), stored


@pytest.mark.parametrize("where", [AFTER, BEFORE])
def test_a_cut_batch_commit_names_the_lines_stored_and_resume_settles_the_rest(
    proxied: tuple[Platform, FaultProxy], server_db_url: str, tmp_path: Path, where: str
) -> None:
    p, proxy = proxied
    options = ImportOptions(commit_every=3, checkpoint=tmp_path / "import.checkpoint")
    cut_batch(p, proxy, where, batch=2)
    with pytest.raises(ImportOutcomeUnknown) as caught:
        run_import(p.records, "Case", body_lines(), options)
    error = caught.value
    assert proxy.cuts[where] == 1
    assert (error.stored, error.stored_through, error.unknown_from, error.unknown_through) == (3, 3, 4, 6)
    assert len(error.record_ids) == 1 and "--resume" in str(error), error
    assert str(error).startswith("lines 1-3 are stored"), error
    proxy.up()
    (probe,) = error.record_ids
    assert p.records.exists("Case", probe) is (where == AFTER)
    resumed = run_import(p.records, "Case", body_lines(), replace(options, resume=True))
    assert resumed.resumed_after == (6 if where == AFTER else 3)
    exactly_once(server_db_url, p)


@pytest.mark.parametrize("where", [AFTER, BEFORE])
def test_a_cut_final_commit_of_an_all_or_nothing_import_names_the_id_that_settles_it(
    proxied: tuple[Platform, FaultProxy], server_db_url: str, where: str
) -> None:
    p, proxy = proxied
    cut_batch(p, proxy, where, batch=3)  # the last batch: the next COMMIT is the import's
    with pytest.raises(ImportOutcomeUnknown) as caught:
        run_import(p.records, "Case", body_lines(), ImportOptions(batch_size=3))
    error = caught.value
    assert proxy.cuts[where] == 1
    assert (error.stored, error.stored_through, error.unknown_from, error.unknown_through) == (0, 0, 1, 9)
    assert str(error).startswith("no line is stored"), error
    proxy.up()
    (probe,) = error.record_ids
    if not p.records.exists("Case", probe):  # what the answer says to do
        run_import(p.records, "Case", body_lines(), ImportOptions(batch_size=3))
    exactly_once(server_db_url, p)


def test_a_cut_commit_the_database_then_answers_is_settled_by_the_importer(
    proxied: tuple[Platform, FaultProxy], server_db_url: str, tmp_path: Path
) -> None:
    """The database is back before the settling read: the batch is found and the import goes on."""
    p, proxy = proxied
    landed = p.records.landed

    def back_then_landed(*args: object) -> object:
        proxy.up()
        return landed(*args)  # type: ignore[arg-type]

    p.records.landed = back_then_landed  # type: ignore[method-assign]
    cut_batch(p, proxy, AFTER, batch=2)
    options = ImportOptions(commit_every=3, checkpoint=tmp_path / "import.checkpoint")
    summary = run_import(p.records, "Case", body_lines(), options)
    assert proxy.cuts[AFTER] == 1 and (summary.inserted, summary.last_line) == (LINES, LINES)
    exactly_once(server_db_url, p)


def test_a_batch_import_that_loses_the_database_says_which_lines_are_stored(
    proxied: tuple[Platform, FaultProxy], server_db_url: str
) -> None:
    """Lost before batch 3's COMMIT: lines 1-6 stored, nothing after, send from line 7."""
    p, proxy = proxied
    seen = [0]

    def on_create(_: RecordBeforeCreate) -> None:
        seen[0] += 1
        if seen[0] == 3:
            proxy.down()

    p.events.subscribe(RecordBeforeCreate, on_create)
    with pytest.raises(ImportInterrupted, match=r"lines 1-6 are stored .*from line 7") as caught:
        run_import(p.records, "Case", body_lines(), ImportOptions(commit_every=3))
    assert (caught.value.stored, caught.value.stored_through) == (6, 6)
    proxy.up()
    rest = b"\n" * 6 + BODY.split(b"\n", 6)[6]  # lines 7-9, numbered as in the file
    run_import(p.records, "Case", body_lines(rest), ImportOptions(commit_every=3))
    exactly_once(server_db_url, p)


def test_an_all_or_nothing_import_that_loses_the_database_stored_nothing(
    proxied: tuple[Platform, FaultProxy], server_db_url: str
) -> None:
    """Lost while batch 2 is written: DatabaseUnavailable from the driver's error, nothing stored."""
    p, proxy = proxied
    seen = [0]

    def on_create(_: RecordBeforeCreate) -> None:
        seen[0] += 1
        if seen[0] == 2:
            proxy.down()

    p.events.subscribe(RecordBeforeCreate, on_create)
    with pytest.raises(DatabaseUnavailable) as caught:
        run_import(p.records, "Case", body_lines(), ImportOptions(batch_size=3))
    assert type(caught.value) is DatabaseUnavailable, caught.value
    assert isinstance(caught.value.__cause__, (sa.exc.DBAPIError, sa.exc.PendingRollbackError))
    proxy.up()
    assert subjects(server_db_url, p) == {}


def test_over_http_a_cut_batch_commit_is_503_naming_the_lines_and_the_id(
    proxied: tuple[Platform, FaultProxy], server_db_url: str
) -> None:
    p, proxy = proxied
    with TestClient(create_app(p)) as http:
        cut_batch(p, proxy, AFTER, batch=2)
        r = http.post(
            "/api/records/Case/bulk?commit_every=3",
            content=BODY,
            headers={"Content-Type": "application/x-ndjson"},
        )
        assert r.status_code == 503 and r.headers["Retry-After"], r.text
        body = r.json()
        assert body["type"] == "ImportOutcomeUnknown", body
        assert (body["stored"], body["stored_through"], body["unknown_from"], body["unknown_through"]) == (
            3,
            3,
            4,
            6,
        )
        (probe,) = body["record_ids"]
        proxy.up()
        found = http.get(f"/api/records/Case/{probe}")
        assert found.status_code == 200, found.text  # the batch is stored: send from line 7
        rest = b"".join(BODY.splitlines(keepends=True)[body["unknown_through"] :])
        sent = http.post(
            "/api/records/Case/bulk", content=rest, headers={"Content-Type": "application/x-ndjson"}
        )
        assert sent.status_code == 201 and sent.json()["count"] == 3, sent.text
    exactly_once(server_db_url, p)


def test_the_cli_says_in_one_line_what_is_stored_and_that_resume_settles_the_rest(
    proxied: tuple[Platform, FaultProxy],
    server_db_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from autonumber.commands import session

    p, proxy = proxied
    opened = session.platform

    @contextmanager
    def watched(url: str, **options: Any) -> Iterator[Platform]:
        with opened(url, **options) as cli_platform:
            if not resuming:
                cut_batch(cli_platform, proxy, AFTER, batch=2)
            yield cli_platform

    monkeypatch.setattr(session, "platform", watched)
    source = tmp_path / "cases.jsonl"
    source.write_bytes(BODY)
    argv = ["records", "insert-many", "Case", "--file", str(source), "--commit-every", "3", "--quiet"]
    argv += ["--db", proxy.url(server_db_url)]
    resuming = False
    with pytest.raises(SystemExit) as failed:
        main(argv)
    err = capsys.readouterr().err
    assert failed.value.code == 1 and len(err.strip().splitlines()) == 1, err
    said = "error: lines 1-3 are stored (3 Case records by this run); the commit of lines 4-6 had"
    assert err.startswith(said), err
    assert "--resume" in err, err
    proxy.up()
    resuming = True
    with pytest.raises(SystemExit) as resumed:
        main([*argv, "--resume"])
    assert resumed.value.code in (0, None), capsys.readouterr().err
    assert "resumed after line 6" in capsys.readouterr().out
    exactly_once(server_db_url, p)


def _after_batch(p: Platform, batch: int, then: Callable[[], None]) -> None:
    """Run `then` once batch number `batch` is written (its rows may still be on their way: no
    RecordBeforeCreate handler, which would make each batch wait for the one before)."""
    write_batch, seen = p.records._write_batch, [0]

    def counted(*args: Any, **kwargs: Any) -> Any:
        written = write_batch(*args, **kwargs)
        seen[0] += 1
        if seen[0] == batch:
            then()
        return written

    p.records._write_batch = counted  # type: ignore[method-assign]


@pytest.mark.parametrize("where", [AFTER, BEFORE])
def test_a_cut_final_commit_after_rows_sent_on_their_own_thread_names_the_id(
    proxied: tuple[Platform, FaultProxy], server_db_url: str, where: str
) -> None:
    """As above with no handler, so each batch's rows are sent while the next is read (PostgreSQL)."""
    p, proxy = proxied
    _after_batch(p, 3, lambda: proxy.cut_next(where))
    with pytest.raises(ImportOutcomeUnknown) as caught:
        run_import(p.records, "Case", body_lines(), ImportOptions(batch_size=3))
    assert proxy.cuts[where] == 1
    assert (caught.value.stored, caught.value.unknown_from, caught.value.unknown_through) == (0, 1, 9)
    proxy.up()
    (probe,) = caught.value.record_ids
    if not p.records.exists("Case", probe):
        run_import(p.records, "Case", body_lines(), ImportOptions(batch_size=3))
    exactly_once(server_db_url, p)


def test_rows_cut_on_their_way_store_nothing(
    proxied: tuple[Platform, FaultProxy], server_db_url: str
) -> None:
    """The connection is cut while batch 2's rows are sent (on the sender's thread on PostgreSQL,
    while batch 3 is read): DatabaseUnavailable, and nothing is stored."""
    p, proxy = proxied
    proxy.cut_next(BEFORE, marker=b"\tr5\n")
    with pytest.raises(DatabaseUnavailable) as caught:
        run_import(p.records, "Case", body_lines(), ImportOptions(batch_size=3))
    assert proxy.cuts[BEFORE] == 1
    assert isinstance(caught.value.__cause__, (sa.exc.DBAPIError, sa.exc.PendingRollbackError))
    proxy.up()
    assert subjects(server_db_url, p) == {}
