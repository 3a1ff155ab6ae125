"""`autonumber object add|adopt`: define a custom object, or register a table the application owns."""

from __future__ import annotations

from typing import Annotated

import typer

from .common import DEFAULT_URL, DbOption, JsonOption, print_json, show_table

app = typer.Typer(
    rich_markup_mode=None, help="Custom objects and adopted application tables.", no_args_is_help=True
)

ObjectArg = Annotated[
    str, typer.Argument(metavar="OBJECT", help="Object API name, e.g. Shipment__c.", show_default=False)
]


@app.command("add")
def add_cmd(
    object_name: ObjectArg,
    fields: Annotated[
        list[str],
        typer.Option(
            "--field",
            metavar="NAME:TYPE",
            help="NAME:TYPE, TYPE one of text(N), number, integer, boolean, date, datetime, "
            "ref(Object); repeat for each field.",
            show_default=False,
        ),
    ],
    db: DbOption = DEFAULT_URL,
) -> None:
    """Create a custom object: its table (Id, CreatedDate and the fields) and its metadata.

    Example: autonumber object add Shipment__c --field 'Name:text(80)' --field 'AccountId:ref(Account)'
    """
    from autonumber.commands import objects

    changes = objects.add(db, object_name, fields)
    for line in changes:
        typer.echo(f"  {line}")
    typer.echo(f"{object_name}: {'created' if changes else 'already exists, unchanged'}")


@app.command("list")
def list_cmd(as_json: JsonOption = False, db: DbOption = DEFAULT_URL) -> None:
    """Every object: its table, whether the application owns it (adopted), its fields and autonumber fields.

    Example: autonumber object list --json
    """
    from dataclasses import asdict

    from rich.table import Table

    from autonumber.commands import objects

    listed = objects.list_objects(db)
    if as_json:
        print_json([asdict(o) for o in listed])
        return
    table = Table()
    for head in ("object", "table", "adopted", "fields", "autonumber fields"):
        table.add_column(head, overflow="fold")
    for o in listed:
        table.add_row(
            o.object,
            o.table,
            "yes" if o.adopted else "no",
            str(o.fields),
            ", ".join(o.autonumber_fields) or "-",
        )
    show_table(table)


@app.command("adopt")
def adopt_cmd(
    object_name: ObjectArg,
    table: Annotated[
        str,
        typer.Option("--table", metavar="TABLE", help="The existing table to register.", show_default=False),
    ],
    db: DbOption = DEFAULT_URL,
) -> None:
    """Register an existing table as an object (its key and columns as they are; nothing altered).

    Example: autonumber object adopt Invoice__c --table invoices
    """
    from autonumber.commands import objects

    changes = objects.adopt(db, object_name, table)
    for line in changes:
        typer.echo(f"  {line}")
    typer.echo(f"{object_name}: {'adopted' if changes else 'already adopted, unchanged'}")


field_app = typer.Typer(
    rich_markup_mode=None,
    help="Plain fields of a custom object.",
    epilog="\b\nExamples:\n  autonumber object field add Shipment__c 'Carrier:text(40)'",
    no_args_is_help=True,
)
app.add_typer(field_app, name="field")


@field_app.command("add")
def field_add_cmd(
    object_name: ObjectArg,
    field: Annotated[
        str,
        typer.Argument(
            metavar="NAME:TYPE",
            help="TYPE one of text(N), number, integer, boolean, date, datetime, ref(Object).",
            show_default=False,
        ),
    ],
    db: DbOption = DEFAULT_URL,
) -> None:
    """Add a plain field to a custom object: its column (empty on existing records) and its metadata.

    Example: autonumber object field add Shipment__c 'Carrier:text(40)'
    """
    from autonumber.commands import objects

    changes = objects.add_plain_field(db, object_name, field)
    for line in changes:
        typer.echo(f"  {line}")
    typer.echo(f"{object_name}: {'field added' if changes else 'field already there, unchanged'}")
