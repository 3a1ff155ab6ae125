"""Rule changes through every path (CLI `field set`, a data-spec, `PUT /api/autonumber/fields/{id}`)
on every backend: a format change keeps the stored values valid and the counter continues, a scope
change moves the counters, and every refusal prints one line and leaves every table identical."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

import autonumber
from autonumber.cli import main
from autonumber.db import dialect_for
from autonumber.db.schema import table_names
from autonumber.db.tables import counter_table, field_format_history, system_record_type
from autonumber.rules import verify
from autonumber.runtime import Platform
from autonumber.web import create_app
from support import FormClient, bootstrap_url

TOKEN = "rule-change-token"
FLASH = "autonumber_flash"
LOG = "_System_DataSpecApplyLog"
FIELD = "Case.CaseNumber"
PATHS = ("cli", "spec", "http")


@pytest.fixture
def platform(db_url: str) -> Iterator[Platform]:
    bootstrap_url(db_url)
    p = autonumber.connect(db_url)
    yield p
    p.close()


Change = Callable[..., tuple[bool, str]]


@pytest.fixture
def change(
    platform: Platform, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> Callable[[str], Change]:
    """`change(path)(format, scope=None, start=None)` → (accepted, what it printed or answered)."""
    client = TestClient(create_app(platform, admin_token=TOKEN), headers={"Authorization": f"Bearer {TOKEN}"})

    def cli(fmt: str, scope: str | None = None, start: int | None = None) -> tuple[bool, str]:
        argv = ["field", "set", "Case", "CaseNumber", "--format", fmt, "--db", db_url]
        argv += ["--scope", scope] if scope else []
        argv += ["--start", str(start)] if start is not None else []
        return run_cli(argv, capsys)

    def spec(fmt: str, scope: str | None = None, start: int | None = None) -> tuple[bool, str]:
        op = {
            "op": "set_rule",
            "object": "Case",
            "field": "CaseNumber",
            "format": fmt,
            "scope": scope,
            "start": start,
        }
        return apply_spec_file(write_spec(tmp_path, [op]), db_url, capsys)

    def http(fmt: str, scope: str | None = None, start: int | None = None) -> tuple[bool, str]:
        body: dict[str, Any] = {"format": fmt}
        body.update({k: v for k, v in (("scope", scope), ("start", start)) if v is not None})
        r = client.put(f"/api/autonumber/fields/{FIELD}", json=body)
        return r.status_code == 200, r.text if r.status_code == 200 else str(r.json()["error"])

    def pick(path: str) -> Change:
        def run(*args: Any, **kw: Any) -> tuple[bool, str]:
            out = {"cli": cli, "spec": spec, "http": http}[path](*args, **kw)
            platform.catalog.refresh()
            return out

        return run

    return pick


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[bool, str]:
    with pytest.raises(SystemExit) as info:
        main(argv)
    out, err = capsys.readouterr()
    return info.value.code in (0, None), out + err


_SPEC_COUNT = [0]


def write_spec(tmp_path: Path, ops: list[dict[str, Any]]) -> Path:
    _SPEC_COUNT[0] += 1
    lines = []
    for op in ops:
        first = True
        for key, value in op.items():
            if value is None:
                continue
            shown = f"'{value}'" if isinstance(value, str) and key != "op" else str(value)
            lines.append(f"{'- ' if first else '  '}{key}: {shown}")
            first = False
    path = tmp_path / f"change-{_SPEC_COUNT[0]}.md"
    path.write_text(
        "---\napiVersion: data-spec/v1\n"
        f"id: 2026-06-01-rule-change-{_SPEC_COUNT[0]}\nscope: staging-then-production\n"
        "status: pending\n---\n\n"
        "## Operations\n\n```yaml\n" + "\n".join(lines) + "\n```\n",
        encoding="utf-8",
    )
    return path


def apply_spec_file(path: Path, db_url: str, capsys: pytest.CaptureFixture[str]) -> tuple[bool, str]:
    return run_cli(["spec", "apply", str(path), "--env", "production", "--db", db_url], capsys)


def dump(engine: Engine) -> dict[str, Any]:
    """Every system and object table (the apply log aside: it records the refused attempt)."""
    out: dict[str, Any] = {}
    with engine.connect() as conn:
        for name in sorted(table_names(conn) - {LOG}):
            table = sa.Table(name, sa.MetaData(), autoload_with=conn)
            rows = conn.execute(sa.select(table)).all()
            out[name] = ([c.name for c in table.columns], sorted(tuple(map(str, r)) for r in rows))
    return out


def case_numbers(platform: Platform) -> list[str]:
    table = platform.catalog.current().table("Case")
    with platform.db.connect() as conn:
        return sorted(conn.execute(sa.select(table.c.CaseNumber)).scalars())


def counters(platform: Platform, field_id: str = FIELD) -> dict[str, int]:
    t = counter_table
    with platform.db.connect() as conn:
        return {
            k: int(n)
            for k, n in conn.execute(sa.select(t.c.scope_key, t.c.next_value).where(t.c.field_id == field_id))
        }


def new_case(platform: Platform) -> str:
    return str(platform.records.insert("Case", {"Subject": "x"})["CaseNumber"])


def today(platform: Platform) -> str:
    with platform.db.connect() as conn:
        return dialect_for(conn).utc_now(conn).strftime("%Y%m%d")


def one_line(text: str) -> bool:
    return text.strip().count("\n") == 0 and "Traceback" not in text


@pytest.mark.parametrize("path", PATHS)
def test_a_format_change_keeps_old_values_and_the_counter_continues(
    platform: Platform, change: Callable[[str], Change], path: str
) -> None:
    old = [new_case(platform) for _ in range(3)]
    assert old == ["00000001", "00000002", "00000003"]
    ok, out = change(path)("C-{00000000}")
    assert ok, out
    assert new_case(platform) == "C-00000004"
    assert case_numbers(platform) == [*old, "C-00000004"]
    assert [str(f) for f in verify(platform.db)] == []
    with platform.db.connect() as conn:
        kept = set(
            conn.execute(
                sa.select(field_format_history.c.format).where(field_format_history.c.field_id == FIELD)
            ).scalars()
        )
    assert kept == {"{00000000}", "C-{00000000}"}


@pytest.mark.parametrize("path", PATHS)
def test_a_scope_change_moves_the_counters(
    platform: Platform, change: Callable[[str], Change], path: str
) -> None:
    for _ in range(3):
        new_case(platform)
    day = today(platform)
    case = platform.catalog.current().table("Case")
    with platform.begin() as conn:  # a value the new format renders, stored before the change
        conn.execute(sa.insert(case).values(Id="case-pre", CaseNumber=f"CS-{day}-0007"))
    ok, out = change(path)("CS-{YYYY}{MM}{DD}-{0000}", "per_day")
    assert ok, out
    assert counters(platform) == {day: 8}  # the global row is retired; the day starts above 0007
    assert new_case(platform) == f"CS-{day}-0008"
    assert [str(f) for f in verify(platform.db)] == []
    ok, out = change(path)("{00000000}", "global")  # and back: the global counter continues
    assert ok, out
    assert counters(platform) == {"": 9}
    assert new_case(platform) == "00000009"
    assert [str(f) for f in verify(platform.db)] == []


REFUSALS = {
    "grammar": (("C-{0000",), "rule "),
    "start-beyond-width": (
        ("C-{000}", None, 1000),
        "start 1000 does not fit the counter of 'C-{000}' (width 3, largest 999)",
    ),
    "narrowing": (("{00}", None, 1), "cannot hold the next value 150"),
    "huge-start": (
        ("H-{000000000000000000}", None, 99999999999999999999999),
        "(width 18, largest 999999999999999999)",
    ),
    "unknown-scope": (("C-{0000}", "per_week"), "auto_number_scope"),
}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("refusal", sorted(REFUSALS))
def test_a_refused_change_prints_one_line_and_changes_no_table(
    platform: Platform, change: Callable[[str], Change], path: str, refusal: str
) -> None:
    new_case(platform)
    with platform.begin() as conn:  # 150 handed out: a two-digit counter would overflow
        conn.execute(sa.update(counter_table).where(counter_table.c.field_id == FIELD).values(next_value=150))
    before = dump(platform.db)
    args, reason = REFUSALS[refusal]
    ok, out = change(path)(*args)
    assert not ok and one_line(out) and reason in out, out
    assert dump(platform.db) == before


def test_field_add_with_a_huge_start_changes_no_table(
    platform: Platform, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = dump(platform.db)
    ok, out = run_cli(
        [
            "field",
            "add",
            "Account",
            "Rt_Huge__c",
            "--format",
            "H-{000000000000000000}",
            "--start",
            "99999999999999999999999",
            "--db",
            db_url,
        ],
        capsys,
    )
    assert not ok and one_line(out), out
    assert "Account.Rt_Huge__c: start 99999999999999999999999 does not fit" in out, out
    assert dump(platform.db) == before


def test_a_spec_whose_last_operation_is_invalid_applies_nothing(
    platform: Platform, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = dump(platform.db)
    spec = write_spec(
        tmp_path,
        [
            {
                "op": "add_autonumber_field",
                "object": "Account",
                "field": "Member_No__c",
                "format": "MB-{000000}",
            },
            {"op": "set_rule", "object": "Case", "field": "CaseNumber", "format": "C-{00000000}"},
            {"op": "set_rule", "object": "Case", "field": "CaseNumber", "format": "{0000}-{0000}"},
        ],
    )
    ok, out = apply_spec_file(spec, db_url, capsys)
    assert not ok and one_line(out) and "rule 1" in out, out
    assert dump(platform.db) == before


def test_a_failure_after_the_column_was_added_is_compensated(
    platform: Platform, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The format validates, so the column is added; verify (V6: a record type without a code) then
    fails: on MariaDB, where the ADD COLUMN committed at once, the column is dropped again."""
    t = system_record_type
    with platform.begin() as conn:
        conn.execute(
            sa.update(t).where(t.c.DeveloperName == "Services Agreement").values(RecordTypeCode=None)
        )
    before = dump(platform.db)
    ok, out = run_cli(
        [
            "field",
            "add",
            "Contract",
            "Rt_Code__c",
            "--format",
            "{RecordType.RecordTypeCode}-{000}",
            "--db",
            db_url,
        ],
        capsys,
    )
    assert not ok and "V6" in out and "Traceback" not in out, out
    assert dump(platform.db) == before
    spec = write_spec(
        tmp_path,
        [
            {
                "op": "add_autonumber_field",
                "object": "Contract",
                "field": "Rt_Code__c",
                "format": "{RecordType.RecordTypeCode}-{000}",
            }
        ],
    )
    ok, out = apply_spec_file(spec, db_url, capsys)
    assert not ok and "V6" in out and "Traceback" not in out, out
    assert dump(platform.db) == before


