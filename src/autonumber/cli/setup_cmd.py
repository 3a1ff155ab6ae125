"""`autonumber setup apply|plan|verify|report`: thin shells over autonumber.setup."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .common import DEFAULT_URL, MAX_ROWS, DbOption, JsonOption, console, print_json, show_table

app = typer.Typer(
    rich_markup_mode=None,
    help="Bootstrap and cut over a database; verify its invariants.",
    no_args_is_help=True,
)

SpecOption = Annotated[
    Path | None,
    typer.Option(
        "--spec",
        metavar="PATH",
        help="A data-spec file (default: the generated seed module).",
        show_default=False,
    ),
]


def print_plan(as_json: bool = False) -> None:
    """The phases, in order (read-only)."""
    from rich.table import Table

    from autonumber.setup.apply import PHASES

    if as_json:
        print_json([{"n": i, "phase": p.name, "summary": p.summary} for i, p in enumerate(PHASES, 1)])
        return
    table = Table(title="setup apply phases (in order, each idempotent)")
    table.add_column("#")
    table.add_column("phase")
    table.add_column("what it does")
    for i, phase in enumerate(PHASES, 1):
        table.add_row(str(i), phase.name, phase.summary)
    show_table(table)


@app.command("apply")
def apply_cmd(
    db: DbOption = DEFAULT_URL,
    spec: SpecOption = None,
    env: Annotated[
        str, typer.Option("--env", metavar="NAME", help="Environment name, recorded with the run.")
    ] = "local",
    list_phases: Annotated[bool, typer.Option("--list", help="Only list the phases.")] = False,
    reseed: Annotated[
        bool, typer.Option("--reseed", help="Rescan every field, even ones already seeded.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the summary line.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Print every change.")] = False,
    with_guard_trigger: Annotated[
        bool,
        typer.Option(
            "--with-guard-trigger",
            help="Then install the trigger refusing rule edits outside the applier "
            "(MariaDB/MySQL, PostgreSQL).",
        ),
    ] = False,
) -> None:
    """Run the cut-over phases under the bootstrap lock; exit non-zero if any phase or verify fails.

    Example: autonumber setup apply --db sqlite:///autonumber.db --env staging
    """
    if list_phases:
        print_plan()
        return
    from autonumber.commands import setup
    from autonumber.db import mask
    from autonumber.progress import NullReporter, RichReporter

    reporter = NullReporter() if quiet else RichReporter(verbose=verbose)
    done = setup.apply_setup(db, reporter, spec=spec, reseed=reseed, with_guard_trigger=with_guard_trigger)
    if done.guard_trigger is not None:
        console().print(done.guard_trigger)
    console().print(
        f"setup apply: {done.spec_id} on {mask(db)} (env {env}): {len(done.results)} phase(s), "
        f"{done.changes} change(s), {done.seconds:.2f} s; verify passed"
    )


@app.command("plan")
def plan_cmd(as_json: JsonOption = False) -> None:
    """List the phases `setup apply` runs, in order, without touching a database.

    Example: autonumber setup plan --json
    """
    print_plan(as_json)


@app.command("verify")
def verify_cmd(as_json: JsonOption = False, db: DbOption = DEFAULT_URL) -> None:
    """Check V1–V7 (docs/setup.md); exit 1 with one line per violation, each starting with its code.

    Example: autonumber setup verify --db postgresql+psycopg://postgres@127.0.0.1/autonumber
    """
    from dataclasses import asdict

    from autonumber.commands import setup

    violations = setup.verify_setup(db)
    if as_json:
        print_json({"passed": not violations, "violations": [asdict(v) for v in violations]})
        raise typer.Exit(1 if violations else 0)
    if violations:
        for line in violations:
            typer.echo(str(line))
        raise typer.Exit(1)
    typer.echo("verify: V1–V7 hold")


@app.command("report")
def report_cmd(
    db: Annotated[
        str,
        typer.Option(
            "--db",
            metavar="URL",
            envvar="AUTONUMBER_SCRATCH_DATABASE_URL",
            help="A SCRATCH database URL. EVERY TABLE IN IT IS DROPPED, several times.",
        ),
    ],
    rows: Annotated[
        int,
        typer.Option(
            "--rows", metavar="N", min=1, max=MAX_ROWS, help="Legacy demo rows for the populated state."
        ),
    ] = 2000,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print markdown tables.")] = False,
) -> None:
    """Run the three-part deployment verification report (docs/setup.md) against a SCRATCH database.

    WARNING: the database named by --db is WIPED (all tables dropped) before each scenario.

    Example: autonumber setup report --db sqlite:///scratch.db --markdown
    """
    from autonumber.commands import setup

    report = setup.scratch_report(db, rows)
    if markdown:
        typer.echo(report.markdown())
    else:
        report.print(console())
    if not report.passed:
        raise typer.Exit(1)
