"""`autonumber counter show|set`: the next number moves up only, never below what a scope ever
reserved; a refusal changes nothing; the skip is journaled and a set racing with inserts never lets a
number be issued twice (every backend, CLI and library)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from autonumber.audit import audit_gaps
from autonumber.db import create_engine
from autonumber.db.tables import counter_table, reservation_journal
from autonumber.errors import RuleChangeRefused
from autonumber.rules import ensure_history_table, floor, verify
from autonumber.rules.counters import set_next
from autonumber.runtime import Platform
from support import number, run_cli, run_together

FIELD_SET = ["field", "set", "Case", "CaseNumber", "--format"]


def counter(engine: Engine, field_id: str, key: str = "") -> int:
    t = counter_table
    with engine.connect() as conn:
        return int(
            conn.execute(
                sa.select(t.c.next_value).where(t.c.field_id == field_id, t.c.scope_key == key)
            ).scalar_one()
        )


def test_cli_shows_sets_and_refuses_below_what_was_reserved(
    platform: Platform, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for i in range(2):
        platform.records.insert("Case", {"Subject": f"before {i}"})
    code, out = run_cli(["counter", "show", "Case", "CaseNumber", "--json", "--db", db_url], capsys)
    assert code == 0, out
    [shown] = json.loads(out)["counters"]
    assert shown == {
        "scope_key": "",
        "next_value": 3,
        "next_number": "00000003",
        "floor": 3,
        "preview": "00000003",
        "depends_on_record": False,
    }

    code, out = run_cli(["counter", "set", "Case", "CaseNumber", "--next", "1000", "--db", db_url], capsys)
    assert code == 0, out
    assert "next value 3 → 1000 (997 value(s) skipped, journaled)" in out
    assert platform.records.insert("Case", {"Subject": "after"})["CaseNumber"] == "00001000"

    for below in ("1000", "999", "2"):
        code, out = run_cli(["counter", "set", "Case", "CaseNumber", "--next", below, "--db", db_url], capsys)
        assert code == 2, out
        assert out.strip().count("\n") == 0 and "the lowest allowed is 1001" in out, out
    assert counter(platform.db, "Case.CaseNumber") == 1001
    code, out = run_cli(["counter", "set", "Case", "CaseNumber", "--next", "1001", "--db", db_url], capsys)
    assert code == 0 and "nothing changed" in out, out

    code, out = run_cli(["counter", "show", "Case", "CaseNumber", "--db", db_url], capsys)
    assert code == 0 and "00001001" in out, out
    report = audit_gaps(platform, "Case.CaseNumber")
    [gap] = report.gaps
    assert (gap.first, gap.last) == (3, 999) and "counter set from 3 to 1000" in gap.reason
    assert verify(platform.db) == []


def test_a_set_that_does_not_fit_or_names_no_counter_is_refused(
    platform: Platform, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run_cli(
        ["counter", "set", "Case", "CaseNumber", "--next", "100000000", "--db", db_url], capsys
    )
    assert code == 2 and "does not fit the counter width 8" in out, out
    code, out = run_cli(
        ["counter", "set", "Case", "CaseNumber", "--next", "5", "--scope-key", "x", "--db", db_url], capsys
    )
    assert code == 2 and "scope global has one counter" in out, out
    code, out = run_cli(["counter", "set", "Case", "Subject", "--next", "5", "--db", db_url], capsys)
    assert code == 2 and "no autonumber rule" in out, out
    assert counter(platform.db, "Case.CaseNumber") == 1
    with platform.db.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(reservation_journal)).scalar_one() == 0


def test_a_per_day_counter_is_named_by_its_scope_key(
    platform: Platform, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run_cli(
        [*FIELD_SET, "CS-{YYYY}{MM}{DD}-{0000}", "--scope", "per_day", "--db", db_url],
        capsys,
    )
    assert code == 0, out
    platform.catalog.refresh()
    first = platform.records.insert("Case", {"Subject": "today"})["CaseNumber"]
    key = first[3:11]
    code, out = run_cli(["counter", "set", "Case", "CaseNumber", "--next", "50", "--db", db_url], capsys)
    assert code == 2 and f"name the counter with --scope-key (one of '{key}')" in out, out
    code, out = run_cli(
        ["counter", "set", "Case", "CaseNumber", "--next", "50", "--scope-key", key, "--db", db_url], capsys
    )
    assert code == 0, out
    assert platform.records.insert("Case", {"Subject": "later"})["CaseNumber"] == f"CS-{key}-0050"
    with pytest.raises(RuleChangeRefused, match="no counter row for scope key '20000101'"):
        set_next(platform.db, "Case", "CaseNumber", 7, "20000101")


def test_the_floor_of_retired_rows_and_the_journal_holds_when_the_row_is_behind(platform: Platform) -> None:
    with platform.db.begin() as conn:  # a row lowered behind the applier's back; older rows kept as floors
        ensure_history_table(conn)
        floor.remember_retired(conn, "Case.CaseNumber", {"": 50})
        conn.execute(
            sa.insert(reservation_journal).values(
                field_id="Case.CaseNumber", scope_key="", first_value=60, count=5, state="reserved", owner="x"
            )
        )
    with pytest.raises(RuleChangeRefused, match="the lowest allowed is 65"):
        set_next(platform.db, "Case", "CaseNumber", 64)
    assert counter(platform.db, "Case.CaseNumber") == 1
    assert set_next(platform.db, "Case", "CaseNumber", 65).now == 65


@pytest.mark.parametrize("numbering", ["standard", "gapless"])
def test_sets_racing_with_inserts_never_issue_a_number_twice(
    platform: Platform, db_url: str, numbering: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if numbering == "gapless":
        code, out = run_cli(
            [*FIELD_SET, "{00000000}", "--numbering", "gapless", "--db", db_url],
            capsys,
        )
        assert code == 0, out
        platform.catalog.refresh()
    writers, per_writer, sets = 6, 15, 8
    numbers: list[str] = []
    lock = threading.Lock()
    done = threading.Event()
    moves: list[tuple[int, int]] = []
    admin = create_engine(db_url)

    def work(t: int) -> None:
        if t == writers:  # the admin: jump ahead while the writers insert
            for _ in range(sets):
                target = counter(admin, "Case.CaseNumber") + 10
                while True:  # a writer may pass the target first: then aim higher
                    try:
                        move = set_next(admin, "Case", "CaseNumber", target)
                        break
                    except RuleChangeRefused as exc:
                        assert "the lowest allowed is" in str(exc)
                        target = int(str(exc).rsplit("is ", 1)[1].split()[0]) + 10
                moves.append((move.was, move.now))
            done.set()
            return
        for i in range(per_writer):
            with platform.db.begin() as conn:
                value = platform.records.insert("Case", {"Subject": f"{t}-{i}"}, conn=conn)["CaseNumber"]
            with lock:
                numbers.append(value)

    try:
        assert run_together(work, writers + 1) == []
    finally:
        admin.dispose()
    assert done.is_set() and len(moves) == sets
    values = [number(v) for v in numbers]
    assert len(values) == writers * per_writer and len(set(values)) == len(values)
    for was, now in moves:  # nothing was issued inside a skipped range
        assert not [v for v in values if was <= v < now], (was, now)
    assert verify(platform.db) == []


def spec_file(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / f"{name}.md"
    path.write_text(
        f"---\napiVersion: data-spec/v1\nid: 2026-06-01-{name}\nscope: staging-then-production\n"
        f"status: pending\n---\n\n## Operations\n\n```yaml\n{body}\n```\n",
        encoding="utf-8",
    )
    return path


def test_a_data_spec_sets_the_next_number_once_and_refuses_below_the_floor(
    platform: Platform, db_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    platform.records.insert("Case", {"Subject": "before"})
    ok = spec_file(
        tmp_path, "jump", "- op: set_next_number\n  object: Case\n  field: CaseNumber\n  next: 5000"
    )
    code, out = run_cli(["spec", "apply", str(ok), "--env", "staging", "--db", db_url], capsys)
    assert code == 0 and "next value 2 → 5000" in out, out
    assert platform.records.insert("Case", {"Subject": "after"})["CaseNumber"] == "00005000"
    code, out = run_cli(["spec", "apply", str(ok), "--env", "production", "--db", db_url], capsys)
    assert code == 0, out  # the same move again (another env on one database): already journaled
    assert counter(platform.db, "Case.CaseNumber") == 5001
    low = spec_file(tmp_path, "low", "- op: set_next_number\n  object: Case\n  field: CaseNumber\n  next: 10")
    code, out = run_cli(["spec", "apply", str(low), "--env", "staging", "--db", db_url], capsys)
    assert code == 2 and "the lowest allowed is 5001" in out and out.count("\n") == 1, out
    assert counter(platform.db, "Case.CaseNumber") == 5001
