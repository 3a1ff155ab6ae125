"""`autonumber records …` through the real entry point `main()`, on a bootstrapped SQLite file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autonumber.cli import main
from autonumber.cli.app import group_command
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
    group = group_command("records")
    assert set(group.commands) == {"insert", "insert-many", "get", "list"}
    for name, command in group.commands.items():
        assert "Example: autonumber records " + name in (command.help or ""), name


def test_insert_many_batches_as_the_library_does_by_default() -> None:
    from autonumber.write.records import BATCH_SIZE

    group = group_command("records")
    (option,) = [p for p in group.commands["insert-many"].params if p.name == "batch_size"]
    assert option.default == BATCH_SIZE


def test_progress_is_plain_lines_when_stderr_is_not_a_terminal(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from autonumber.cli import import_cmd

    monkeypatch.setattr(import_cmd, "PLAIN_EVERY", 0.0)  # a line after every batch
    file = tmp_path / "cases.jsonl"
    file.write_text("".join(f'{{"Subject": "s{i}"}}\n' for i in range(7)))
    argv = ["records", "insert-many", "Case", "--file", str(file), "--batch-size", "3", "--quiet", "--db", db]
    assert _run(argv) == 0
    out, err = capsys.readouterr()
    assert out.startswith("inserted 7 Case records") and len(out.splitlines()) == 1
    written = [line.split(" rows written")[0] for line in err.splitlines()]
    assert written == ["Case: 3", "Case: 6", "Case: 7"], err
    assert "\x1b" not in err, "no terminal control codes in a log"


def _deep_json(depth: int) -> str:
    return '{"Subject": ' + "[" * depth + "]" * depth + "}"


@pytest.mark.parametrize(
    "argv",
    [
        ["records", "insert", "Case", "--data", '{"Subject": "x", "Priority": ' + "9" * 5000 + "}"],
        ["records", "insert", "Case", "--data", _deep_json(100_000)],
        ["demo", "legacy", "--rows", "99999999999999999999"],
        ["audit", "prune", "--older-than", "99999999999d"],
        ["audit", "prune", "--older-than", "36501d"],
        ["audit", "gaps", "Case.CaseNumber", "--to", "99999999999999999999"],
        ["format", "preview", "X-{YYYY}-{00}", "--at", "9999-12-31T23:00:00-12:00"],
        [
            "format",
            "preview",
            "X-{YYYY}-{00}",
            "--at",
            "0001-01-01T00:00:00+00:00",
            "--time-zone",
            "America/Los_Angeles",
        ],
        ["format", "preview", "X-{00}", "--counter", "99999999999999999999"],
    ],
    ids=[
        "5000-digits",
        "deep-json",
        "demo-rows",
        "prune-huge",
        "prune-century",
        "gaps-to",
        "at-9999",
        "at-0001",
        "counter",
    ],
)
def test_out_of_range_input_is_one_line_exit_2(
    db: str, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run([*argv, "--db", db] if argv[0] not in ("format",) else argv) == 2
    out, err = capsys.readouterr()
    assert "internal error" not in err and "Traceback" not in err + out
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines and (len(lines) == 1 or "Usage:" in err), err  # ours, or Click's usage error


@pytest.mark.parametrize("reported", ["raw", "DatabaseUnavailable", "CommitOutcomeUnknown"])
def test_an_interrupt_inside_a_driver_call_is_not_an_internal_error(
    db: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, reported: str
) -> None:
    """^C during insert-many on MariaDB: pymysql is cut off mid-read and the rollback on the way out
    fails with an error of its own, raised while the KeyboardInterrupt is handled (and reported by
    the library as a lost connection, or as an unknown COMMIT outcome, which stays that)."""
    from autonumber.cli import import_cmd
    from autonumber.errors import CommitOutcomeUnknown, DatabaseUnavailable

    def interrupted(*_: object, **__: object) -> None:
        try:
            try:
                raise KeyboardInterrupt
            except KeyboardInterrupt:
                raise ConnectionResetError("connection cut off while reading") from None
        except ConnectionResetError as exc:
            if reported == "DatabaseUnavailable":
                raise DatabaseUnavailable("writing Case records", exc) from exc
            if reported == "CommitOutcomeUnknown":
                raise CommitOutcomeUnknown("Case", ["abc"], str(exc)) from exc
            raise

    monkeypatch.setattr(import_cmd, "run_import", interrupted)
    Path("rows.jsonl").write_text('{"Subject": "a"}\n', encoding="utf-8")
    code = _run(["records", "insert-many", "Case", "--file", "rows.jsonl", "--db", db])
    err = capsys.readouterr().err
    if reported == "CommitOutcomeUnknown":
        assert code == 1 and "look up Id(s) abc" in err, err
        return
    assert code == 130
    assert err.startswith("error: interrupted") and "internal error" not in err
