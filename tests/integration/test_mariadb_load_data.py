"""MariaDB's bulk path (src/autonumber/db/mysql_load.py), on the real server: LOAD DATA LOCAL from
memory stores every value as the INSERT would, fails the whole import on a row the server skipped
or changed (LOCAL turns those errors into warnings), sends nothing but its own batch, and gives
way to the multi-row INSERT when the server's local_infile is off or refuses LOCAL."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from autonumber.db import create_engine, dialect_for, mysql_load
from autonumber.db.mysql import MySQLDialect, galera_on, local_infile_on
from autonumber.db.replies import forget_server_flag
from autonumber.runtime import Platform
from support import import_cases, send_batch

MARIADB = [pytest.param("mysql", id="mysql", marks=pytest.mark.mysql)]
pytestmark = pytest.mark.parametrize("db_url", MARIADB, indirect=True)

AWKWARD = [
    "tab\there",
    "new\nline",
    "back\\slash and \\N and \\t",
    "\\N",
    "nul\x00byte",
    "",
    "quote ' \" and CR\r",
    "four-byte 🦄 and é",
    "trailing backslash\\",
]


def _mysql(engine: sa.Engine) -> MySQLDialect:
    dialect = dialect_for(engine)
    assert isinstance(dialect, MySQLDialect)
    return dialect


def _loads(conn: sa.Connection, statement: str = "load") -> int:
    """LOAD DATA statements (or `statement`'s: show_warnings) this session has run."""
    return int(conn.exec_driver_sql(f"SHOW SESSION STATUS LIKE 'Com_{statement}'").one()[1])


def _rows(n: int, subjects: list[str | None]) -> list[dict[str, Any]]:
    at = datetime(2026, 12, 2, 17, 30, 1, 120)
    return [
        {
            "Id": f"{i:032x}",
            "CreatedDate": at,
            "Subject": subjects[i % len(subjects)],
            "CaseNumber": f"L{i:07d}",
        }
        for i in range(n)
    ]


def _stored(conn: sa.Connection) -> list[tuple[Any, ...]]:
    return [
        tuple(r)
        for r in conn.exec_driver_sql("SELECT Id, CreatedDate, Subject, CaseNumber FROM `Case` ORDER BY Id")
    ]


def test_load_data_stores_every_value_as_sent(platform: Platform, engine: sa.Engine) -> None:
    table = platform.catalog.current().table("Case")
    rows = _rows(40, [*AWKWARD, None])
    rows[3]["CreatedDate"] = datetime(2026, 1, 1)  # no microseconds: PyMySQL's other format
    with engine.begin() as conn:
        assert _mysql(engine).loads_local(conn), "the server has local_infile ON: LOAD DATA expected"
        before, shown = _loads(conn), _loads(conn, "show_warnings")
        _mysql(engine).bulk_insert(conn, table, rows)
        assert _loads(conn) == before + 1, "one LOAD DATA for the batch"
        assert _loads(conn, "show_warnings") == shown, "no SHOW WARNINGS after a reply counting none"
    with engine.connect() as conn:
        stored = _stored(conn)
    assert stored == [(r["Id"], r["CreatedDate"], r["Subject"], r["CaseNumber"]) for r in rows]


def test_a_batch_of_two_field_sets_is_handed_over_once_its_last_load_is_written(
    platform: Platform, engine: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The importing thread may go on once the rows have left: after the first set's LOAD DATA has
    ended and while the last set's runs (its payload written, the server's answer to come)."""
    table = platform.catalog.current().table("Case")
    rows = _rows(6, ["a"])
    for row in rows[3:]:
        del row["Subject"]  # a second set of fields: a second LOAD DATA
    steps: list[str] = []
    load_local = mysql_load.load_local

    def traced(*args: Any) -> None:
        steps.append("load")
        load_local(*args)
        steps.append("loaded")

    monkeypatch.setattr(mysql_load, "load_local", traced)
    send_batch(engine, table, rows, steps)
    assert steps == ["load", "loaded", "load", "handed", "loaded"]
    with engine.connect() as conn:
        assert len(_stored(conn)) == 6


def test_a_duplicate_number_fails_the_whole_import_and_writes_nothing(
    platform: Platform, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = platform.records.insert("Case", {"Subject": "before"})["CaseNumber"]
    digits = re.search(r"(\d+)$", first)
    assert digits is not None, first
    taken = first[: digits.start()] + str(int(digits.group(1)) + 7).zfill(len(digits.group(1)))
    with platform.fresh_db.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO `Case` (Id, Subject, CaseNumber) VALUES (%s, %s, %s)", ("f" * 32, "squatter", taken)
        )
    file = tmp_path / "cases.jsonl"
    file.write_text("".join(f'{{"Subject": "s{i}"}}\n' for i in range(1, 21)), encoding="utf-8")

    code, out = import_cases(file, db_url, capsys, "--batch-size", "5", "--quiet")

    assert code != 0, out
    assert f"{taken} already stored by a row written outside autonumber" in out, out
    assert "run it again" in out, out
    assert sorted(r["Subject"] for r in platform.records.list("Case", limit=100)) == ["before", "squatter"]


def test_an_over_long_value_fails_and_the_transaction_keeps_nothing(
    platform: Platform, engine: sa.Engine
) -> None:
    table = platform.catalog.current().table("Case")
    rows = _rows(6, ["fits"])
    rows[4]["Subject"] = "x" * 300
    with pytest.raises(sa.exc.DataError) as info, engine.begin() as conn:
        _mysql(engine).bulk_insert(conn, table, rows)
    assert info.value.orig.args[0] in (1265, 1406), info.value.orig
    assert "LOAD DATA into Case" in str(info.value.orig)
    with engine.connect() as conn:
        assert _stored(conn) == []


def test_the_server_gets_only_the_batch_never_a_file(
    platform: Platform, engine: sa.Engine, tmp_path: Path
) -> None:
    """The server names the file it wants: here it names a secret, as a hostile server would."""
    secret = tmp_path / "secret.tsv"
    secret.write_text("s3cret\t2026-01-01\tstolen\tX1\n", encoding="utf-8")
    columns = "(Id, CreatedDate, Subject, CaseNumber)"
    steal = f"LOAD DATA LOCAL INFILE '{secret}' INTO TABLE `Case` {mysql_load.CLAUSES} {columns}"
    with engine.connect() as conn:
        raw = conn.connection.dbapi_connection
        setattr(raw, mysql_load.ARMED, (b"the-batch.tsv", b"b1\t2026-01-01\tsent\tX2\n", lambda: None))
        raw._local_infile = True  # type: ignore[union-attr]
        try:
            with pytest.raises(sa.exc.InternalError, match="LOAD DATA LOCAL refused"):
                conn.exec_driver_sql(steal, execution_options={"no_parameters": True})
        finally:
            raw._local_infile = False  # type: ignore[union-attr]
            setattr(raw, mysql_load.ARMED, None)
        conn.rollback()
        assert _stored(conn) == []
    engine.dispose()
    with engine.connect() as conn:  # outside a load: PyMySQL's own refusal, nothing read
        with pytest.raises(Exception, match=r"local_infile option is false|not allowed"):
            conn.exec_driver_sql(steal, execution_options={"no_parameters": True})
        conn.invalidate()
    with engine.connect() as conn:
        assert _stored(conn) == []


@pytest.mark.parametrize(
    ("flag", "answer", "probe"),
    [("local_infile", False, local_infile_on), ("galera", True, galera_on)],
    ids=["local_infile-off", "galera"],
)
def test_where_load_data_may_not_run_the_insert_writes_the_same_rows(
    platform: Platform, engine: sa.Engine, flag: str, answer: bool, probe: Callable[[sa.Connection], bool]
) -> None:
    """What the probe answers for a server with local_infile=OFF, or for a Galera node, set in its
    cache (this server is neither, and its variables are shared with other suites)."""
    table = platform.catalog.current().table("Case")
    rows = _rows(12, AWKWARD)
    forget_server_flag(engine, flag, answer)
    try:
        with engine.begin() as conn:
            assert not _mysql(engine).loads_local(conn)
            before = _loads(conn)
            _mysql(engine).bulk_insert(conn, table, rows)
            assert _loads(conn) == before, f"no LOAD DATA with {flag} = {answer}"
    finally:
        with engine.connect() as conn:
            forget_server_flag(engine, flag, probe(conn))
    with engine.connect() as conn:
        assert _stored(conn) == [(r["Id"], r["CreatedDate"], r["Subject"], r["CaseNumber"]) for r in rows]


def test_a_server_refusing_local_falls_back_to_the_insert(platform: Platform, db_url: str) -> None:
    """The connection did not negotiate LOCAL but claims it: the server refuses the LOAD DATA for
    real (as after `SET GLOBAL local_infile = 0`), before reading a row, and the INSERT runs."""
    from pymysql.constants import CLIENT

    engine = create_engine(db_url)

    @sa.event.listens_for(engine, "do_connect")
    def _no_local(_dialect: Any, _record: Any, _cargs: Any, cparams: dict[str, Any]) -> None:
        cparams["client_flag"] = cparams.get("client_flag", 0) & ~CLIENT.LOCAL_FILES

    table = platform.catalog.current().table("Case")
    rows = _rows(7, AWKWARD)
    try:
        with engine.begin() as conn:
            conn.connection.dbapi_connection.client_flag |= CLIENT.LOCAL_FILES  # type: ignore[union-attr]
            assert _mysql(engine).loads_local(conn)
            _mysql(engine).bulk_insert(conn, table, rows)
            assert not _mysql(engine).loads_local(conn), "the refusal is remembered"
        with engine.connect() as conn:
            assert _stored(conn) == [(r["Id"], r["CreatedDate"], r["Subject"], r["CaseNumber"]) for r in rows]
    finally:
        with engine.connect() as conn:
            forget_server_flag(engine, "local_infile", local_infile_on(conn))
        engine.dispose()


def test_the_probe_reads_the_servers_variable(engine: sa.Engine) -> None:
    with engine.connect() as conn:
        assert local_infile_on(conn) is (
            conn.exec_driver_sql("SHOW GLOBAL VARIABLES LIKE 'local_infile'").one()[1] == "ON"
        )
