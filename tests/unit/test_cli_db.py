"""`autonumber db init|status` and `autonumber run` through the real entry point `main()`."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from autonumber.cli import main

SECRET = "s3cret"


def _run(argv: list[str]) -> int | str | None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    return info.value.code


@pytest.fixture(autouse=True)
def _no_env_url(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("AUTONUMBER_DATABASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)  # a command that fell back to the default URL stays in tmp


@pytest.mark.parametrize(
    "url",
    [
        pytest.param(f"mysql+pymysql://root:{SECRET}@127.0.0.1:1/x", id="mysql-unreachable"),
        pytest.param(f"postgresql+psycopg://postgres:{SECRET}@127.0.0.1:1/x", id="pg-unreachable"),
        pytest.param(f"mysql+pymysql://root:{SECRET}@127.0.0.1:notaport/x", id="malformed-port"),
        pytest.param(f"oracle://scott:{SECRET}@127.0.0.1/x", id="unsupported"),
        pytest.param("sqlite:////nonexistent-dir/sub/x.db", id="sqlite-bad-path"),
    ],
)
@pytest.mark.parametrize("command", ["status", "init"])
def test_bad_or_unreachable_url_is_one_masked_line(
    command: str, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A wrong URL is a usage error (exit 2); a server that is down is DatabaseUnavailable (exit 1)."""
    assert _run(["db", command, "--db", url]) == (1 if ":1/" in url else 2)
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err + out
    assert SECRET not in err + out
    if SECRET in url:
        assert "***" in lines[0]
    assert lines[0].startswith("error: ")


def test_unreachable_url_from_environment_is_masked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AUTONUMBER_DATABASE_URL", f"mysql+pymysql://root:{SECRET}@127.0.0.1:1/x")
    assert _run(["db", "status"]) == 1
    _, err = capsys.readouterr()
    assert len(err.strip().splitlines()) == 1
    assert "***" in err and SECRET not in err


def test_init_then_status_on_sqlite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    assert _run(["db", "status", "--db", url]) == 0
    out, _ = capsys.readouterr()
    assert "missing: " in out and "all present" not in out

    assert _run(["db", "init", "--db", url]) == 0
    out, err = capsys.readouterr()
    assert "created table _System_Field" in out
    assert err == ""

    assert _run(["db", "init", "--db", url]) == 0
    out, _ = capsys.readouterr()
    assert "(0 change(s))" in out

    assert _run(["db", "status", "--db", url]) == 0
    out, err = capsys.readouterr()
    assert "all present" in out
    assert "sqlite" in out
    assert err == ""


@pytest.mark.slow
def test_run_bootstraps_and_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'run.db'}"
    assert _run(["run", "--no-serve", "--db", url]) == 0
    out, err = capsys.readouterr()
    assert "database ready" in out and "V1-V7 hold" in out
    assert "made 0 change(s)" not in out
    assert "Traceback" not in err
    assert (tmp_path / "run.db").exists()
    # Idempotent: a second run changes nothing.
    assert _run(["run", "--no-serve", "--db", url]) == 0
    out, _ = capsys.readouterr()
    assert "made 0 change(s)" in out


@pytest.mark.slow
def test_run_uses_the_environment_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AUTONUMBER_DATABASE_URL", f"sqlite:///{tmp_path / 'env.db'}")
    assert _run(["run", "--no-serve"]) == 0
    assert "database ready" in capsys.readouterr().out
    assert (tmp_path / "env.db").exists()
    assert not (tmp_path / "autonumber.db").exists()


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["db", "no-such-command"], id="unknown-command"),
        pytest.param(["db", "status", "--db"], id="option-without-value"),
    ],
)
def test_usage_errors_exit_2_without_traceback(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(argv) == 2
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert "Usage" in out + err or "Error" in out + err


def test_no_arguments_prints_help_without_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run([]) in (0, 2)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert "Usage" in out + err


def _page_size(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("PRAGMA page_size").fetchone()[0])


def test_init_page_size_makes_a_new_file_with_those_pages_and_it_takes_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "big.db"
    url = f"sqlite:///{path}"
    assert _run(["db", "init", "--page-size", "16384", "--db", url]) in (0, None)
    assert "16384-byte pages" in capsys.readouterr().out
    assert _page_size(path) == 16384
    assert _run(["setup", "apply", "--db", url]) in (0, None)
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(f'{{"Subject": "s{i}"}}\n' for i in range(300)))
    capsys.readouterr()
    assert _run(["records", "insert-many", "Case", "--file", str(rows), "--quiet", "--db", url]) in (0, None)
    assert "inserted 300 Case records" in capsys.readouterr().out
    with sqlite3.connect(path) as conn:
        numbers = [r[0] for r in conn.execute('SELECT "CaseNumber" FROM "Case"')]
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert len(numbers) == len(set(numbers)) == 300
    assert _page_size(path) == 16384
    # again with the same size: nothing to do, the file is kept
    assert _run(["db", "init", "--page-size", "16384", "--db", url]) in (0, None)
    capsys.readouterr()
    assert _run(["db", "status", "--db", url]) in (0, None)
    assert "16384 bytes" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("size", "url", "says"),
    [
        pytest.param("1000", "sqlite:///x.db", "power of two from 512 to 65536", id="not-a-power-of-two"),
        pytest.param("131072", "sqlite:///x.db", "power of two from 512 to 65536", id="too-large"),
        pytest.param("16384", "sqlite://", "SQLite file", id="in-memory"),
        pytest.param(
            "16384", "sqlite:///file:x.db?mode=memory&cache=shared&uri=true", "plain path", id="uri-in-memory"
        ),
        pytest.param(
            "16384",
            f"postgresql+psycopg://postgres:{SECRET}@127.0.0.1:1/x",
            "SQLite file",
            id="server",
        ),
    ],
)
def test_init_page_size_refuses_what_sqlite_cannot_make(
    size: str, url: str, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(["db", "init", "--page-size", size, "--db", url]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and says in err and SECRET not in err
    assert not (tmp_path / "x.db").exists()


def test_init_page_size_leaves_an_existing_file_of_another_size_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "old.db"
    assert _run(["db", "init", "--db", f"sqlite:///{path}"]) in (0, None)
    before = path.read_bytes()
    assert _page_size(path) == 4096
    capsys.readouterr()
    assert _run(["db", "init", "--page-size", "16384", "--db", f"sqlite:///{path}"]) == 2
    err = capsys.readouterr().err
    assert "exists with 4096-byte pages" in err and "applies only to a new file" in err
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        pytest.param("junk.db", b"not a database at all" * 10, "is not a SQLite database", id="junk"),
        pytest.param("missing/x.db", None, "cannot create", id="no-such-directory"),
    ],
)
def test_init_page_size_refuses_a_file_it_cannot_read_or_make(
    name: str, content: bytes | None, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    before = path.read_bytes() if path.exists() else None
    assert _run(["db", "init", "--page-size", "16384", "--db", f"sqlite:///{path}"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and says in err
    assert (path.read_bytes() if path.exists() else None) == before
