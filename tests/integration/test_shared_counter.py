"""Shared counters (docs/changing-rules.md "Shared counters"), on every backend: several
fields on several objects draw from one counter (`--shared-counter NAME`), through the CLI and the
library; a member that does not fit is refused with one line and nothing written; joining and
leaving start above every value either counter reserved; verify, the gap audit and `counter
show|set` understand the shared counter; threads inserting into two members at once get unique
values, contiguous on the one counter."""

from __future__ import annotations

import json
import multiprocessing
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

import autonumber
from autonumber.audit import audit_gaps
from autonumber.db.tables import counter_table, reservation_journal, system_field
from autonumber.engine import STRATEGIES
from autonumber.errors import RuleChangeRefused, RuleQuarantined
from autonumber.objects.custom import add_object
from autonumber.rules import RuleEdit, RuleRequest, RuleSpec, commit_requests, set_rule
from autonumber.rules.counters import set_next
from autonumber.rules.verify import verify
from autonumber.runtime import Platform
from support import bootstrap_url, number, run_cli, run_together

QUOTE, ORDER = "Quotation.QuoteNo", "SalesOrder.OrderNo"
SHARED = "shared:QO"


@pytest.fixture
def bare(db_url: str) -> Iterator[Platform]:
    """Two custom objects, Quote and SalesOrder, without autonumber fields yet."""
    bootstrap_url(db_url)
    p = autonumber.connect(db_url)
    with p.db.begin() as conn:
        add_object(conn, "Quotation", ["Note:text(40)"])
        add_object(conn, "SalesOrder", ["Note:text(40)"])
    p.catalog.refresh()
    yield p
    p.close()


def cli(capsys: pytest.CaptureFixture[str], db_url: str, *argv: str) -> tuple[int, str]:
    return run_cli([*argv, "--db", db_url], capsys)


@pytest.fixture
def platform(bare: Platform, db_url: str, capsys: pytest.CaptureFixture[str]) -> Platform:
    """Quotation.QuoteNo `Q-{0000}` and SalesOrder.OrderNo `O-{0000}`, members of shared counter QO (CLI)."""
    for obj, field, fmt in (("Quotation", "QuoteNo", "Q-{0000}"), ("SalesOrder", "OrderNo", "O-{0000}")):
        code, out = cli(capsys, db_url, "field", "add", obj, field, "--format", fmt, "--shared-counter", "QO")
        assert code == 0, out
        assert "shared counter QO" in out and "verify passed" in out
    bare.catalog.refresh()
    return bare


def insert(p: Platform, obj: str) -> str:
    field = "QuoteNo" if obj == "Quotation" else "OrderNo"
    return str(p.records.insert(obj, {"Note": "x"})[field])


def counters(p: Platform, field_id: str) -> dict[str, int]:
    t = counter_table
    with p.db.connect() as conn:
        rows = conn.execute(sa.select(t.c.scope_key, t.c.next_value).where(t.c.field_id == field_id))
        return {str(k): int(n) for k, n in rows}


def add(db: Engine, spec: RuleSpec) -> None:
    commit_requests(db, [RuleRequest("add", spec)])


def stored_rules(p: Platform) -> list[tuple[object, ...]]:
    f = system_field
    with p.db.connect() as conn:
        return sorted(
            tuple(r)
            for r in conn.execute(sa.select(f.c.Id, f.c.auto_number_format, f.c.auto_number_shared_counter))
        )


