"""The Typer application; each command group lives in its own module, imported and built only when
that group runs (or a listing of the groups, such as the top-level --help, needs it)."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

import typer
from typer.core import TyperGroup

from . import run_cmd, serve_cmd

if TYPE_CHECKING:  # the click Typer carries inside it (typer._click), named for the type checker only
    from typer._click import Command, Context, HelpFormatter

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


GROUPS = {
    "db": "db_cmd",
    "format": "format_cmd",
    "records": "records_cmd",
    "setup": "setup_cmd",
    "spec": "spec_cmd",
    "field": "field_cmd",
    "demo": "demo_cmd",
    "object": "object_cmd",
    "audit": "audit_cmd",
    "counter": "counter_cmd",
}
"""Each command group's name and the module under `autonumber.cli` whose `app` it is."""


class LazyGroups(TyperGroup):
    """The top-level group. Typer builds a click command for every parameter of every command it
    is given, about 45 ms for all of them: a group is built here when it is asked for, so a
    command pays only for its own group (docs/performance.md, "CLI start-up")."""

    listing = False
    """True while the top-level --help lists the groups: a group's one-line help is all it needs."""

    def list_commands(self, ctx: Context) -> list[str]:
        return [*super().list_commands(ctx), *(name for name in GROUPS if name not in self.commands)]

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        if cmd_name in GROUPS and cmd_name not in self.commands:
            if self.listing:
                return TyperGroup(name=cmd_name, help=group_app(cmd_name).info.help)
            self.add_command(group_command(cmd_name), cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        self.listing = True
        try:
            super().format_commands(ctx, formatter)
        finally:
            self.listing = False


def group_app(name: str) -> typer.Typer:
    """The Typer application of group `name` (its module imported on first use)."""
    group: typer.Typer = import_module(f"{__package__}.{GROUPS[name]}").app
    return group


def group_command(name: str) -> Command:
    """The click command of group `name`, with its examples as the epilog."""
    group = group_app(name)
    keep_examples_whole(group)
    command = typer.main.get_group(group)  # a group even with one command (`demo legacy`)
    command.name, command.epilog = name, examples(GROUP_EXAMPLES[name])
    return command


app = typer.Typer(
    cls=LazyGroups,
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
        from autonumber.defaults import SCHEMA_VERSION, release

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


keep_examples_whole(app)
