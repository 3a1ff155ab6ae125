"""Every command that takes a field takes it both ways, `OBJECT FIELD` and `Object.Field`, so a
name copied from one command's output works in any other; a lone object name is one usage line."""

from __future__ import annotations

import pytest

from support import bootstrap_url, run_cli

COMMANDS = [
    ["field", "show"],
    ["audit", "gaps"],
    ["counter", "show"],
    ["field", "set", "--time-zone", "UTC"],
    ["counter", "set", "--next", "{next}"],
]


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_a_field_is_named_either_way(
    db_url: str, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    bootstrap_url(db_url)
    verb, rest = command[:2], command[2:]
    for n, names in enumerate((["Case", "CaseNumber"], ["Case.CaseNumber"]), start=2):
        options = [o.replace("{next}", str(n)) for o in rest]
        code, out = run_cli([*verb, *names, *options, "--db", db_url], capsys)
        assert code == 0, (names, out)
        assert "Case" in out, out  # (a table may wrap the full name)


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_an_object_alone_is_one_usage_line(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    bootstrap_url(db_url)
    code, out = run_cli(["counter", "set", "Case", "--next", "9", "--db", db_url], capsys)
    assert code == 2 and "name the field as OBJECT FIELD or Object.Field" in out
