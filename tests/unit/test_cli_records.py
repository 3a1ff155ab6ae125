"""`autonumber records …` through the real entry point `main()`, on a bootstrapped SQLite file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer.main

from autonumber.cli import app, main
from support import bootstrap_url


def _run(argv: list[str]) -> int | str | None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    return info.value.code


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv("AUTONUMBER_DATABASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    bootstrap_url(url)
    return url


def _lines(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def test_insert_prints_the_stored_record(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        _run(
            [
                "records",
                "insert",
                "Account",
                "--data",
                '{"Name": "Acme", "BillingCountryCode": "SG"}',
                "--db",
                db,
            ]
        )
        == 0
    )
    (acc,) = _lines(capsys.readouterr().out)
    assert str(acc["Account_ID__c"]).startswith("IBG-B-") and str(acc["Account_ID__c"]).endswith("-000001")
    data = json.dumps({"AccountId": acc["Id"], "RecordTypeId": "rt_Contract_Services_Agreement"})
    assert _run(["records", "insert", "Contract", "--data", data, "--db", db]) == 0
    (contract,) = _lines(capsys.readouterr().out)
    assert str(contract["Contract_Number__c"]).startswith("SG-CSA-")
    assert _run(["records", "get", "Contract", str(contract["Id"]), "--db", db]) == 0
    assert _lines(capsys.readouterr().out) == [contract]


def test_insert_many_prints_one_line_per_record(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "cases.jsonl"
    file.write_text('{"Subject": "a"}\n\n{"Subject": "b"}\n{"Subject": "c"}\n')
    assert _run(["records", "insert-many", "Case", "--file", str(file), "--db", db]) == 0
    out, err = capsys.readouterr()
    assert [r["CaseNumber"] for r in _lines(out)] == ["00000001", "00000002", "00000003"]
    assert "inserting" not in err, "no progress bar when stderr is not a terminal"
    assert _run(["records", "list", "Case", "--limit", "2", "--db", db]) == 0
    assert len(_lines(capsys.readouterr().out)) == 2


@pytest.mark.parametrize(
    ("content", "where"),
    [
        ('{"Subject": "a"}\n{"Subject": \n', "cases.jsonl:2: invalid JSON"),
        ('{"Subject": "a"}\n\n[1, 2]\n', "cases.jsonl:3: expected a JSON object"),
        ('{"Subject": "a"}\n{"CaseNumber": "7"}\n', "cases.jsonl:2: Case.CaseNumber is an autonumber field"),
        ('{"Colour": "red"}\n', "cases.jsonl:1: Case has no field 'Colour'"),
    ],
)
def test_bad_line_is_named_and_nothing_is_written(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, where: str
) -> None:
    file = tmp_path / "cases.jsonl"
    file.write_text(content)
    assert _run(["records", "insert-many", "Case", "--file", str(file), "--db", db]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and where in err, err
    assert _run(["records", "list", "Case", "--db", db]) == 0
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(
    "argv",
    [
        ["records", "insert", "Widget", "--data", "{}"],
        ["records", "insert-many", "Widget", "--file", "missing.jsonl"],
        ["records", "get", "Case", "no-such-id"],
        ["records", "list", "Widget"],
        ["records", "insert", "Case", "--data", "{not json"],
    ],
)
def test_user_errors_are_one_line_exit_2(
    db: str, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run([*argv, "--db", db]) == 2
    out, err = capsys.readouterr()
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: ") and "Traceback" not in err + out


def test_every_records_command_has_help_with_an_example() -> None:
    group = typer.main.get_command(app).commands["records"]  # type: ignore[attr-defined]
    assert set(group.commands) == {"insert", "insert-many", "get", "list"}
    for name, command in group.commands.items():
        assert "Example: autonumber records " + name in (command.help or ""), name
