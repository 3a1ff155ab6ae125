"""`autonumber --help` and every group's help: a runnable example, the allowed values of options with
a fixed set, no type noise beside plain flags."""

from __future__ import annotations

from typing import get_args

import pytest
import typer

from autonumber.cli.app import GROUP_EXAMPLES, GROUPS, app
from autonumber.cli.common import Numbering, Scope
from autonumber.format.tokens import NUMBERING, SCOPES
from support import bootstrap_url, run_cli


def help_of(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as done:
        app([*argv, "--help"], prog_name="autonumber")
    assert done.value.code == 0
    return capsys.readouterr().out


def test_cli_choices_match_the_grammar() -> None:
    """The option types list the grammar's values (kept apart so the CLI starts fast)."""
    assert get_args(Scope) == SCOPES and get_args(Numbering) == NUMBERING


@pytest.mark.parametrize("group", ["", *GROUP_EXAMPLES])
def test_top_level_and_every_group_show_an_example(capsys: pytest.CaptureFixture[str], group: str) -> None:
    out = help_of(capsys, *group.split())
    assert "Examples:\n    autonumber " in out
    assert "<bool>" not in out


def test_every_group_is_covered() -> None:
    assert set(GROUPS) == set(GROUP_EXAMPLES)
    root = typer.main.get_command(app)
    listed = root.list_commands(typer.Context(root))  # type: ignore[attr-defined]
    assert set(GROUPS) <= set(listed)


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (["field", "add"], "--scope <global|per_day|per_prefix>"),
        (["field", "add"], "--numbering <standard|gapless>"),
        (["field", "set"], "--scope <global|per_day|per_prefix>"),
        (["format", "check"], "--scope <global|per_day|per_prefix>"),
        (["spec", "apply"], "--env <staging|production>"),
    ],
)
def test_fixed_sets_are_listed(capsys: pytest.CaptureFixture[str], argv: list[str], shown: str) -> None:
    assert shown in help_of(capsys, *argv)


def test_flags_print_no_type(capsys: pytest.CaptureFixture[str]) -> None:
    out = help_of(capsys, "setup", "apply")
    assert "<bool>" not in out and "--reseed " in out


@pytest.mark.parametrize(
    ("option", "value", "refusal"),
    [
        ("--scope", "weekly", "auto_number_scope 'weekly' is not one of global, per_day, per_prefix"),
        ("--numbering", "sometimes", "auto_number_numbering 'sometimes' is not one of standard, gapless"),
    ],
)
def test_an_unknown_choice_is_refused_in_one_line_naming_the_choices(
    sqlite_url: str, capsys: pytest.CaptureFixture[str], option: str, value: str, refusal: str
) -> None:
    """The rules package checks the value, so the CLI refuses it with the line every door gives."""
    bootstrap_url(sqlite_url)
    code, out = run_cli(
        ["field", "add", "Case", "X__c", "--format", "X-{0000}", option, value, "--db", sqlite_url], capsys
    )
    assert code == 2 and refusal in out, out
    assert len(out.strip().splitlines()) == 1, out
