"""`setup report`: the deployment report (docs/deployment-report.md) from runs on a SCRATCH database.

Three tables: idempotency (three sequential applies on a populated legacy database), concurrency
(three `autonumber setup apply` processes at once on an empty one) and multi-state startup (empty,
populated legacy, already cut over). Every scenario starts by DROPPING EVERY TABLE in the database.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from rich.console import Console
from rich.table import Table
from sqlalchemy.engine import Engine

import autonumber
from autonumber.db import check_reachable, create_engine, mask
from autonumber.db.schema import table_names
from autonumber.db.tables import (
    AUTONUMBER_COLUMNS,
    LEGACY_TABLES,
    counter_table,
    system_field,
    system_record_type,
)
from autonumber.rules.verify import verify

from .apply import apply
from .dataspec import DataSpec
from .demo import fill_legacy
from .generate import default_spec


@dataclass(frozen=True)
class Row:
    """One line of a report table."""

    check: str
    method: str
    observed: str
    passed: bool


@dataclass
class Report:
    """The three tables, for one backend."""

    url: str
    backend: str
    tables: dict[str, list[Row]] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """True when every row passed."""
        return all(r.passed for rows in self.tables.values() for r in rows)

    def markdown(self) -> str:
        """The report as markdown tables."""
        out = [f"### {self.backend} — `{self.url}`", ""]
        for title, rows in self.tables.items():
            out += [f"**{title}**", "", "| check | method | observed | result |", "|---|---|---|---|"]
            out += [
                f"| {r.check} | {r.method} | {r.observed} | {'PASS' if r.passed else 'FAIL'} |" for r in rows
            ]
            out.append("")
        out.append(f"Overall: **{'PASS' if self.passed else 'FAIL'}**")
        return "\n".join(out)

    def print(self, console: Console) -> None:
        """The report as Rich tables."""
        for title, rows in self.tables.items():
            table = Table(title=f"{title} — {self.backend} {self.url}")
            for col in ("check", "method", "observed", "result"):
                table.add_column(col)
            for r in rows:
                table.add_row(r.check, r.method, r.observed, "PASS" if r.passed else "FAIL")
            console.print(table)
        console.print(f"overall: {'PASS' if self.passed else 'FAIL'}")


def wipe(engine: Engine) -> None:
    """Drop every table of the scratch database."""
    metadata = sa.MetaData()
    metadata.reflect(engine)
    metadata.drop_all(engine)


def snapshot(engine: Engine) -> dict[str, Any]:
    """The state that must not change between applies: every rule attribute and the column length,
    counters, record-type codes."""
    f, c, r = system_field, counter_table, system_record_type
    with engine.connect() as conn:
        return {
            "fields": sorted(
                tuple(x)
                for x in conn.execute(
                    sa.select(f.c.Id, f.c.MaxLength, *(f.c[c] for c in AUTONUMBER_COLUMNS)).where(
                        f.c.auto_number_format.is_not(None)
                    )
                )
            ),
            "counters": sorted(
                tuple(x) for x in conn.execute(sa.select(c.c.field_id, c.c.scope_key, c.c.next_value))
            ),
            "codes": sorted(tuple(x) for x in conn.execute(sa.select(r.c.Id, r.c.RecordTypeCode))),
        }


def _timed(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def _engine_works(url: str) -> str:
    """Insert one Account through the engine; its number."""
    with autonumber.connect(url) as platform:
        value = platform.records.insert("Account", {"Name": "report", "BillingCountryCode": "SG"})
    return str(value["Account_ID__c"])


def idempotency(engine: Engine, url: str, spec: DataSpec, rows: int) -> list[Row]:
    """Three sequential applies on a populated legacy database (the first one cuts over)."""
    wipe(engine)
    fill_legacy(engine, spec, rows)
    times, states = [], []
    for _ in range(3):
        times.append(_timed(lambda: apply(engine, spec)))
        states.append(snapshot(engine))
    ratios = [t / times[0] for t in times[1:]]
    legacy_left = [t.name for t in LEGACY_TABLES if t.name in table_names(engine)]
    n_counters = len(states[0]["counters"])
    return [
        Row(
            "state identical",
            f"3 × apply on demo legacy data ({rows} rows)",
            f"{n_counters} counter rows, {len(states[0]['fields'])} rules after each run",
            states[0] == states[1] == states[2],
        ),
        Row(
            "2nd/3rd run < 10 % of 1st",
            "wall time of apply()",
            f"{times[0]:.2f} s / {times[1]:.2f} s / {times[2]:.2f} s ({ratios[0]:.0%}, {ratios[1]:.0%})",
            all(r < 0.10 for r in ratios),
        ),
        Row(
            "legacy dropped once",
            "tables after the 3 runs",
            "none left" if not legacy_left else ", ".join(legacy_left),
            not legacy_left,
        ),
    ]


def concurrency(engine: Engine, url: str, spec: DataSpec) -> list[Row]:
    """Three `autonumber setup apply` processes started together on an empty database."""
    wipe(engine)
    cmd = [
        sys.executable,
        "-c",
        "from autonumber.cli import main; main()",
        "setup",
        "apply",
        "--db",
        url,
        "--quiet",
    ]
    started = time.perf_counter()
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)
    ]
    codes = [p.wait(timeout=900) for p in procs]
    elapsed = time.perf_counter() - started
    errors = [p.stderr.read().strip().splitlines()[-1:] if p.stderr else [] for p in procs]
    parallel = snapshot(engine)
    with engine.connect() as conn:
        total = conn.execute(sa.select(sa.func.count()).select_from(counter_table)).scalar_one()
    wipe(engine)
    apply(engine, spec)
    single = snapshot(engine)
    return [
        Row(
            "all exit 0",
            "3 processes at once",
            f"exit codes {codes} in {elapsed:.1f} s" + (f"; {errors}" if any(codes) else ""),
            codes == [0, 0, 0],
        ),
        Row(
            "final state = single apply",
            "compare with a fresh single apply",
            f"{len(parallel['counters'])} counter rows, {len(parallel['fields'])} rules",
            parallel == single,
        ),
        Row(
            "no duplicate counter rows",
            "COUNT(*) vs distinct (field_id, scope_key)",
            f"{total} rows, {len(parallel['counters'])} distinct",
            total == len(parallel["counters"]),
        ),
    ]


def multi_state(engine: Engine, url: str, spec: DataSpec, rows: int) -> list[Row]:
    """Apply on (a) an empty DB, (b) populated legacy tables with live values, (c) a cut-over DB."""
    out = []
    wipe(engine)
    took = _timed(lambda: apply(engine, spec))
    st = snapshot(engine)
    value = _engine_works(url)
    out.append(
        Row(
            "(a) empty database",
            "apply, verify, insert one Account",
            f"{len(st['counters'])} counter rows (1 per global field), {took:.2f} s; next Account {value}",
            not verify(engine) and value.endswith("-000001"),
        )
    )
    wipe(engine)
    fill_legacy(engine, spec, rows)
    took = _timed(lambda: apply(engine, spec))
    counters = {(f, k): n for f, k, n in snapshot(engine)["counters"]}
    value = _engine_works(url)
    legacy_left = [t.name for t in LEGACY_TABLES if t.name in table_names(engine)]
    hot = counters.get(("Contract.Contract_Number__c", "SG-CSA-260417-"))
    out.append(
        Row(
            "(b) legacy tables + live values",
            f"demo legacy --rows {rows}, apply, insert",
            f"{took:.2f} s; next Account {value}; SG-CSA-260417 next {hot}; legacy tables "
            f"{'dropped' if not legacy_left else 'LEFT: ' + ', '.join(legacy_left)}",
            value.endswith("-003968") and hot == 43 and not legacy_left and not verify(engine),
        )
    )
    before = snapshot(engine)
    took = _timed(lambda: apply(engine, spec))
    value = _engine_works(url)
    out.append(
        Row(
            "(c) already cut over",
            "apply again, insert",
            f"{took:.2f} s; seed skipped, state unchanged; next Account {value}",
            snapshot(engine)["fields"] == before["fields"]
            and value.endswith("-003969")
            and not verify(engine),
        )
    )
    return out


def run_report(url: str, *, rows: int = 2000, spec: DataSpec | None = None) -> Report:
    """Run the three scenarios against the SCRATCH database at `url` (it is wiped repeatedly)."""
    data = spec or default_spec()
    engine = create_engine(url)
    check_reachable(engine)
    try:
        with engine.connect() as conn:
            version = ".".join(str(v) for v in (conn.dialect.server_version_info or ()))
        report = Report(mask(url), f"{engine.dialect.name} {version}".strip())
        report.tables["Idempotency"] = idempotency(engine, url, data, rows)
        report.tables["Concurrency"] = concurrency(engine, url, data)
        report.tables["Multi-state startup"] = multi_state(engine, url, data, rows)
    finally:
        engine.dispose()
    return report
