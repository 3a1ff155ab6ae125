"""`autonumber format check --object` runs the metadata rules against a real catalog."""

from __future__ import annotations

import pytest

from autonumber.cli import main
from support import bootstrap_url


def _run(argv: list[str]) -> int:
    try:
        main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


@pytest.fixture
def catalog_url(db_url: str) -> str:
    bootstrap_url(db_url)
    return db_url


def test_check_with_object_lists_the_resolved_chain(
    catalog_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    fmt = "{Account.BillingCountryCode}-QT-{YY}{MM}{DD}-{00}"
    code = _run(["format", "check", fmt, "--object", "Quote", "--field", "Quote_No__c", "--db", catalog_url])
    assert code == 0
    assert "AccountId->Account.BillingCountryCode" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("fmt", "obj", "rule"),
    [
        ("{Account.Nope}-{0000}", "Contract", "rule 4"),
        ("{RecordType.RecordTypeCode}-{0000}", "Case", "rule 7"),
        ("{Account.Name}-{0000}", "Contract", "rule 5"),
        ("{Account.Name}-{0000}", "Account", "rule 8"),
    ],
)
def test_check_with_object_applies_metadata_rules(
    catalog_url: str, fmt: str, obj: str, rule: str, capsys: pytest.CaptureFixture[str]
) -> None:
    field = {"Account": "Account_ID__c", "Contract": "Contract_Number__c"}.get(obj)
    argv = ["format", "check", fmt, "--object", obj, "--db", catalog_url]
    if field:
        argv += ["--field", field]
    assert _run(argv) == 2
    err = capsys.readouterr().err
    assert rule in err
    assert "Traceback" not in err


def test_check_with_unknown_object_is_one_line(catalog_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["format", "check", "{0000}", "--object", "Nope", "--db", catalog_url]) == 2
    err = capsys.readouterr().err.strip()
    assert "unknown object 'Nope'" in err
    assert len(err.splitlines()) == 1
