"""Every CLI input that used to print a traceback now gives one line on stderr and a non-zero exit,
with nothing written (each a reproduction from the issue), plus a fuzz test over the CLI's file
inputs: random bytes, invalid UTF-8, lone surrogates, NUL — never a traceback; any failure is one
line and a non-zero exit."""

from __future__ import annotations

import contextlib
import io
import random
import tempfile
from pathlib import Path

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autonumber.cli import main
from autonumber.db.tables import counter_table
from support import bootstrap_url, make_platform

SPEC_WITH_HUGE_START = """---
apiVersion: data-spec/v1
id: 2026-06-01-member-number
scope: staging-then-production
status: pending
---

## Operations

```yaml
- op: add_autonumber_field
  object: Account
  field: Member_No__c
  format: 'MB-{000000}'
  start: 99999999999999999999999
```
"""


def run(argv: list[str]) -> tuple[int, str]:
    """Run the CLI in-process; its exit code and stderr."""
    err = io.StringIO()
    with (
        contextlib.redirect_stderr(err),
        contextlib.redirect_stdout(io.StringIO()),
        pytest.raises(SystemExit) as info,
    ):
        main(argv)
    code = info.value.code
    return (code if isinstance(code, int) else 1), err.getvalue()


def one_line_failure(code: int, err: str) -> str:
    assert code != 0, err
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def state(url: str) -> tuple[int, dict[tuple[str, str], int]]:
    p = make_platform(url)
    try:
        with p.db.connect() as conn:
            rows = conn.execute(
                sa.select(counter_table.c.field_id, counter_table.c.scope_key, counter_table.c.next_value)
            )
            counters = {(r.field_id, r.scope_key): int(r.next_value) for r in rows}
        return p.records.count("Case"), counters
    finally:
        p.close()


@pytest.fixture
def prepared(db_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    monkeypatch.delenv("AUTONUMBER_DATABASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    make_platform(db_url).close()
    return db_url


@pytest.mark.parametrize("data", ['{"Subject": "a\\u0000b"}', '{"Subject": "\\ud800"}'])
def test_records_insert_with_nul_or_surrogate(prepared: str, data: str) -> None:
    before = state(prepared)
    line = one_line_failure(*run(["records", "insert", "Case", "--data", data, "--db", prepared]))
    assert "Case.Subject" in line
    assert state(prepared) == before


@pytest.mark.parametrize(
    "content",
    [
        b'{"Subject": "ok"}\n\xff\xfe{"Subject": "x"}\n',
        b'{"Subject": "ok"}\n{"Subject": "\\ud800"}\n',
        b'{"Subject": "ok"}\n{"Subject": "a\\u0000"}\n',
    ],
)
def test_records_insert_many_with_a_bad_line(prepared: str, tmp_path: Path, content: bytes) -> None:
    before = state(prepared)
    path = tmp_path / "cases.jsonl"
    path.write_bytes(content)
    line = one_line_failure(*run(["records", "insert-many", "Case", "--file", str(path), "--db", prepared]))
    assert f"{path}:2" in line
    assert state(prepared) == before


def test_spec_apply_with_an_out_of_range_start(prepared: str, tmp_path: Path) -> None:
    path = tmp_path / "spec.md"
    path.write_text(SPEC_WITH_HUGE_START, encoding="utf-8")
    line = one_line_failure(*run(["spec", "apply", str(path), "--env", "staging", "--db", prepared]))
    assert "start 99999999999999999999999 does not fit the counter" in line
    p = make_platform(prepared)
    try:
        assert "Member_No__c" not in p.catalog.current().autonumber_fields("Account")
    finally:
        p.close()


@pytest.mark.parametrize(
    "content",
    [
        bytes(random.Random(16).randrange(256) for _ in range(4096)),
        b"---\napiVersion: data-spec/v1\nid: x\xff\n---\n",
        "---\nid: \ud800\n---\n".encode("utf-8", "surrogatepass"),
    ],
)
def test_spec_files_of_random_bytes(prepared: str, tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "spec.md"
    path.write_bytes(content)
    for argv in (
        ["spec", "apply", str(path), "--env", "staging", "--db", prepared],
        ["spec", "check", "--spec", str(path)],
        ["setup", "apply", "--spec", str(path), "--db", prepared],
    ):
        line = one_line_failure(*run(argv))
        assert "not UTF-8" in line, line


FILE_BYTES = st.one_of(
    st.binary(max_size=600),
    st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.lists(
        st.sampled_from(
            [
                b"---",
                b"apiVersion: data-spec/v1",
                b"id: x",
                b"status: pending",
                b"## Operations",
                b"```yaml",
                b"- op: add_autonumber_field",
                b"```",
                b"  start: 99999999999999999999999",
                b"\x00",
                b"\xff",
                b"{}",
                b'{"Subject": "\\ud800"}',
                b"[1]",
                b'{"Nope": 1}',
            ]
        ),
        max_size=12,
    ).map(b"\n".join),
)


@pytest.mark.slow
@settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(content=FILE_BYTES)
def test_fuzz_cli_file_inputs(tmp_path: Path, content: bytes) -> None:
    example = Path(tempfile.mkdtemp(dir=tmp_path))  # each example on a fresh copy of the platform
    sqlite_url = f"sqlite:///{example / 'autonumber.db'}"
    bootstrap_url(sqlite_url)
    path = example / "input.txt"
    path.write_bytes(content)
    for argv in (
        ["spec", "check", "--spec", str(path)],
        ["spec", "apply", str(path), "--env", "staging", "--db", sqlite_url],
        ["records", "insert-many", "Case", "--file", str(path), "--db", sqlite_url],
    ):
        code, err = run(argv)
        assert "Traceback" not in err, (argv, err)
        if code != 0:
            one_line_failure(code, err)
