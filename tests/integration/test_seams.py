"""Where features meet: a randomised state machine (hypothesis) whose steps cross the write paths and
the rule changes, checking after every step what the product promises as a whole.

Steps: inserts (one, many, committed-batch streams, a caller's transaction that commits or rolls
back), `field set` (format, global ↔ per_day scope, time zone, gapless ↔ standard numbering, single
↔ blocks allocation, column length, leaving and joining a shared counter), `counter set`, a field
removed and added again, a field added with backfill, and rows written outside the product at or
just above a counter's next number.
Invariants after every step:

- no rendered number twice within a field, nor within a shared counter's members, ever — a number
  handed out once (even if its caller rolled back) is never handed out again;
- no counter value twice within a counter's scope (a format change keeps the counter);
- `setup verify` finds nothing but the write holes the machine itself made (a stored row ahead of a
  counter that no insert has met yet);
- the gap audit of every field runs and lists no stored number.

It runs on SQLite in the quick loop and on MariaDB and PostgreSQL (longer runs) in the full suite;
AUTONUMBER_SEAMS_SCALE=N makes N times as many runs. A failure prints
the steps and the blob that replays it (`@reproduce_failure`).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test
from sqlalchemy.engine import make_url

import autonumber
import testdb
from autonumber.audit import audit_gaps
from autonumber.db.tables import counter_table
from autonumber.errors import NumberAlreadyStored
from autonumber.objects.custom import add_object
from autonumber.rules.verify import verify
from autonumber.runtime import Platform
from support import bootstrap_url, run_cli

_RUNS = itertools.count(1)
SCALE = int(os.environ.get("AUTONUMBER_SEAMS_SCALE", "1"))
"""How many times the usual number of runs to make: a long hunt sets it (CONTRIBUTING.md)."""
FORMATS = {
    "No__c": ["JM-{0000}", "JM-{00000}", "JX-{0000}"],
    "Doc__c": ["DOC-{000000}"],
    "Day__c": ["D{YYYY}{MM}{DD}-{000}"],
    "Gap__c": ["G-{0000}"],
}
DAILY = "JM{YYYY}{MM}{DD}-{0000}"
ZONES = ["UTC", "Asia/Tokyo", "America/Los_Angeles"]


@dataclass
class Field:
    """What the machine knows of one autonumber field."""

    object_name: str
    name: str
    formats: list[tuple[str, str]] = field(default_factory=list)  # every (format, scope) it had, current last
    counters: set[str] = field(default_factory=set)  # every counter it ever drew from


class Seams(RuleBasedStateMachine):
    """One run: two fresh objects in the test's database, their fields, and every number seen."""

    def __init__(self, url: str, cli: Callable[[list[str]], tuple[int, str]]) -> None:
        super().__init__()
        self.url, self.cli = url, cli
        self.p: Platform = autonumber.connect(url)
        run = next(_RUNS)
        self.a, self.b = f"SeamA{run}__c", f"SeamB{run}__c"
        self.shared = f"docs{run}"
        self.fields: dict[str, Field] = {}
        self.issued: dict[str, set[str]] = {}  # field → every rendered number it handed out
        self.values: dict[str, set[tuple[str, int]]] = {}  # counter id → (scope key, counter value)
        self.raw: dict[str, set[str]] = {}  # field → values rows written outside the product hold

    @initialize()
    def objects(self) -> None:
        with self.p.db.begin() as conn:
            add_object(conn, self.a, ["Name:text(40)"])
            add_object(conn, self.b, ["Name:text(40)"])
        for obj, name, scope, extra in (
            (self.a, "No__c", "global", []),
            (self.a, "Day__c", "per_day", []),
            (self.a, "Doc__c", "global", ["--shared-counter", self.shared]),
            (self.b, "Doc__c", "global", ["--shared-counter", self.shared]),
            (self.b, "Gap__c", "global", ["--numbering", "gapless"]),
        ):
            fmt = FORMATS[name][0]
            self.field_cli("add", obj, name, fmt, "--scope", scope, *extra)
            self.fields[f"{obj}.{name}"] = Field(obj, name, [(fmt, scope)])
        self.p.catalog.refresh()
        self.note_counters()

    def note_counters(self) -> None:
        snapshot = self.p.catalog.current()
        for key, f in self.fields.items():
            f.counters.add(snapshot.rule(key).counter_id)

    def field_cli(self, verb: str, obj: str, name: str, fmt: str, *options: str) -> None:
        code, out = self.cli(["field", verb, obj, name, "--format", fmt, *options, "--db", self.url])
        assert code == 0, out

    def teardown(self) -> None:
        self.p.close()

    # -- what a number tells ------------------------------------------------------------------

    def members(self, key: str) -> list[str]:
        """The fields drawing from the counter `key` draws from now (itself included)."""
        snapshot = self.p.catalog.current()
        counter = snapshot.rule(key).counter_id
        return [k for k in self.fields if snapshot.rule(k).counter_id == counter]

    def took(self, obj: str, record: dict[str, object]) -> None:
        """Check and remember every number of one record as it was handed out."""
        for key, f in self.fields.items():
            if f.object_name != obj or record.get(f.name) is None:
                continue
            value = str(record[f.name])
            for member in self.members(key):
                assert value not in self.issued.get(member, set()), (
                    f"{key}: {value} handed out twice ({member})"
                )
            assert value not in self.raw.get(key, set()), f"{key}: {value} handed out over a stored row"
            self.issued.setdefault(key, set()).add(value)
            rule = self.p.catalog.current().rule(key)
            match = rule.format.scan_pattern().match(value)
            assert match is not None, (key, value)
            seen = self.values.setdefault(rule.counter_id, set())
            assert (match.scope_key(rule.scope), match.counter) not in seen, (key, value)
            seen.add((match.scope_key(rule.scope), match.counter))

    def next_value(self, key: str) -> tuple[str, int]:
        """The format and next counter value of a global field (its counter row)."""
        rule = self.p.catalog.current().rule(key)
        t = counter_table
        with self.p.db.connect() as conn:
            nxt = conn.execute(
                sa.select(t.c.next_value).where(t.c.field_id == rule.counter_id, t.c.scope_key == "")
            ).scalar_one()
        return rule.format.source, int(nxt)

    # -- steps --------------------------------------------------------------------------------

    @rule(which=st.sampled_from("ab"), n=st.integers(1, 3))
    def insert(self, which: str, n: int) -> None:
        obj = self.a if which == "a" else self.b
        rows = [{"Name": f"r{i}"} for i in range(n)]
        got = [self.p.records.insert(obj, rows[0])] if n == 1 else self.p.records.insert_many(obj, rows)
        for record in got:
            self.took(obj, record)

    @rule(which=st.sampled_from("ab"), commit=st.booleans())
    def in_callers_transaction(self, which: str, commit: bool) -> None:
        obj = self.a if which == "a" else self.b
        record = self.callers_insert(obj, commit)
        # a rolled-back number is never handed out again, except where it was taken inside the
        # transaction and went back with it: a gapless field's, and every one on SQLite (docs/engine.md)
        if commit:
            self.took(obj, record)
        elif self.p.engine.dialect.name != "sqlite":
            gapless = {
                f.name
                for k, f in self.fields.items()
                if self.p.catalog.current().rule(k).numbering == "gapless"
            }
            self.took(obj, {k: v for k, v in record.items() if k not in gapless})

    def callers_insert(self, obj: str, commit: bool) -> dict[str, object]:
        """One insert in a caller's transaction. Where a duplicate key aborts the transaction
        (PostgreSQL), meeting a stored value raises NumberAlreadyStored after the counter moved past
        it, and the caller runs the transaction again, as the message says."""
        for _ in range(3):
            conn = self.p.db.connect()
            try:
                txn = conn.begin()
                try:
                    record = self.p.records.insert(obj, {"Name": "t"}, conn)
                except NumberAlreadyStored:
                    assert self.p.engine.dialect.error_aborts_transaction
                    continue
                if commit:
                    txn.commit()
                else:
                    txn.rollback()
                return record
            finally:
                conn.close()
        raise AssertionError(f"{obj}: three stored values met in a row")

    @rule(key=st.sampled_from(["No__c", "Doc__c", "Gap__c"]), offset=st.integers(0, 2), on_b=st.booleans())
    def raw_row(self, key: str, offset: int, on_b: bool) -> None:
        obj = self.b if key == "Gap__c" or (key == "Doc__c" and on_b) else self.a
        if self.p.catalog.current().rule(f"{obj}.{key}").scope != "global":
            return
        _, nxt = self.next_value(f"{obj}.{key}")
        rule = self.p.catalog.current().rule(f"{obj}.{key}")
        value = rule.render(nxt + offset, datetime.now(UTC), {}, "")
        table = self.p.catalog.current().table(obj)
        row = {"Id": f"raw{next(_RUNS)}", "CreatedDate": datetime.now(UTC), "Name": "raw", key: value}
        with self.p.db.begin() as conn:
            taken = conn.execute(sa.select(table.c.Id).where(table.c[key] == value)).first()
            if taken is None:
                conn.execute(sa.insert(table).values(row))
        if taken is None:
            # the column's UNIQUE index guards this field; another member of a shared counter does not
            # see the row (docs/engine.md, "Values stored behind the counter's back")
            self.raw.setdefault(f"{obj}.{key}", set()).add(value)

    @rule(which=st.sampled_from("ab"), n=st.integers(1, 4))
    def stream(self, which: str, n: int) -> None:
        obj = self.a if which == "a" else self.b
        rows = ((f"line {i}", {"Name": f"s{i}"}) for i in range(n))
        for batch in self.p.records.insert_stream(obj, rows, batch_size=2, commit_each=True):
            for record in batch.records():
                self.took(obj, record)

    @rule()
    def leave_or_join(self) -> None:
        """B's document number leaves the shared counter for a format of its own, or joins again."""
        f = self.fields[f"{self.b}.Doc__c"]
        if self.p.catalog.current().rule(f"{self.b}.Doc__c").shared_counter:
            self.field_cli("set", self.b, "Doc__c", "BD-{000000}", "--own-counter")
            f.formats.append(("BD-{000000}", "global"))
        else:
            self.field_cli("set", self.b, "Doc__c", "DOC-{000000}", "--shared-counter", self.shared)
            f.formats.append(("DOC-{000000}", "global"))
        self.p.catalog.refresh()
        self.note_counters()

    @rule(fmt=st.sampled_from(FORMATS["No__c"]))
    def format_change(self, fmt: str) -> None:
        f = self.fields[f"{self.a}.No__c"]
        if f.formats[-1] != (fmt, "global"):
            self.field_cli("set", self.a, "No__c", fmt, "--scope", "global")
            f.formats.append((fmt, "global"))
            self.p.catalog.refresh()
            self.note_counters()

    @rule()
    def scope_change(self) -> None:
        """A.No__c moves to a per_day format, or back to global."""
        f = self.fields[f"{self.a}.No__c"]
        fmt, scope = (FORMATS["No__c"][0], "global") if f.formats[-1][1] == "per_day" else (DAILY, "per_day")
        self.field_cli("set", self.a, "No__c", fmt, "--scope", scope)
        f.formats.append((fmt, scope))
        self.p.catalog.refresh()
        self.note_counters()

    @rule(zone=st.sampled_from(ZONES))
    def time_zone_change(self, zone: str) -> None:
        self.field_cli("set", self.a, "Day__c", FORMATS["Day__c"][0], "--time-zone", zone)
        self.p.catalog.refresh()

    @rule(key=st.sampled_from(["No__c", "Gap__c"]), by=st.integers(1, 5))
    def counter_set(self, key: str, by: int) -> None:
        obj = self.b if key == "Gap__c" else self.a
        if self.p.catalog.current().rule(f"{obj}.{key}").scope != "global":
            return
        _, nxt = self.next_value(f"{obj}.{key}")
        code, out = self.cli(["counter", "set", obj, key, "--next", str(nxt + by), "--db", self.url])
        assert code == 0, out

    @rule()
    def remove_and_add_again(self) -> None:
        """A.No__c loses its rule (the values stay) and gets one again: it goes on above every
        value it ever handed out."""
        f = self.fields[f"{self.a}.No__c"]
        code, out = self.cli(["field", "remove", self.a, "No__c", "--db", self.url])
        assert code == 0, out
        fmt = FORMATS["No__c"][0]
        self.field_cli("add", self.a, "No__c", fmt, "--scope", "global")
        f.formats.append((fmt, "global"))
        self.p.catalog.refresh()
        self.note_counters()

    @rule(length=st.sampled_from([20, 30, 60]))
    def length_change(self, length: int) -> None:
        """A.No__c's column is resized (every value it holds fits in 20)."""
        fmt, scope = self.fields[f"{self.a}.No__c"].formats[-1]
        self.field_cli("set", self.a, "No__c", fmt, "--scope", scope, "--length", str(length))
        self.p.catalog.refresh()

    @rule()
    def numbering_change(self) -> None:
        """B.Gap__c moves between gapless and standard numbering."""
        current = self.p.catalog.current().rule(f"{self.b}.Gap__c").numbering
        other = "standard" if current == "gapless" else "gapless"
        self.field_cli("set", self.b, "Gap__c", FORMATS["Gap__c"][0], "--numbering", other)
        self.p.catalog.refresh()

    @rule(size=st.sampled_from([0, 3, 10]))
    def allocation_change(self, size: int) -> None:
        """A.No__c hands out numbers one reservation each, or from blocks this process holds."""
        f = self.fields[f"{self.a}.No__c"]
        fmt, scope = f.formats[-1]
        allocation = f"blocks:{size}" if size else "single"
        self.field_cli("set", self.a, "No__c", fmt, "--scope", scope, "--allocation", allocation)
        self.p.catalog.refresh()

    @rule()
    def backfill(self) -> None:
        """A new field on A numbers the rows A already holds (once a run)."""
        key = f"{self.a}.Late__c"
        if key in self.fields:
            return
        self.field_cli("add", self.a, "Late__c", "L-{00000}", "--backfill", "--batch-size", "3")
        self.fields[key] = Field(self.a, "Late__c", [("L-{00000}", "global")])
        self.p.catalog.refresh()
        self.note_counters()
        column = self.p.catalog.current().table(self.a).c.Late__c
        with self.p.db.connect() as conn:
            values = conn.execute(sa.select(column)).scalars().all()
        assert None not in values, "backfill left a row without a number"
        for value in values:
            self.took(self.a, {"Late__c": value})

    # -- invariants ---------------------------------------------------------------------------

    @invariant()
    def verify_finds_only_the_holes_made(self) -> None:
        holes = self.holes()
        findings = [f for f in verify(self.p.db)]
        unexpected = [f.message for f in findings if not ("write hole" in f.message and f.field_id in holes)]
        assert unexpected == [], unexpected

    def holes(self) -> set[str]:
        """The global fields holding a raw row at or above their counter's next value: the write
        holes the machine made, which verify reports until an insert meets them."""
        out = set()
        snapshot = self.p.catalog.current()
        for key, values in self.raw.items():
            rule = snapshot.rule(key)
            if rule.scope != "global":
                continue
            _, nxt = self.next_value(key)
            counters = [m.counter for v in values if (m := rule.format.scan_pattern().match(v)) is not None]
            if any(n >= nxt for n in counters):
                out.add(key)
        return out

    @invariant()
    def the_audit_lists_no_stored_number(self) -> None:
        for key, f in self.fields.items():
            report = audit_gaps(self.p, key)
            stored = self.stored_values(f)
            for gap in report.gaps:
                clash = {v for v in range(gap.first, gap.last + 1) if (gap.scope_key, v) in stored}
                assert not clash, f"{key}: the audit lists stored value(s) {sorted(clash)} as a gap {gap}"

    def stored_values(self, f: Field) -> set[tuple[str, int]]:
        """(scope key, counter) of every value stored in the columns that ever drew from a counter f
        drew from, read with every (format, scope) that column had."""
        snapshot = self.p.catalog.current()
        out: set[tuple[str, int]] = set()
        for other in self.fields.values():
            if not other.counters & f.counters:
                continue
            patterns = [(autonumber.parse_format(src).scan_pattern(), scope) for src, scope in other.formats]
            column = snapshot.table(other.object_name).c[other.name]
            with self.p.db.connect() as conn:
                for value in conn.execute(sa.select(column).where(column.is_not(None))).scalars():
                    for pattern, scope in patterns:
                        match = pattern.match(str(value))
                        if match is not None:
                            out.add((match.scope_key(scope), match.counter))
        return out


def fresh(url: str, tmp_path: Path) -> str:
    """A fresh copy of the core pack for one run: a new SQLite file, or the server database emptied."""
    if make_url(url).get_backend_name() == "sqlite":
        url = f"sqlite:///{tmp_path / f'seams{next(_RUNS)}.db'}"
    else:
        testdb.make_empty(url)
    bootstrap_url(url)
    return url


def run_seams(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], examples: int, steps: int
) -> None:
    def machine() -> Seams:
        return Seams(fresh(url, tmp_path), lambda argv: run_cli(argv, capsys))

    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=examples * SCALE,
            stateful_step_count=steps,
            deadline=None,
            print_blob=True,
            suppress_health_check=list(HealthCheck),
        ),
    )


@pytest.mark.timeout(600)
@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_features_crossed_at_random_keep_every_promise_on_sqlite(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_seams(db_url, tmp_path, capsys, examples=8, steps=30)


@pytest.mark.timeout(900)
def test_features_crossed_at_random_keep_every_promise_on_a_server(
    server_db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_seams(server_db_url, tmp_path, capsys, examples=10, steps=40)