def test_quote_order_quote_take_one_sequence(
    platform: Platform, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = [insert(platform, o) for o in ("Quotation", "SalesOrder", "Quotation")]
    assert taken == ["Q-0001", "O-0002", "Q-0003"]
    batch = platform.records.insert_many("SalesOrder", [{"Note": "a"}, {"Note": "b"}])
    assert [r["OrderNo"] for r in batch] == ["O-0004", "O-0005"]
    assert counters(platform, SHARED) == {"": 6}
    assert counters(platform, QUOTE) == {} and counters(platform, ORDER) == {}  # no counter of their own
    assert verify(platform.db) == []
    code, out = cli(capsys, db_url, "field", "show", ORDER, "--json")
    assert code == 0, out
    view = json.loads(out)
    assert view["shared_counter"] == "QO" and view["counters"][0]["next_number"] == "O-0006"
    code, out = cli(capsys, db_url, "counter", "show", "Quotation", "QuoteNo", "--json")
    assert json.loads(out)["shared_counter"] == "QO"
    assert json.loads(out)["counters"] == [
        {
            "scope_key": "",
            "next_value": 6,
            "next_number": "Q-0006",
            "floor": 6,
            "preview": "Q-0006",
            "depends_on_record": False,
        }
    ]
    code, out = cli(capsys, db_url, "setup", "verify")
    assert code == 0, out


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (["--format", "X-{000}"], "counter width 3 differs from member"),
        (["--format", "X-{0000}", "--start", "5"], "start 5 differs from member"),
        (["--format", "X-{0000}", "--allocation", "blocks:10"], "allocation blocks:10 differs"),
        (["--format", "X-{0000}", "--numbering", "gapless"], "gapless numbering cannot share a counter"),
        (["--format", "X-{0000}", "--scope", "per_prefix"], "scope per_prefix cannot share a counter"),
        (["--format", "X-{YYYY}{MM}{DD}-{0000}", "--scope", "per_day"], "scope per_day differs from member"),
    ],
)
def test_a_member_that_does_not_fit_is_refused_and_nothing_is_written(
    platform: Platform, db_url: str, capsys: pytest.CaptureFixture[str], argv: list[str], why: str
) -> None:
    insert(platform, "Quotation")
    with platform.db.begin() as conn:
        add_object(conn, "Invoice", ["Note:text(40)"])
    before = (stored_rules(platform), counters(platform, SHARED))
    code, out = cli(capsys, db_url, "field", "add", "Invoice", "InvNo", *argv, "--shared-counter", "QO")
    assert code == 2, out
    assert why in out and len(out.strip().splitlines()) == 1, out
    assert (stored_rules(platform), counters(platform, SHARED)) == before
    with platform.db.connect() as conn:
        assert "InvNo" not in {c["name"] for c in sa.inspect(conn).get_columns("Invoice")}
    # an existing member cannot change away from the others either
    code, out = cli(capsys, db_url, "field", "set", "Quotation", "QuoteNo", "--format", "Q-{00000}")
    assert code == 2 and "counter width 5 differs from member SalesOrder.OrderNo's 4" in out, out
    assert (stored_rules(platform), counters(platform, SHARED)) == before


