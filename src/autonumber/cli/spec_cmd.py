"""`autonumber spec generate|check` (and, later, `spec apply`): the data-spec and its generated seed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from autonumber.setup.dataspec import SPEC_PATH
from autonumber.setup.generate import MODULE_PATH, drift, generate, repo_file

app = typer.Typer(help="Generate and check the seed module built from the canonical data-spec.",
                  no_args_is_help=True)

SpecOption = Annotated[
    Path | None,
    typer.Option("--spec", help=f"The data-spec (default: {SPEC_PATH}).", show_default=False),
]
OutOption = Annotated[
    Path | None,
    typer.Option("--out", help=f"The generated module (default: {MODULE_PATH}).", show_default=False),
]


@app.command("generate")
def generate_cmd(spec: SpecOption = None, out: OutOption = None) -> None:
    """Write the generated seed module from the data-spec (idempotent).

    Example: autonumber spec generate
    """
    spec_path, out_path = spec or repo_file(SPEC_PATH), out or repo_file(MODULE_PATH)
    changed = generate(spec_path, out_path)
    typer.echo(f"{'wrote' if changed else 'unchanged:'} {out_path} (from {spec_path})")


@app.command("check")
def check_cmd(spec: SpecOption = None, out: OutOption = None) -> None:
    """Exit 1 with a unified diff when the generated module is stale against the data-spec (CI).

    Example: autonumber spec check
    """
    spec_path, out_path = spec or repo_file(SPEC_PATH), out or repo_file(MODULE_PATH)
    diff = drift(spec_path, out_path)
    if diff:
        typer.echo(f"{out_path} is stale against {spec_path}; run `autonumber spec generate` and "
                   "commit the result:", err=True)
        typer.echo(diff, err=True)
        raise typer.Exit(1)
    typer.echo(f"{out_path} is up to date with {spec_path}")
