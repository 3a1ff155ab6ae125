"""Setting a database up: schema, cut-over (`setup apply`), verify, the scratch report, demo data."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from autonumber.db import parse_url
from autonumber.db.sqlite import make_file
from autonumber.db.status import DatabaseStatus, database_status
from autonumber.progress import Reporter
from autonumber.rules import Finding, verify
from autonumber.setup.apply import PhaseResult, apply
from autonumber.setup.demo import DemoSummary, fill_legacy
from autonumber.setup.generate import default_spec, load_spec
from autonumber.setup.report import Report, run_report
from autonumber.setup.upgrade import upgrade
from autonumber.specapply.trigger import check_guard_supported, install_guard_trigger

from .session import opened


@dataclass(frozen=True)
class SetupOutcome:
    """What `setup apply` did: the spec applied, each phase's result, the guard trigger's line."""

    spec_id: str
    results: list[PhaseResult]
    guard_trigger: str | None = None

    @property
    def changes(self) -> int:
        """Changes made over every phase."""
        return sum(len(r.changes) for r in self.results)

    @property
    def seconds(self) -> float:
        """Time taken over every phase."""
        return sum(r.seconds for r in self.results)


def apply_setup(
    url: str,
    reporter: Reporter,
    *,
    spec: Path | None = None,
    reseed: bool = False,
    with_guard_trigger: bool = False,
) -> SetupOutcome:
    """Run the cut-over phases on `url` (verify binding); optionally install the guard trigger."""
    data = load_spec(spec)
    with opened(url, schema=False) as engine:  # its schema phase runs the migrations
        if with_guard_trigger:
            check_guard_supported(engine)
        results = apply(engine, data, reporter=reporter, reseed=reseed)
        guard = install_guard_trigger(engine) if with_guard_trigger else None
    return SetupOutcome(data.meta.id, results, guard)


def verify_setup(url: str) -> list[Finding]:
    """The V1-V7 violations of the database at `url` (empty when every invariant holds)."""
    with opened(url) as engine:
        return verify(engine)


def scratch_report(url: str, rows: int) -> Report:
    """The three-part deployment verification report; the SCRATCH database at `url` is wiped."""
    return run_report(url, rows=rows)


def upgrade_schema(url: str, reporter: Reporter | None = None, *, page_size: int | None = None) -> list[str]:
    """Create the system tables at this release's schema version, or bring an older database up
    to it with the numbered migrations (`db init` and `db upgrade`); the changes made.
    `page_size`: a SQLite file that does not exist yet is made with pages of that many bytes."""
    made = page_size is not None and make_file(parse_url(url), page_size)
    with opened(url, schema=False) as engine:
        changes = upgrade(engine, reporter)
    return [f"database file made with {page_size}-byte pages", *changes] if made else changes


def status(url: str) -> DatabaseStatus:
    """A read-only summary of the database at `url` (any schema version)."""
    with opened(url, schema=False) as engine:
        return database_status(engine)


def demo_legacy(url: str, rows: int, reporter: Reporter) -> DemoSummary:
    """Fill a throw-away database with pre-cutover objects and legacy tables."""
    with opened(url, schema=False) as engine:
        return fill_legacy(engine, default_spec(), rows, reporter)
