"""The Typer application; each command group lives in its own module."""

from __future__ import annotations

import typer

from . import (
    audit_cmd,
    db_cmd,
    demo_cmd,
    field_cmd,
    format_cmd,
    object_cmd,
    records_cmd,
    run_cmd,
    serve_cmd,
    setup_cmd,
    spec_cmd,
)

app = typer.Typer(
    name="autonumber",
    help="Salesforce-grade auto-numbers for CRM records, driven by display formats kept as metadata.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    """`--version`: this package's version as installed (importlib.metadata), then exit."""
    if value:
        from autonumber.db.version import SCHEMA_VERSION, release

        typer.echo(f"autonumber {release()} (schema version {SCHEMA_VERSION})")
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Salesforce-grade auto-numbers for CRM records, driven by display formats kept as metadata."""


app.command("run")(run_cmd.run)
app.command("serve")(serve_cmd.serve)
app.add_typer(db_cmd.app, name="db")
app.add_typer(format_cmd.app, name="format")
app.add_typer(records_cmd.app, name="records")
app.add_typer(setup_cmd.app, name="setup")
app.add_typer(spec_cmd.app, name="spec")
app.add_typer(field_cmd.app, name="field")
app.add_typer(demo_cmd.app, name="demo")
app.add_typer(object_cmd.app, name="object")
app.add_typer(audit_cmd.app, name="audit")
