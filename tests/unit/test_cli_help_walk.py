"""Every command's and sub-command's --help says what a value is (FORMAT, ZONE, N …), never a Python
type, and shows a runnable example."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from autonumber.cli.app import app
from support import cli_commands

TYPE_NAMES = re.compile(
    r"<(?:str|int|float|bool|Path|path|file|datetime|list\[|tuple)[^>]*>|Optional|NoneType"
)
"""Typer's type labels (`<str>`, `<int range>`, `<list[str]>`, `<Path>` …) and typing's names."""


def command_paths() -> list[tuple[list[str], bool]]:
    """Every command path under `autonumber`, and whether it is a group."""
    return [(path, hasattr(cmd, "commands")) for path, cmd in cli_commands()]


PATHS = command_paths()


def help_text(path: list[str]) -> str:
    """`autonumber PATH --help`, as printed."""
    result = CliRunner().invoke(app, [*path, "--help"], prog_name="autonumber", terminal_width=100)
    assert result.exit_code == 0, result.output
    return result.output


def test_the_walk_finds_every_command() -> None:
    """The walk reaches the nested groups and leaves, so the tests below cover them."""
    names = {" ".join(path) for path, _ in PATHS}
    expected = {"object field add", "field show", "counter show", "db status", "demo legacy", "serve", "run"}
    assert expected <= names
    assert len(names) > 40


@pytest.mark.parametrize(("path", "group"), PATHS, ids=[" ".join(p) or "autonumber" for p, _ in PATHS])
def test_help_names_values_for_people_and_shows_an_example(path: list[str], group: bool) -> None:
    out = help_text(path)
    shown = TYPE_NAMES.findall(out)
    assert not shown, f"autonumber {' '.join(path)} --help shows type names {shown}:\n{out}"
    example = r"Examples:\n\s+autonumber " if group else r"Example: autonumber "
    assert re.search(example, out), f"autonumber {' '.join(path)} --help has no example:\n{out}"
    lines = out.splitlines()
    for i, line in enumerate(lines[:-1]):
        if "Example: autonumber " in line:  # printed whole, not wrapped onto the next line
            assert lines[i + 1].strip() in ("", *[x.strip() for x in lines if "Example: " in x]), out
