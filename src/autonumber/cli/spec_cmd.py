"""`autonumber spec generate|check|apply`: the canonical data-spec, its generated seed, the applier."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from autonumber.setup.paths import MODULE_PATH, SPEC_PATH

from .common import DEFAULT_URL, DbOption

app = typer.Typer(
    rich_markup_mode=None,
    help="Generate/check the seed module from the canonical data-spec; apply data-specs.",
    no_args_is_help=True,
)

SpecOption = Annotated[
    Path | None,
    typer.Option("--spec", metavar="PATH", help=f"The data-spec (default: {SPEC_PATH}).", show_default=False),
]
OutOption = Annotated[
    Path | None,
    typer.Option(
        "--out", metavar="PATH", help=f"The generated module (default: {MODULE_PATH}).", show_default=False
    ),
]


@app.command("generate")
def generate_cmd(spec: SpecOption = None, out: OutOption = None) -> None:
    """Write the generated seed module from the data-spec (idempotent).

    Example: autonumber spec generate
    """
    from autonumber.setup.generate import generate, repo_file

    spec_path, out_path = spec or repo_file(SPEC_PATH), out or repo_file(MODULE_PATH)
    changed = generate(spec_path, out_path)
    typer.echo(f"{'wrote' if changed else 'unchanged:'} {out_path} (from {spec_path})")


@app.command("check")
def check_cmd(spec: SpecOption = None, out: OutOption = None) -> None:
    """Exit 1 with a unified diff when the generated module is stale against the data-spec (CI).

    Example: autonumber spec check
    """
    from autonumber.setup.generate import drift, repo_file

    spec_path, out_path = spec or repo_file(SPEC_PATH), out or repo_file(MODULE_PATH)
    diff = drift(spec_path, out_path)
    if diff:
        typer.echo(
            f"{out_path} is stale against {spec_path}; run `autonumber spec generate` and commit the result:",
            err=True,
        )
        typer.echo(diff, err=True)
        raise typer.Exit(1)
    typer.echo(f"{out_path} is up to date with {spec_path}")


@app.command("apply")
def apply_cmd(
    path: Annotated[Path, typer.Argument(metavar="PATH", help="The data-spec to apply.", show_default=False)],
    env: Annotated[
        str | None,
        typer.Option(
            "--env",
            envvar="AUTONUMBER_ENV",
            metavar="<staging|production>",
            help="The environment the spec is applied in.",
            show_default=False,
        ),
    ] = None,
    db: DbOption = DEFAULT_URL,
    staging_db: Annotated[
        str | None,
        typer.Option(
            "--staging-db",
            metavar="URL",
            envvar="AUTONUMBER_STAGING_DATABASE_URL",
            show_default=False,
            help="Where staging's apply log lives, for the pending-prod same-day check "
            "(default: the --db database).",
        ),
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Print every planned change.")] = False,
) -> None:
    """Apply a data-spec: status lifecycle, env pinning, incident ticket and two approvals for rollbacks.

    Every attempt is recorded in _System_DataSpecApplyLog. Exit 0 applied or skipped (draft-rollback,
    already applied), 2 a malformed spec, 3 refused (nothing changed but the log row).

    Example: autonumber spec apply data-specs/2026-04-19-autonumber-v2-rollback.md --env staging
    """
    from autonumber.commands import spec
    from autonumber.db import mask
    from autonumber.progress import RichReporter

    result = spec.apply(db, path, env, RichReporter(verbose=verbose), staging_url=staging_db)
    for line in result.changes:
        typer.echo(f"  {line}")
    typer.echo(
        f"{result.message} ({mask(db)}, {len(result.changes)} change(s))"
        if result.outcome == "applied"
        else result.message
    )
