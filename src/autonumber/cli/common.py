"""Options shared by every command that touches a database."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Annotated, Literal, get_args

import typer

from autonumber.defaults import DATABASE_ENV, DEFAULT_URL

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

__all__ = [
    "DEFAULT_URL",
    "MAX_COUNTER",
    "MAX_ROWS",
    "DbOption",
    "FiscalYearStartOption",
    "Numbering",
    "Scope",
    "choices",
    "console",
]

Scope = Literal["global", "per_day", "per_prefix"]
"""A counter scope, as an option type so --help lists the choices (the grammar's `SCOPES`; a unit
test keeps the two equal without the CLI importing the grammar at start-up)."""
Numbering = Literal["standard", "gapless"]
"""A numbering policy (the grammar's `NUMBERING`)."""


def choices(kind: object) -> str:
    """An option's allowed values as its --help metavar, `<a|b|c>`. Values are checked by the rules
    package, not by Click, so the CLI refuses a bad one with the same line as every other door."""
    return "<" + "|".join(get_args(kind)) + ">"


MAX_ROWS = 10_000_000
"""The most demo rows a command generates: more is a typo, not a demo."""

MAX_COUNTER = 10**18 - 1
"""The largest counter value (an 18-digit counter, BIGINT headroom): the bound of every number option."""

DbOption = Annotated[
    str,
    typer.Option(
        "--db",
        envvar=DATABASE_ENV,
        metavar="URL",
        help="Database URL (sqlite:///file.db, mysql+pymysql://…, postgresql+psycopg://…).",
        show_default=True,
    ),
]


FiscalYearStartOption = Annotated[
    int,
    typer.Option(
        "--fiscal-year-start",
        metavar="MONTH",
        help="Month 1-12 a fiscal year starts on, for {FYYYY}/{FYY} (named by the year it ends in); "
        "1 is the calendar year.",
    ),
]


@cache
def console() -> Console:
    """The console commands print tables and summaries on, made on first use (Rich loads late)."""
    from rich.console import Console

    return Console(highlight=False)


def show_table(table: Table) -> None:
    """A table on a terminal; in a pipe, one tab-separated line per row under a header line (the
    title as a `#` comment), never wrapped and never boxed, so `grep`, `cut` and `awk` read it."""
    import sys

    if sys.stdout.isatty():
        console().print(table)
        return
    if table.title:
        print(f"# {table.title}")
    columns = table.columns
    if any(str(c.header) for c in columns):
        print("\t".join(str(c.header) for c in columns))
    for cells in zip(*(c.cells for c in columns), strict=True):
        print("\t".join(str(cell).replace("\t", " ").replace("\n", " ") for cell in cells))


def print_json(document: object) -> None:
    """One JSON document on stdout, on one line, non-ASCII kept (docs/cli.md lists every shape)."""
    import json

    typer.echo(json.dumps(document, ensure_ascii=False, default=str))


JsonOption = Annotated[
    bool, typer.Option("--json", help="Print one JSON document (docs/cli.md) instead of a table.")
]


ObjectArg = Annotated[
    str,
    typer.Argument(
        metavar="OBJECT",
        help="Object API name, e.g. Account (or Account.Member_No__c, without FIELD).",
        show_default=False,
    ),
]
FieldArg = Annotated[
    str | None,
    typer.Argument(metavar="FIELD", help="Field API name, e.g. Member_No__c.", show_default=False),
]
NamedFieldArg = Annotated[
    str, typer.Argument(metavar="FIELD", help="Field API name, e.g. Member_No__c.", show_default=False)
]
KeyArg = Annotated[
    str,
    typer.Argument(
        metavar="FIELD", help="Object.Field (or OBJECT FIELD), or the field's id.", show_default=False
    ),
]
NameArg = Annotated[
    str | None,
    typer.Argument(metavar="NAME", help="The field's name, when FIELD names the object.", show_default=False),
]


def one_field(first: str, second: str | None) -> tuple[str, str]:
    """A field named as `OBJECT FIELD` or as `Object.Field`: its object and field names. Every
    command takes both forms, so a name copied from one command's output works in any other."""
    if second is not None:
        return first, second
    obj, dot, name = first.partition(".")
    if not (dot and obj and name):
        raise typer.BadParameter(
            f"{first!r}: name the field as OBJECT FIELD or Object.Field", param_hint="FIELD"
        )
    return obj, name


def field_key(first: str, second: str | None) -> str:
    """`Object.Field` (or a field id) from the one or two words a command was given."""
    return first if second is None else f"{first}.{second}"
