"""`autonumber audit gaps|prune`: which numbers were consumed and never stored, and why."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import typer

from autonumber.errors import ConfigError

if TYPE_CHECKING:
    from autonumber.audit import GapReport

from .common import DEFAULT_URL, MAX_COUNTER, DbOption, KeyArg, NameArg, field_key

app = typer.Typer(
    rich_markup_mode=None,
    help="Audit the numbers a counter moved past; prune the reservation journal.",
    no_args_is_help=True,
)


@app.command("gaps")
def gaps_cmd(
    field: KeyArg,
    name: NameArg = None,
    scope_key: Annotated[
        str | None,
        typer.Option("--scope-key", metavar="KEY", help="Only this counter scope.", show_default=False),
    ] = None,
    lo: Annotated[
        int | None,
        typer.Option(
            "--from", metavar="N", min=0, max=MAX_COUNTER, help="Lowest value checked.", show_default=False
        ),
    ] = None,
    hi: Annotated[
        int | None,
        typer.Option(
            "--to", metavar="N", min=0, max=MAX_COUNTER, help="Highest value checked.", show_default=False
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    db: DbOption = DEFAULT_URL,
) -> None:
    """List every value the counter moved past that no stored record carries, with the reason.

    Exit 0 when there are no gaps, 1 when there are.

    Example: autonumber audit gaps Case.CaseNumber --json
    """
    if lo is not None and hi is not None and hi < lo:
        raise ConfigError(f"--to {hi} is below --from {lo}")
    from autonumber.commands import audit

    report = audit.gaps(db, field_key(field, name), scope_key=scope_key, lo=lo, hi=hi)
    if as_json:
        typer.echo(json.dumps(_as_dict(report), ensure_ascii=False))
    else:
        _print(report)
    raise typer.Exit(1 if report.gaps else 0)


def _as_dict(report: GapReport) -> dict[str, object]:
    from autonumber.commands.audit import gap_json

    return {**asdict(report), "gaps": [gap_json(g) for g in report.gaps]}


def _iso(at: datetime | None) -> str | None:
    return None if at is None else at.isoformat()


def _print(report: GapReport) -> None:
    head = f"{report.field} ({report.numbering}): {report.checked} value(s) checked, {report.missing} missing"
    typer.echo(head)
    for g in report.gaps:
        values = str(g.first) if g.first == g.last else f"{g.first}-{g.last} ({g.count})"
        shown = f"{g.numbers} (counter {values})" if g.numbers else values
        when = f"; reserved {_iso(g.reserved_at)}" if g.reserved_at else ""
        when += f", released {_iso(g.released_at)}" if g.released_at else ""
        when += f"; by {g.caller}" if g.caller else ""
        typer.echo(f"  scope {g.scope_key or 'global'!r}: {shown}: {g.reason}{when}")


@app.command("prune")
def prune_cmd(
    older_than: Annotated[
        str,
        typer.Option(
            "--older-than",
            metavar="AGE",
            help="Age of the lines to delete: 90d, 12h, 30m.",
            show_default=False,
        ),
    ],
    db: DbOption = DEFAULT_URL,
) -> None:
    """Delete reservation-journal lines older than the given age (gaps they explained become "unknown").

    Example: autonumber audit prune --older-than 400d
    """
    from autonumber.commands import audit
    from autonumber.engine.journal import MAX_AGE, parse_age

    try:
        age = parse_age(older_than)
    except ValueError:
        raise ConfigError(
            f"--older-than {older_than!r} is not an age up to {MAX_AGE.days}d; use e.g. 90d, 12h or 30m"
        ) from None
    removed = audit.prune_journal(db, age)
    typer.echo(f"removed {removed} journal line(s) older than {older_than}")