def test_the_console_and_the_cli_give_the_same_answer(
    platform: Platform, change: Callable[[str], Change], db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for _ in range(3):
        new_case(platform)
    pages = FormClient(
        create_app(platform, admin_token=TOKEN), headers={"Accept": "text/html"}, follow_redirects=False
    )
    pages.post("/login", data={"token": TOKEN})

    def console(fmt: str, scope: str | None = None, start: int | None = None) -> tuple[bool, str]:
        form = {"format": fmt, "scope": scope or "", "start": "" if start is None else str(start)}
        r = pages.post(f"/rules/{FIELD}", data=form)
        assert r.status_code == 303, r.text
        platform.catalog.refresh()
        text = unquote(r.cookies.get(FLASH) or pages.cookies.get(FLASH) or "").strip('"')
        return not text.startswith("error: "), text.removeprefix("error: ")

    cli = change("cli")
    for args in (("C-{0000",), ("C-{000}", None, 1000), ("C-{00000000}", "per_week")):
        cli_ok, cli_out = cli(*args)
        web_ok, web_out = console(*args)
        assert (cli_ok, web_ok) == (False, False)
        assert cli_out.strip() == f"error: {web_out}", (cli_out, web_out)
    ok, out = console("C-{00000000}")
    assert ok, out
    by_console = (case_numbers(platform), counters(platform))
    assert cli("{00000000}")[0] and cli("C-{00000000}")[0]  # back, then the same change by the CLI
    assert (
        (case_numbers(platform), counters(platform))
        == by_console
        == (["00000001", "00000002", "00000003"], {"": 4})
    )


def test_a_change_verifies_only_its_own_field(
    platform: Platform, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A finding about `Case.CaseNumber__c` (whose id contains `Case.CaseNumber`) neither blocks a
    change of `Case.CaseNumber` nor is blamed on it; whole-database verify still reports it."""
    ok, out = run_cli(
        ["field", "add", "Case", "CaseNumber__c", "--format", "X-{000}", "--db", db_url], capsys
    )
    assert ok, out
    with platform.begin() as conn:
        conn.execute(sa.delete(counter_table).where(counter_table.c.field_id == "Case.CaseNumber__c"))
    ok, out = run_cli(
        ["field", "set", "Case", "CaseNumber", "--format", "C-{00000000}", "--db", db_url], capsys
    )
    assert ok, out
    findings = verify(platform.db)
    assert {f.field_id for f in findings if f.code == "V1"} == {"Case.CaseNumber__c"}
    assert any(f.code == "V5" for f in findings)
