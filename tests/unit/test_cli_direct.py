"""The fast path for a plain `format check` (cli/direct.py) answers exactly as the Typer command does."""

from __future__ import annotations

import subprocess
import sys

import pytest

from autonumber.cli import direct, main


def outcome(capsys: pytest.CaptureFixture[str], args: list[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(args)
    out, err = capsys.readouterr()
    code = info.value.code
    return (code if isinstance(code, int) else 1), out, err


PLAIN = [
    ["format", "check", "IBG-B-{YYYY}{MM}{DD}-{000000}", "--scope", "per_day"],
    ["format", "check", "--scope", "per_prefix", "{Account.BillingCountryCode}-{YY}{MM}{DD}-{00}"],
    ["format", "check", "CS-{YYYY}-{0000}", "--scope=global"],
    ["format", "check", "00{00000000}"],
    ["format", "check", "INV-{00"],
    ["format", "check", "{0000}-{0000}"],
    ["format", "check", "{0000}", "--scope", "monthly"],
    ["format", "check", "{0000}", "--scope="],
    ["format", "check", ""],
]


@pytest.mark.parametrize("args", PLAIN, ids=[" ".join(a[2:]) or "empty" for a in PLAIN])
def test_fast_path_prints_and_exits_as_the_typer_command(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    assert direct.plain_format_check(args) is not None
    fast = outcome(capsys, args)
    monkeypatch.setattr(direct, "run", lambda _args: False)
    assert outcome(capsys, args) == fast


@pytest.mark.parametrize(
    "args",
    [
        ["format", "check", "{0000}", "--help"],
        ["format", "check", "--help"],
        ["format", "check", "{0000}", "--object", "Case"],
        ["format", "check", "{0000}", "--scope"],
        ["format", "check", "{0000}", "--scope", "per_day", "--scope", "global"],
        ["format", "check", "-x"],
        ["format", "check", "{0000}", "--scope", "-x"],
        ["format", "check", "Nº-{0000}"],
        ["format", "check", "\x1b[31m{0000}"],
        ["format", "preview", "{0000}"],
        ["records", "check", "{0000}"],
        ["format", "check"],
    ],
)
def test_anything_else_goes_to_the_typer_command(args: list[str]) -> None:
    assert direct.plain_format_check(args) is None


def test_a_plain_check_loads_neither_typer_nor_pydantic() -> None:
    script = (
        "import sys\n"
        "from autonumber.cli import main\n"
        "try:\n"
        "    main(['format', 'check', 'INV-{YYYY}-{0000}'])\n"
        "except SystemExit as done:\n"
        "    assert done.code == 0, done.code\n"
        "print(sorted(m for m in ('typer', 'click', 'pydantic', 'sqlalchemy') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "[]"
    assert done.stdout.startswith("ok: INV-{YYYY}-{0000}\n")
