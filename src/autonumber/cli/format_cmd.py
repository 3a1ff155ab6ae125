"""`autonumber format check|preview`: thin shells over autonumber.format (no database needed).

`check` calls `check_format()`; a caller that has a catalog (the `--object/--db` options) passes
it as `catalog=` and `source_object=` to the same function to add the metadata rules 4-10.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, tzinfo
from typing import TYPE_CHECKING, Annotated

import typer

from autonumber.api_names import API_NAME_PATTERN
from autonumber.errors import ConfigError

from .common import DEFAULT_URL, MAX_COUNTER, DbOption, FiscalYearStartOption, Scope, choices

if TYPE_CHECKING:
    from autonumber.format import FormatReport

app = typer.Typer(rich_markup_mode=None, help="Check and preview display formats.", no_args_is_help=True)

_SET = re.compile(rf"({API_NAME_PATTERN}\.{API_NAME_PATTERN})=(.*)", re.DOTALL)

FormatArg = Annotated[
    str,
    typer.Argument(
        metavar="FORMAT",
        help="Display format, e.g. 'IBG-B-{YYYY}{MM}{DD}-{000000}' (quote it for the shell).",
        show_default=False,
    ),
]


def print_report(report: FormatReport) -> None:
    """Print a check report, one fact per line."""
    for line in report.lines():
        typer.echo(line)


@app.command("check")
def check(
    fmt: FormatArg,
    scope: Annotated[
        str,
        typer.Option(
            "--scope",
            metavar=choices(Scope),
            help="Counter scope (another value is reported as rule 9).",
        ),
    ] = "global",
    object_name: Annotated[
        str | None,
        typer.Option(
            "--object",
            metavar="OBJECT",
            help="Also check the metadata rules 4-10 against this object of the database's catalog.",
        ),
    ] = None,
    field: Annotated[
        str | None,
        typer.Option(
            "--field", metavar="FIELD", help="With --object: the target column, for the length rule 5."
        ),
    ] = None,
    db: DbOption = DEFAULT_URL,
) -> None:
    """Check FORMAT against the grammar (rules 0-2) and its scope (rule 9); exit 2 if invalid.

    With --object the metadata rules run too: unknown objects/fields, FK paths, formula targets,
    record-type columns, chain depth and rendered length.

    Example: autonumber format check '{Account.BillingCountryCode}-QT-{YY}{MM}{DD}-{00}' --object Quote
    """
    from autonumber.format import check_format

    if object_name is None:
        print_report(check_format(fmt, scope=scope))
        return
    from autonumber.commands import catalog

    snapshot = catalog.snapshot(db)
    snapshot.require_object(object_name)
    print_report(
        check_format(fmt, scope=scope, catalog=snapshot, source_object=object_name, target_field=field)
    )


def parse_at(value: str | None, zone: tzinfo = UTC) -> datetime:
    """--at: YYYY-MM-DD is midnight of that day in `zone`; an ISO datetime is that instant (UTC when
    it has no offset); absent, now."""
    from autonumber.format.zones import check_instant

    if value is None:
        return datetime.now(UTC)
    try:
        if re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", value):
            return check_instant(datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=zone), zone)
        if not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9:.]+(Z|[+-][0-9:]+)?", value):
            raise ValueError(value)
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ConfigError(
            f"--at {value!r} is not a date; use YYYY-MM-DD or an ISO datetime with its offset, "
            "e.g. 2026-04-17 or 2026-04-17T20:00:00+00:00"
        ) from None
    return check_instant(moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC), zone)


def parse_sets(
    values: list[str] | None, needed: list[str], optional: list[str] | None = None
) -> dict[str, str]:
    """--set Object.Field=VALUE pairs; every cross token of the format needs one (those in
    `optional`, which have a default, may go without), nothing else."""
    optional = optional or []
    out: dict[str, str] = {}
    for item in values or []:
        m = _SET.fullmatch(item)
        if m is None or not m.group(2):
            raise ConfigError(
                f"--set {item!r} is not Object.Field=VALUE with a non-empty value, "
                "e.g. --set Account.BillingCountryCode=SG"
            )
        if m.group(1) not in needed and m.group(1) not in optional:
            raise ConfigError(
                f"--set {m.group(1)}: the format has no token {{{m.group(1)}}} "
                f"(its cross-record tokens: {', '.join([*needed, *optional]) or 'none'})"
            )
        out[m.group(1)] = m.group(2)
    missing = [k for k in needed if k not in out]
    if missing:
        raise ConfigError("the format needs a value for " + ", ".join(f"--set {k}=VALUE" for k in missing))
    return out


@app.command("preview")
def preview(
    fmt: FormatArg,
    counter: Annotated[
        int, typer.Option("--counter", metavar="N", min=0, max=MAX_COUNTER, help="Counter value to render.")
    ] = 1,
    at: Annotated[
        str | None,
        typer.Option(
            "--at",
            metavar="WHEN",
            help="Assigned-at moment: YYYY-MM-DD (that day in --time-zone) or an ISO "
            "datetime with offset, e.g. 2026-04-17T20:00:00+00:00; default now.",
            show_default=False,
        ),
    ] = None,
    time_zone: Annotated[
        str,
        typer.Option(
            "--time-zone", metavar="ZONE", help="IANA zone whose calendar dates the value, e.g. Asia/Tokyo."
        ),
    ] = "UTC",
    sets: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="Object.Field=VALUE",
            help="Value of a cross-record token; repeat for each token (a token with a "
            "|default shows it when not set).",
            show_default=False,
        ),
    ] = None,
    fiscal_year_start: FiscalYearStartOption = 1,
) -> None:
    """Print the value FORMAT renders; consumes no number and touches no database.

    Example: autonumber format preview 'SO-{YY}{MM}{DD}-{00}' --counter 7 --at 2026-04-17
    """
    from autonumber.format import parse_format
    from autonumber.format.dates import check_fiscal_year_start
    from autonumber.format.zones import zone_of

    check_fiscal_year_start(fiscal_year_start, "--fiscal-year-start")
    parsed = parse_format(fmt)
    zone = zone_of(time_zone)
    refs = parsed.cross_refs
    needed = [r.key for r in refs if r.default is None]
    cross = parse_sets(sets, needed, [r.key for r in refs if r.default is not None])
    moment = parse_at(at, zone)
    shown = parsed.render(
        counter, moment, cross, field_id="preview", zone=zone, fiscal_year_start=fiscal_year_start
    )
    typer.echo(shown)
