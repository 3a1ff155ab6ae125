"""The gap audit after rule changes: every gap is printed in the format and scope in force when it
was reserved, a retired scope's gaps and reasons stay listed, no stored value is ever listed, and
the exit code is 0 or 1 (never a refusal) after format, scope, time zone and shared counter changes."""

from __future__ import annotations

import json

import pytest
from engine_support import CASE

from autonumber.runtime import Platform
from support import make_platform, run_cli


class Boom(Exception):
    """The caller's own failure after its insert."""


def field_set(url: str, capsys: pytest.CaptureFixture[str], *options: str, obj: str = "Case") -> None:
    field = "CaseNumber" if obj == "Case" else "Doc_No__c"
    code, out = run_cli(["field", "set", obj, field, *options, "--db", url], capsys)
    assert code == 0, out


Gaps = list[dict[str, object]]


def audit(url: str, capsys: pytest.CaptureFixture[str], field: str = CASE) -> tuple[int, Gaps]:
    code, out = run_cli(["audit", "gaps", field, "--json", "--db", url], capsys)
    assert code in (0, 1), out
    gaps = json.loads(out)["gaps"]
    assert code == (1 if gaps else 0)
    return code, gaps


class Writer:
    """Inserts, numbers taken and never stored, and rolled-back inserts, remembering each number."""

    def __init__(self, p: Platform, obj: str = "Case", field: str = "CaseNumber") -> None:
        self.p, self.obj, self.field = p, obj, field
        self.stored: list[str] = []
        self.lost: list[str] = []

    def insert(self) -> None:
        self.stored.append(str(self.p.records.insert(self.obj, {})[self.field]))

    def take(self) -> None:
        """A number reserved in its own transaction and never stored: a gap on every backend."""
        self.lost.append(self.p.engine.assign_one(f"{self.obj}.{self.field}", {}))

    def roll_back(self) -> None:
        """A gap on MariaDB and PostgreSQL; SQLite gives the number back (the next insert reuses it)."""
        seen: list[str] = []
        with pytest.raises(Boom), self.p.begin() as conn:
            seen.append(str(self.p.records.insert(self.obj, {}, conn)[self.field]))
            raise Boom()
        if self.p.db.dialect.name != "sqlite":
            self.lost.append(seen[0])

    def refresh(self) -> None:
        self.p.catalog.refresh()

    def check(self, gaps: Gaps) -> None:
        """Each lost number listed as it was printed when reserved; no stored number listed."""
        listed = [str(g["numbers"]) for g in gaps for _ in range(int(str(g["count"])))]
        singles = [str(g["numbers"]) for g in gaps if g["count"] == 1]
        assert sorted(singles) == sorted(self.lost), gaps
        assert not set(listed) & set(self.stored), gaps


