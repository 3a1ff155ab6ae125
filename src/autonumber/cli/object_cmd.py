"""`autonumber object add|adopt`: define a custom object, or register a table the application owns."""

from __future__ import annotations

from typing import Annotated

import typer

from .common import DEFAULT_URL, DbOption

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


@app.command("adopt")
def adopt_cmd(
    object_name: ObjectArg,
    table: Annotated[
        str, typer.Option("--table", help="The existing table to register.", show_default=False)
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
