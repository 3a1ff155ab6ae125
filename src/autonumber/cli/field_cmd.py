"""`autonumber field add|set|remove|rename`: an autonumber field's life, no code (docs/changing-rules.md).

Thin shells over `autonumber.rules`: the same plan → write → verify path as a data-spec's
`add_autonumber_field` / `set_rule`, the console and the HTTP API, in one transaction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from .common import (
    DEFAULT_URL,
    DbOption,
    FieldArg,
    JsonOption,
    KeyArg,
    NameArg,
    NamedFieldArg,
    Numbering,
    ObjectArg,
    Scope,
    choices,
    field_key,
    one_field,
    print_json,
    show_table,
)

if TYPE_CHECKING:
    from autonumber.commands.field_detail import FieldListing
    from autonumber.rules import FieldChange, RuleSpec

app = typer.Typer(
    rich_markup_mode=None,
    help="Add autonumber fields and change their rules (validated, seeded, verified).",
    no_args_is_help=True,
)

FormatOption = Annotated[
    str,
    typer.Option(
        "--format", metavar="FORMAT", help="Display format, e.g. 'MB-{000000}'.", show_default=False
    ),
]
SetFormatOption = Annotated[
    str | None,
    typer.Option(
        "--format", metavar="FORMAT", help="Display format. Default: the stored format.", show_default=False
    ),
]
NumberingOption = Annotated[
    str | None,
    typer.Option(
        "--numbering",
        metavar=choices(Numbering),
        help="standard (reserved off the caller's transaction; a rollback leaves a gap) or "
        "gapless (taken inside it, the counter row locked until it ends). Default: standard, or the "
        "stored policy for `set`.",
        show_default=False,
    ),
]
TimeZoneOption = Annotated[
    str | None,
    typer.Option(
        "--time-zone",
        metavar="ZONE",
        help="IANA zone whose calendar dates the numbers and bounds per_day/per_prefix "
        "counters, e.g. Asia/Tokyo. Default: UTC, or the stored zone for `set`.",
        show_default=False,
    ),
]
AllocationOption = Annotated[
    str | None,
    typer.Option(
        "--allocation",
        metavar="<single|blocks:N>",
        help="single (each insert reserves its numbers) or blocks:N (a process reserves N at a time "
        "and hands them out itself: unique, not in creation order across processes, a process's "
        "unused rest is a gap; refused on gapless fields). Default: single, or the stored policy for `set`.",
        show_default=False,
    ),
]


BATCH_DEFAULT = 1000
BatchOption = Annotated[
    int,
    typer.Option(
        "--batch-size",
        metavar="N",
        min=1,
        max=100_000,
        help="Rows per backfill batch (one transaction, one reservation).",
    ),
]


def _backfill(db: str, object_name: str, field: str, batch_size: int) -> None:
    """Backfill with a Rich bar on a terminal, a plain line per batch elsewhere."""
    from autonumber.commands import fields
    from autonumber.progress import RichReporter

    reporter = RichReporter()
    name = f"{object_name}.{field}"
    if reporter.console.is_terminal:
        with reporter.task(f"backfill {name}", None) as advance:
            seen = [0]

            def tick(done: int, total: int) -> None:
                advance(done - seen[0])
                seen[0] = done

            result = fields.backfill_field(db, object_name, field, batch_size, tick)
    else:
        result = fields.backfill_field(
            db,
            object_name,
            field,
            batch_size,
            lambda done, total: reporter.note(f"  {name}: {done}/{total} row(s)"),
        )
    typer.echo(result.line)


FiscalOption = Annotated[
    int | None,
    typer.Option(
        "--fiscal-year-start",
        metavar="MONTH",
        help="Month 1-12 a fiscal year starts on, for {FYYYY}/{FYY}. Default: 1 (the calendar "
        "year), or the stored month for `set`.",
        show_default=False,
    ),
]


DateSourceOption = Annotated[
    str | None,
    typer.Option(
        "--date-source",
        metavar="clock|CreatedDate|FIELD",
        help="Where the date tokens and the per_day/per_prefix days come from: the database clock, "
        "the record's CreatedDate, or one of its own date/datetime fields, e.g. InvoiceDate. "
        "Default: clock, or the stored source for `set`.",
        show_default=False,
    ),
]


SharedOption = Annotated[
    str | None,
    typer.Option(
        "--shared-counter",
        metavar="NAME",
        help="Draw from the shared counter NAME with its other members (fields of this or other "
        "objects): one sequence across them. A member must match the others' scope (global or "
        "per_day), counter width, start and allocation (per_day: time zone and date source too); "
        "standard numbering only. Default: a counter of the field's own, or the stored one for `set`.",
        show_default=False,
    ),
]


def _report(rule: RuleSpec, done: FieldChange) -> None:
    for line in done.changes:
        typer.echo(f"  {line}")
    shown = (rule.numbering, rule.time_zone, rule.allocation)
    extra = "".join(f", {v}" for v in shown if v not in ("standard", "UTC", "single"))
    extra += f", fiscal year from month {rule.fiscal_year_start}" if rule.fiscal_year_start != 1 else ""
    extra += f", dated by {rule.date_source}" if rule.date_src != "assigned_at" else ""
    extra += f", shared counter {rule.shared_counter}" if rule.shared_counter else ""
    typer.echo(
        f"{rule.name} ({done.field_id}): {rule.format} ({rule.scope}, start {rule.start}{extra}); "
        "verify passed"
    )


@app.command("add")
def add_cmd(
    object_name: ObjectArg,
    fmt: FormatOption,
    field: FieldArg = None,
    scope: Annotated[
        str, typer.Option("--scope", metavar=choices(Scope), help="The counter's scope.")
    ] = "global",
    start: Annotated[
        int, typer.Option("--start", metavar="N", min=0, help="First number when no value exists.")
    ] = 1,
    length: Annotated[
        int | None, typer.Option("--length", metavar="N", min=1, max=255, help="Column length (default 30).")
    ] = None,
    numbering: NumberingOption = None,
    time_zone: TimeZoneOption = None,
    allocation: AllocationOption = None,
    with_backfill: Annotated[
        bool,
        typer.Option(
            "--backfill", help="Then number the rows that exist, in CreatedDate then Id order (resumable)."
        ),
    ] = False,
    batch_size: BatchOption = BATCH_DEFAULT,
    fiscal_year_start: FiscalOption = None,
    date_source: DateSourceOption = None,
    shared_counter: SharedOption = None,
    db: DbOption = DEFAULT_URL,
) -> None:
    """Create the column if missing, store the validated rule and seed its counter; existing rows keep
    NULL unless --backfill numbers them.

    Example: autonumber field add Account Member_No__c --format 'MB-{000000}' --start 100 --backfill
    """
    object_name, field = one_field(object_name, field)
    from autonumber.commands import fields
    from autonumber.rules import RuleEdit

    rule = RuleEdit(
        object_name,
        field,
        format=fmt,
        scope=scope,
        start=start,
        length=length,
        numbering=numbering,
        time_zone=time_zone,
        allocation=allocation,
        fiscal_year_start=fiscal_year_start,
        date_source=date_source,
        shared_counter=shared_counter,
    ).added()
    done = fields.create_field(db, rule)
    _report(rule, done)
    if with_backfill:
        _backfill(db, object_name, field, batch_size)


@app.command("backfill")
def backfill_cmd(
    object_name: ObjectArg,
    field: FieldArg = None,
    batch_size: BatchOption = BATCH_DEFAULT,
    db: DbOption = DEFAULT_URL,
) -> None:
    """Number the rows of an autonumber field that have no number, in CreatedDate then Id order, a
    batch per transaction; run it again after an interruption to finish.

    Example: autonumber field backfill Account Member_No__c
    """
    object_name, field = one_field(object_name, field)
    _backfill(db, object_name, field, batch_size)


@app.command("set")
def set_cmd(
    object_name: ObjectArg,
    field: FieldArg = None,
    fmt: SetFormatOption = None,
    scope: Annotated[
        str | None,
        typer.Option(
            "--scope", metavar=choices(Scope), help="Default: the stored scope.", show_default=False
        ),
    ] = None,
    start: Annotated[
        int | None,
        typer.Option("--start", metavar="N", min=0, help="Default: the stored start.", show_default=False),
    ] = None,
    length: Annotated[
        int | None,
        typer.Option(
            "--length",
            metavar="N",
            min=1,
            max=255,
            help="Column length: widens a custom object's column (never below its longest value); "
            "on an adopted table, the length the application gave its column. Default: unchanged.",
            show_default=False,
        ),
    ] = None,
    numbering: NumberingOption = None,
    time_zone: TimeZoneOption = None,
    allocation: AllocationOption = None,
    fiscal_year_start: FiscalOption = None,
    date_source: DateSourceOption = None,
    shared_counter: SharedOption = None,
    own_counter: Annotated[
        bool,
        typer.Option(
            "--own-counter",
            help="Leave the shared counter: the field gets a counter of its own, above every value "
            "the shared counter and the field ever reserved.",
        ),
    ] = False,
    db: DbOption = DEFAULT_URL,
) -> None:
    """Change what is given of an autonumber field's rule (the rest stays; also repairs a
    quarantined one): stored values stay valid, counters are never lowered, a scope change moves them.

    Example: autonumber field set Account Account_ID__c --time-zone Asia/Tokyo
    """
    object_name, field = one_field(object_name, field)
    from autonumber.commands import fields
    from autonumber.rules import RuleEdit

    if own_counter and shared_counter is not None:
        raise typer.BadParameter("give --shared-counter NAME or --own-counter, not both")
    edit = RuleEdit(
        object_name,
        field,
        format=fmt,
        scope=scope,
        start=start,
        length=length,
        numbering=numbering,
        time_zone=time_zone,
        allocation=allocation,
        fiscal_year_start=fiscal_year_start,
        date_source=date_source,
        shared_counter="" if own_counter else shared_counter,
    )
    done = fields.set_field(db, edit)
    assert done.rule is not None  # a planned set always resolves its rule
    _report(done.rule, done)


@app.command("remove")
def remove_cmd(object_name: ObjectArg, field: FieldArg = None, db: DbOption = DEFAULT_URL) -> None:
    """Remove an autonumber field's rule: the column and its stored values stay (an ordinary text
    field now); added back later, the field continues above every value it ever issued.

    Example: autonumber field remove Account Member_No__c
    """
    object_name, field = one_field(object_name, field)
    from autonumber.commands import fields

    done = fields.remove_field(db, object_name, field)
    for line in done.changes:
        typer.echo(f"  {line}")
    typer.echo(f"{object_name}.{field} ({done.field_id}): rule removed, stored values kept")


@app.command("rename")
def rename_cmd(
    object_name: ObjectArg,
    field: NamedFieldArg,
    new_name: Annotated[
        str, typer.Argument(metavar="NEW", help="The field's new API name.", show_default=False)
    ],
    db: DbOption = DEFAULT_URL,
) -> None:
    """Rename an autonumber field, keeping its id, counters and history: a custom object's column is
    renamed; on an adopted table, rename the column in the application first, then follow it here.

    Example: autonumber field rename Account Member_No__c Membership_No__c
    """
    from autonumber.commands import fields

    done = fields.rename_field(db, object_name, field, new_name)
    for line in done.changes:
        typer.echo(f"  {line}")
    typer.echo(f"{object_name}.{new_name} ({done.field_id}): renamed")


@app.command("list")
def list_cmd(
    object_name: Annotated[
        str | None, typer.Argument(metavar="[OBJECT]", help="Only this object's fields.", show_default=False)
    ] = None,
    as_json: JsonOption = False,
    db: DbOption = DEFAULT_URL,
) -> None:
    """Every autonumber field: format, scope, start, numbering, time zone, state, counters, next number.

    Example: autonumber field list Case --json
    """
    from autonumber.commands import field_detail

    listed = field_detail.list_fields(db, object_name)
    if as_json:
        print_json([v.model_dump() for v in listed])
    else:
        _show(listed)


@app.command("show")
def show_cmd(
    field: KeyArg,
    name: NameArg = None,
    as_json: JsonOption = False,
    no_gaps: Annotated[
        bool,
        typer.Option("--no-gaps", help="Leave out the gap audit (it reads every stored value of the field)."),
    ] = False,
    db: DbOption = DEFAULT_URL,
) -> None:
    """Everything about one autonumber field: its rule, state, counters and their next numbers, where a
    new scope starts, per_prefix keys and the last gaps.

    Example: autonumber field show Case.CaseNumber --json
    """
    from autonumber.commands import field_detail

    from .field_show import print_detail

    detail = field_detail.show_field(db, field_key(field, name), with_gaps=not no_gaps)
    if as_json:
        print_json(detail.model_dump())
    else:
        print_detail(detail)


def _show(views: list[FieldListing]) -> None:
    from rich.table import Table

    table = Table()
    for head in ("field", "format", "scope", "start", "numbering", "time zone", "state", "counters → next"):
        table.add_column(head, overflow="fold")  # never cut a number or a format short
    for v in views:
        shown = [f"{c.scope_key or 'global'}={c.next_value} → {c.preview or '-'}" for c in v.counters[:5]]
        shown += [f"… {len(v.counters) - 5} more"] if len(v.counters) > 5 else []
        state = f"quarantined: {v.reason}" if v.status == "quarantined" else "ok"
        table.add_row(
            v.field_id,
            v.format,
            v.scope if v.shared_counter is None else f"{v.scope}, shared counter {v.shared_counter}",
            str(v.start),
            v.numbering if v.allocation == "single" else f"{v.numbering}, {v.allocation}",
            v.time_zone,
            state,
            "\n".join(shown) or "-",
        )
    show_table(table)