def test_the_docs_global_to_per_day_example_audits(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/changing-rules.md: three Cases, then per_day; the audit exits 0, then 1 with a gap."""
    p = make_platform(db_url)
    w = Writer(p)
    try:
        for _ in range(3):
            w.insert()
        field_set(db_url, capsys, "--format", "CS-{YYYY}{MM}{DD}-{0000}", "--scope", "per_day")
        w.refresh()
        w.insert()
        assert audit(db_url, capsys)[0] == 0
        w.take()
        w.insert()
    finally:
        p.close()
    code, gaps = audit(db_url, capsys)
    assert code == 1
    w.check(gaps)


def test_an_old_gap_keeps_its_format_and_reason(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    p = make_platform(db_url)
    w = Writer(p)
    try:
        field_set(db_url, capsys, "--format", "TK-{0000}")
        w.refresh()
        w.insert()
        w.take()
        w.roll_back()
        w.insert()
        field_set(db_url, capsys, "--format", "TK-{00000}")
        w.refresh()
        w.insert()
    finally:
        p.close()
    code, gaps = audit(db_url, capsys)
    assert code == 1 and gaps[0]["numbers"] == "TK-0002"  # not TK-00002
    assert str(gaps[0]["reason"]).startswith("reserved by a running process")
    w.check(gaps)
    code, out = run_cli(["audit", "gaps", CASE, "--db", db_url], capsys)
    assert code == 1 and "  scope 'global': TK-0002 (counter 2): reserved by a running process" in out


def test_a_retired_scope_keeps_its_gaps_and_reasons(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """per_day → global retires the day's row: its gap stays listed under the day's key."""
    p = make_platform(db_url)
    w = Writer(p)
    try:
        field_set(db_url, capsys, "--format", "D{YYYY}{MM}{DD}-{000}", "--scope", "per_day")
        w.refresh()
        w.insert()
        w.take()
        w.roll_back()
        w.insert()
        field_set(db_url, capsys, "--format", "G-{000000}", "--scope", "global")
        w.refresh()
        w.insert()
    finally:
        p.close()
    code, gaps = audit(db_url, capsys)
    assert code == 1
    day = w.lost[0][1:9]
    assert [(g["scope_key"], g["numbers"]) for g in gaps] == [(day, lost) for lost in w.lost]
    assert str(gaps[0]["reason"]).startswith("reserved by a running process")
    if len(gaps) > 1:
        assert gaps[1]["reason"] == "rolled back"
    w.check(gaps)


def test_a_sequence_of_changes(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Format, global → per_day, per_day → global, time zone: each gap in the format of its time."""
    p = make_platform(db_url)
    w = Writer(p)
    steps = [
        ("--format", "TK-{0000}"),
        ("--format", "TK-{00000}"),
        ("--format", "D{YYYY}{MM}{DD}-{000}", "--scope", "per_day"),
        ("--format", "G{YYYY}{MM}{DD}-{000000}", "--scope", "global"),
        ("--format", "G{YYYY}{MM}{DD}-{000000}", "--time-zone", "Pacific/Kiritimati"),
        ("--format", "D{YYYY}{MM}{DD}-{000}", "--scope", "per_day", "--time-zone", "UTC"),
        ("--format", "TK-{00000}", "--scope", "global"),
    ]
    try:
        for step in steps:
            field_set(db_url, capsys, *step)
            w.refresh()
            w.insert()
            w.take()
            w.roll_back()
            w.insert()
            code, gaps = audit(db_url, capsys)
            assert code == 1
            w.check(gaps)
    finally:
        p.close()


def test_joining_and_leaving_a_shared_counter(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A value another member stores is never a gap, before or after a leave."""
    p = make_platform(db_url)
    try:
        for obj in ("Qt__c", "Or__c"):
            code, out = run_cli(["object", "add", obj, "--field", "Note:text(40)", "--db", db_url], capsys)
            assert code == 0, out
        for obj, prefix in (("Qt__c", "Q"), ("Or__c", "O")):
            add = ["field", "add", obj, "Doc_No__c", "--format", f"{prefix}-{{0000}}", "--db", db_url]
            code, out = run_cli(add, capsys)
            assert code == 0, out
        p.catalog.refresh()
        quote, order = Writer(p, "Qt__c", "Doc_No__c"), Writer(p, "Or__c", "Doc_No__c")
        quote.insert()
        order.insert()
        order.take()
        for obj, prefix in (("Qt__c", "Q"), ("Or__c", "O")):
            field_set(db_url, capsys, "--format", f"{prefix}-{{0000}}", "--shared-counter", "QO", obj=obj)
        p.catalog.refresh()
        for writer in (quote, order, quote):
            writer.insert()
        quote.take()
        field_set(db_url, capsys, "--format", "OR-{0000}", "--own-counter", obj="Or__c")
        p.catalog.refresh()
        order.insert()
        order.take()
        order.insert()
    finally:
        p.close()
    stored = set(quote.stored) | set(order.stored)
    for field in ("Qt__c.Doc_No__c", "Or__c.Doc_No__c"):
        code, gaps = audit(db_url, capsys, field)
        assert code == 1
        assert not {str(g["numbers"]) for g in gaps} & stored, gaps
    code, gaps = audit(db_url, capsys, "Or__c.Doc_No__c")
    assert {str(g["numbers"]) for g in gaps} >= {order.lost[0], order.lost[-1]}