def test_a_bad_name_is_refused(bare: Platform, db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    add = ["field", "add", "Quotation", "QuoteNo", "--format", "Q-{0000}"]
    code, out = cli(capsys, db_url, *add, "--shared-counter", "Q|O")
    assert code == 2 and "shared counter name" in out, out


def test_joining_and_leaving_start_above_everything_either_counter_reserved(bare: Platform) -> None:
    """Order has its own counter, moved to 50 (values 3..49 skipped); Quote's shared counter is
    at 3. Order joins: the shared counter continues above 50. Order leaves again: its own counter
    starts above every value the shared counter handed out (to either member)."""
    db = bare.db
    add(db, RuleSpec("SalesOrder", "OrderNo", "O-{0000}"))
    add(db, RuleSpec("Quotation", "QuoteNo", "Q-{0000}", shared_counter="QO"))
    bare.catalog.refresh()
    assert [insert(bare, "SalesOrder") for _ in range(2)] == ["O-0001", "O-0002"]
    set_next(db, "SalesOrder", "OrderNo", 50)
    assert [insert(bare, "Quotation") for _ in range(2)] == ["Q-0001", "Q-0002"]

    done = set_rule(db, RuleEdit("SalesOrder", "OrderNo", shared_counter="QO"))
    retired = "retired 1 counter row(s) of SalesOrder.OrderNo"
    assert any(retired in line for line in done.changes), done.changes
    bare.catalog.refresh()
    assert counters(bare, ORDER) == {} and counters(bare, SHARED) == {"": 50}
    assert [insert(bare, o) for o in ("Quotation", "SalesOrder")] == ["Q-0050", "O-0051"]
    assert verify(db) == []

    with pytest.raises(RuleChangeRefused, match="lowest allowed is 52"):  # the floor spans both members
        set_next(db, "Quotation", "QuoteNo", 51)
    set_next(db, "SalesOrder", "OrderNo", 60)  # a member moves the shared counter
    bare.catalog.refresh()
    assert insert(bare, "Quotation") == "Q-0060"

    set_rule(db, RuleEdit("SalesOrder", "OrderNo", shared_counter=""))
    bare.catalog.refresh()
    assert counters(bare, ORDER) == {"": 61} and counters(bare, SHARED) == {"": 61}
    assert [insert(bare, o) for o in ("SalesOrder", "Quotation")] == ["O-0061", "Q-0061"]
    assert verify(db) == []

    set_rule(db, RuleEdit("Quotation", "QuoteNo", shared_counter=""))  # the last member leaves
    bare.catalog.refresh()
    assert counters(bare, SHARED) == {} and counters(bare, QUOTE) == {"": 62}
    add(db, RuleSpec("Quotation", "Quote2", "Q2-{0000}", shared_counter="QO"))
    assert counters(bare, SHARED) == {"": 62}  # a re-created shared counter starts above its retired row
    assert verify(db) == []


def test_verify_checks_the_shared_counter_against_every_member(platform: Platform) -> None:
    for obj in ("Quotation", "SalesOrder", "SalesOrder"):
        insert(platform, obj)
    with platform.db.begin() as conn:  # a broken counter: at or below Order's largest value
        conn.execute(sa.update(counter_table).where(counter_table.c.field_id == SHARED).values(next_value=2))
    messages = [f.message for f in verify(platform.db)]
    assert any(
        m.startswith(f"V1 field_id={ORDER} scope_key='' next_value=2 (shared counter QO)") for m in messages
    )
    assert not any(f"field_id={QUOTE}" in m for m in messages), messages  # Quote's 1 is below 2
    with platform.db.begin() as conn:  # a raw UPDATE makes the members disagree: V4
        conn.execute(sa.update(counter_table).where(counter_table.c.field_id == SHARED).values(next_value=4))
        conn.execute(sa.update(system_field).where(system_field.c.Id == QUOTE).values(auto_number_start=7))
    messages = [f.message for f in verify(platform.db)]
    assert any(m.startswith("V4") and "start 7 differs from member" in m for m in messages), messages
    platform.catalog.refresh()
    for obj in ("Quotation", "SalesOrder"):  # fail closed: neither member assigns from the counter
        with pytest.raises(RuleQuarantined, match="differs from member"):
            insert(platform, obj)


def test_the_gap_audit_counts_every_members_values(platform: Platform) -> None:
    """Quotation holds 1, 3 and 6, SalesOrder 2: only the skipped 4 and 5 are gaps, for either."""
    for obj in ("Quotation", "SalesOrder", "Quotation"):
        insert(platform, obj)
    set_next(platform.db, "SalesOrder", "OrderNo", 6)
    insert(platform, "Quotation")
    for field in (QUOTE, ORDER):
        report = audit_gaps(platform, field)
        assert [(g.first, g.last) for g in report.gaps] == [(4, 5)], (field, report.gaps)
        assert "counter set" in report.gaps[0].reason, report.gaps


def test_per_day_members_share_each_days_counter_row(bare: Platform) -> None:
    spec = {"scope": "per_day", "shared_counter": "DAY", "time_zone": "Asia/Tokyo"}
    commit_requests(
        bare.db,
        [
            RuleRequest("add", RuleSpec("Quotation", "QuoteNo", "Q-{YYYY}{MM}{DD}-{000}", **spec)),  # type: ignore[arg-type]
            RuleRequest("add", RuleSpec("SalesOrder", "OrderNo", "O-{YY}{MM}{DD}-{000}", **spec)),  # type: ignore[arg-type]
        ],
    )
    bare.catalog.refresh()
    values = [insert(bare, o) for o in ("Quotation", "SalesOrder", "SalesOrder", "Quotation")]
    assert [number(v) for v in values] == [1, 2, 3, 4]
    rows = counters(bare, "shared:DAY")
    assert list(rows.values()) == [5] and len(next(iter(rows))) == 8, rows
    with pytest.raises(RuleChangeRefused, match="time zone UTC differs from member"):
        set_rule(bare.db, RuleEdit("Quotation", "QuoteNo", time_zone="UTC"))
    assert verify(bare.db) == []


def test_threads_inserting_into_two_members_get_one_contiguous_sequence(platform: Platform) -> None:
    threads, each = 6, 12

    def work(t: int) -> None:
        obj = "Quotation" if t % 2 else "SalesOrder"
        for i in range(each):
            if i % 4 == 3:
                platform.records.insert_many(obj, [{"Note": f"{t}-{i}-a"}, {"Note": f"{t}-{i}-b"}])
            else:
                insert(platform, obj)

    assert run_together(work, threads) == []
    taken = []
    with platform.db.connect() as conn:
        for obj, column, prefix in (("Quotation", "QuoteNo", "Q-"), ("SalesOrder", "OrderNo", "O-")):
            table = platform.catalog.current().table(obj)
            values = conn.execute(sa.select(table.c[column])).scalars().all()
            assert all(v.startswith(prefix) for v in values)
            taken += [number(v) for v in values]
    total = threads * (each + each // 4)
    assert sorted(taken) == list(range(1, total + 1))  # unique across members, no gap on the counter
    assert counters(platform, SHARED) == {"": total + 1}
    with platform.db.connect() as conn:  # every journal line is the shared counter's
        ids = set(conn.execute(sa.select(reservation_journal.c.field_id).distinct()).scalars())
    assert ids <= {SHARED}
    assert verify(platform.db) == []


def _spec(tmp_path: Path, name: str, ops: list[str]) -> Path:
    path = tmp_path / f"{name}.md"
    path.write_text(
        f"---\napiVersion: data-spec/v1\nid: 2026-12-02-{name}\nscope: staging-then-production\n"
        "status: pending\n---\n\n## Operations\n\n```yaml\n" + "\n".join(ops) + "\n```\n",
        encoding="utf-8",
    )
    return path


def test_spec_operations_join_refuse_and_leave(
    bare: Platform, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    join = [
        "- op: add_autonumber_field",
        "  object: Quotation",
        "  field: QuoteNo",
        "  format: 'Q-{0000}'",
        "  shared_counter: QO",
        "- op: add_autonumber_field",
        "  object: SalesOrder",
        "  field: OrderNo",
        "  format: 'O-{0000}'",
        "  shared_counter: QO",
    ]
    code, out = run_cli(
        ["spec", "apply", str(_spec(tmp_path, "join", join)), "--env", "production", "--db", db_url], capsys
    )
    assert code == 0, out
    bare.catalog.refresh()
    assert [insert(bare, o) for o in ("SalesOrder", "Quotation")] == ["O-0001", "Q-0002"]
    before = (stored_rules(bare), counters(bare, SHARED))
    refused = [
        "- op: set_rule",
        "  object: Quotation",
        "  field: QuoteNo",
        "  format: 'Q-{0000}'",
        "  start: 9",
    ]
    path = _spec(tmp_path, "refused", refused)
    code, out = run_cli(["spec", "apply", str(path), "--env", "production", "--db", db_url], capsys)
    assert code != 0 and "start 9 differs from member SalesOrder.OrderNo's 1" in out, out
    assert (stored_rules(bare), counters(bare, SHARED)) == before
    leave = [
        "- op: set_rule",
        "  object: Quotation",
        "  field: QuoteNo",
        "  format: 'Q-{0000}'",
        "  shared_counter: ''",
    ]
    code, out = run_cli(
        ["spec", "apply", str(_spec(tmp_path, "leave", leave)), "--env", "production", "--db", db_url], capsys
    )
    assert code == 0, out
    bare.catalog.refresh()
    assert [insert(bare, o) for o in ("Quotation", "SalesOrder")] == ["Q-0003", "O-0003"]
    assert verify(bare.db) == []


def test_a_per_day_field_joins_above_its_own_days_and_leaves_above_the_shared_ones(bare: Platform) -> None:
    day = {"scope": "per_day", "time_zone": "UTC"}
    add(bare.db, RuleSpec("SalesOrder", "OrderNo", "O-{YYYY}{MM}{DD}-{000}", **day))  # type: ignore[arg-type]
    add(bare.db, RuleSpec("Quotation", "QuoteNo", "Q-{YYYY}{MM}{DD}-{000}", shared_counter="DAY", **day))  # type: ignore[arg-type]
    bare.catalog.refresh()
    assert [number(insert(bare, "SalesOrder")) for _ in range(4)] == [1, 2, 3, 4]
    assert number(insert(bare, "Quotation")) == 1
    [today] = counters(bare, ORDER)
    set_rule(bare.db, RuleEdit("SalesOrder", "OrderNo", shared_counter="DAY"))
    bare.catalog.refresh()
    assert counters(bare, ORDER) == {} and counters(bare, "shared:DAY") == {today: 5}
    assert [number(insert(bare, o)) for o in ("Quotation", "SalesOrder")] == [5, 6]
    set_rule(bare.db, RuleEdit("SalesOrder", "OrderNo", shared_counter=""))
    bare.catalog.refresh()
    assert counters(bare, ORDER) == {today: 7}
    assert [number(insert(bare, o)) for o in ("SalesOrder", "Quotation")] == [7, 7]
    assert verify(bare.db) == []


def insert_members(url: str, strategy: str, process: int, per_process: int) -> list[str]:
    """One process of the multi-process test: its own platform, two threads, one per member."""
    p = autonumber.connect(url, strategy=strategy)
    out: list[str] = []
    try:

        def work(t: int) -> None:
            obj = "Quotation" if (process + t) % 2 else "SalesOrder"
            out.extend(insert(p, obj) for _ in range(per_process // 2))

        errors = run_together(work, 2)
        assert errors == [], errors
        return out
    finally:
        p.close()


@pytest.mark.slow  # spawned processes: tens of seconds on a loaded machine
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_processes_inserting_into_two_members_share_one_contiguous_counter(
    platform: Platform, db_url: str, strategy: str
) -> None:
    processes, per_process = 3, 20
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(processes, mp_context=spawn) as pool:
        futures = [pool.submit(insert_members, db_url, strategy, i, per_process) for i in range(processes)]
        values = [v for f in futures for v in f.result(timeout=300)]
    assert {v[:2] for v in values} == {"Q-", "O-"}
    assert sorted(number(v) for v in values) == list(range(1, processes * per_process + 1))
    assert counters(platform, SHARED) == {"": processes * per_process + 1}
    assert verify(platform.db) == []


def docs(bare: Platform, fmt: str, **rule: str) -> None:
    """Quotation.QuoteNo and SalesOrder.OrderNo, both `fmt`, members of shared counter docs."""
    commit_requests(
        bare.db,
        [
            RuleRequest("add", RuleSpec("Quotation", "QuoteNo", fmt, shared_counter="docs", **rule)),  # type: ignore[arg-type]
            RuleRequest("add", RuleSpec("SalesOrder", "OrderNo", fmt, shared_counter="docs", **rule)),  # type: ignore[arg-type]
        ],
    )
    bare.catalog.refresh()


def test_leaving_with_a_format_that_renders_a_members_text_is_refused(
    bare: Platform, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both members show `DOC-{000000}`: a leave keeping that format (or one that differs only in
    case) would number the next quote and the next order both DOC-000007. Refused, nothing written;
    a leave to `QT-{000000}` is allowed."""
    docs(bare, "DOC-{000000}")
    assert [insert(bare, o) for o in ("Quotation", "SalesOrder") * 3][-1] == "DOC-000006"
    before = (stored_rules(bare), counters(bare, "shared:docs"), counters(bare, QUOTE))
    for fmt in ("DOC-{000000}", "doc-{000000}"):
        code, out = cli(
            capsys, db_url, "field", "set", "Quotation", "QuoteNo", "--format", fmt, "--own-counter"
        )
        assert code == 2 and len(out.strip().splitlines()) == 1, out
        assert "leaving shared counter docs" in out and "member SalesOrder.OrderNo" in out, out
        assert (stored_rules(bare), counters(bare, "shared:docs"), counters(bare, QUOTE)) == before
    code, out = cli(
        capsys, db_url, "field", "set", "Quotation", "QuoteNo", "--format", "QT-{000000}", "--own-counter"
    )
    assert code == 0, out
    bare.catalog.refresh()
    assert [insert(bare, o) for o in ("Quotation", "SalesOrder", "Quotation")] == [
        "QT-000007",
        "DOC-000007",
        "QT-000008",
    ]
    code, out = cli(capsys, db_url, "setup", "verify")
    assert code == 0, out
    # the last member leaves with the format it had: nobody else draws from the counter
    set_rule(bare.db, RuleEdit("SalesOrder", "OrderNo", shared_counter=""))
    bare.catalog.refresh()
    assert insert(bare, "SalesOrder") == "DOC-000008"


def test_a_per_day_leave_is_checked_on_the_text_dates_included(bare: Platform) -> None:
    """Date and time tokens are digits like the counter: `D-{YY}{MM}{DD}{HH}-{000}` can render a
    `D-{YYYY}{MM}{DD}-{000}` text (refused), whatever the day; `D-{YY}{MM}{DD}-{000}` cannot
    (shorter: allowed)."""
    docs(bare, "D-{YYYY}{MM}{DD}-{000}", scope="per_day", time_zone="UTC")
    insert(bare, "Quotation")
    for fmt in ("D-{YYYY}{MM}{DD}-{000}", "D-{YY}{MM}{DD}{HH}-{000}"):
        with pytest.raises(RuleChangeRefused, match="leaving shared counter docs"):
            set_rule(bare.db, RuleEdit("SalesOrder", "OrderNo", format=fmt, shared_counter=""))
    set_rule(bare.db, RuleEdit("SalesOrder", "OrderNo", format="D-{YY}{MM}{DD}-{000}", shared_counter=""))
    bare.catalog.refresh()
    assert number(insert(bare, "SalesOrder")) == 2  # above what the shared counter handed out
    assert verify(bare.db) == []


@pytest.mark.parametrize(
    ("scope", "shared_fmt", "own_fmt"),
    [
        ("global", "DOC-{000000}", "QT-{000000}"),
        ("per_day", "DOC-{YYYY}{MM}{DD}-{0000}", "QT-{YYYY}{MM}{DD}-{0000}"),
    ],
)
def test_joining_and_leaving_while_every_member_inserts(
    bare: Platform, scope: str, shared_fmt: str, own_fmt: str
) -> None:
    """Two threads insert into each member while a fifth makes Quotation leave (with its own
    format) and join again, six times: no insert fails (a process still on the old rule tries again
    with the new one), no rendered number is stored twice across the members, verify passes."""
    docs(bare, shared_fmt, scope=scope, time_zone="UTC")
    done = threading.Event()
    taken: list[str] = []
    lock = threading.Lock()

    def work(t: int) -> None:
        if t == 4:
            try:
                for i in range(6):
                    time.sleep(0.15)
                    edit = (
                        RuleEdit("Quotation", "QuoteNo", format=own_fmt, shared_counter="")
                        if i % 2 == 0
                        else RuleEdit("Quotation", "QuoteNo", format=shared_fmt, shared_counter="docs")
                    )
                    set_rule(bare.db, edit)
            finally:
                done.set()
            return
        obj = "Quotation" if t % 2 else "SalesOrder"
        while not done.is_set():
            value = insert(bare, obj)
            with lock:
                taken.append(value)

    assert run_together(work, 5) == []
    assert len(taken) > 10 and len(set(taken)) == len(taken), sorted(taken)
    stored: list[str] = []
    with bare.db.connect() as conn:
        for obj, column in (("Quotation", "QuoteNo"), ("SalesOrder", "OrderNo")):
            table = bare.catalog.current().table(obj)
            stored += conn.execute(sa.select(table.c[column])).scalars().all()
    assert sorted(stored) == sorted(taken)  # every value stored once, in one member's column only
    assert verify(bare.db) == []
