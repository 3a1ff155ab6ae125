"""The Typer application; each command group lives in its own module."""

from __future__ import annotations

import typer

from . import (
    audit_cmd,
    counter_cmd,
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
from .common import name_arguments_by_metavar

name_arguments_by_metavar()

TOP_EXAMPLES = """\b
Examples:
  autonumber setup apply --db sqlite:///autonumber.db
  autonumber records insert Case --data '{"Subject": "Printer jam"}'
  autonumber field set Case CaseNumber --format 'CS-{YYYY}-{000000}'
  autonumber serve --port 8000

Every command takes --db (default: AUTONUMBER_DATABASE_URL, else sqlite:///autonumber.db)."""

GROUP_EXAMPLES = {
    "db": ["autonumber db init --db sqlite:///autonumber.db", "autonumber db status"],
    "format": [
        "autonumber format check 'INV-{YYYY}-{0000}' --scope per_day",
        "autonumber format preview 'INV-{YYYY}-{0000}' --counter 42",
    ],
    "records": [
        'autonumber records insert Account --data \'{"Name": "Acme", "BillingCountryCode": "SG"}\'',
        "autonumber records list Account --limit 5",
    ],
    "setup": ["autonumber setup apply", "autonumber setup verify"],
    "spec": ["autonumber spec check", "autonumber spec apply data-specs/2026-04-18-autonumber-v2-seed.md"],
    "field": [
        "autonumber field add Account Member_No__c --format 'MB-{000000}' --numbering gapless",
        "autonumber field set Case CaseNumber --format 'CS-{YYYY}{MM}{DD}-{0000}' --scope per_day",
    ],
    "demo": ["autonumber demo legacy --rows 5000 --db sqlite:///demo.db"],
    "object": [
        "autonumber object add Shipment__c --field 'Name:text(80)' --field 'AccountId:ref(Account)'",
        "autonumber object adopt Invoice__c --table invoices",
        "autonumber object list --json",
    ],
    "counter": [
        "autonumber counter show Case CaseNumber",
        "autonumber counter set Case CaseNumber --next 5000",
    ],
    "audit": ["autonumber audit gaps Case.CaseNumber", "autonumber audit prune --older-than 400d"],
}
"""One or two runnable lines per command group, shown under its --help (`\\b` keeps click from
re-wrapping them)."""


def examples(lines: list[str]) -> str:
    """An epilog block of example command lines."""
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)


app = typer.Typer(
    name="autonumber",
    help="Salesforce-grade auto-numbers for CRM records, driven by display formats kept as metadata.",
    epilog=TOP_EXAMPLES,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
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
for name, module in (
    ("db", db_cmd),
    ("format", format_cmd),
    ("records", records_cmd),
    ("setup", setup_cmd),
    ("spec", spec_cmd),
    ("field", field_cmd),
    ("demo", demo_cmd),
    ("object", object_cmd),
    ("audit", audit_cmd),
    ("counter", counter_cmd),
):
    app.add_typer(module.app, name=name, epilog=examples(GROUP_EXAMPLES[name]))


def keep_examples_whole(typer_app: typer.Typer) -> None:
    """Mark each command's `Example:` paragraph `\\b` so click prints every example on one line, as
    typed, instead of re-wrapping it to the terminal's width."""
    for info in typer_app.registered_commands:
        doc = info.callback.__doc__ if info.callback else None
        if doc and "\n    Example:" in doc and "\b" not in doc:
            info.callback.__doc__ = doc.replace("\n\n    Example:", "\n\n    \b\n    Example:", 1)
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            keep_examples_whole(group.typer_instance)


keep_examples_whole(app)
