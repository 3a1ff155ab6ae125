"""The canonical data-spec: parsed, cross-checked, and every bad input named with its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from autonumber.errors import SpecError
from autonumber.setup.dataspec import parse_spec, parse_spec_file
from autonumber.setup.generate import default_spec, repo_file

SPEC = repo_file("data-specs/2026-04-18-autonumber-v2-seed.md")
CATALOG = Path("/work/shared/reference/sf-autonumber-fields.md")


@pytest.fixture(scope="module")
def text() -> str:
    return SPEC.read_text(encoding="utf-8")


def test_canonical_spec_configures_every_field(text: str) -> None:
    spec = parse_spec(text)
    assert spec.meta.id == "2026-04-18-autonumber-v2-seed"
    assert spec.meta.backup == (
        "_System_AutoNumber",
        "_System_CompoundAutoNumber",
        "_System_IdentifierRule",
        "_System_IdentifierSeq",
    )
    names = {r.name for r in spec.rules}
    assert len(spec.rules) == len(names) == 129  # 125 Salesforce rows + Account_ID__c + 3 compound
    assert {
        "Account.Account_ID__c",
        "Contract.Contract_Number__c",
        "Quote.Quote_No__c",
        "Order.Order_Number__c",
    } <= names
    assert len(spec.record_types) == 9
    assert {rt.code for rt in spec.record_types} == {
        "CSA",
        "TCSA",
        "CRA",
        "NDA",
        "PNA",
        "PA",
        "TCPA",
        "TEPA",
        "MA",
    }


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("Case.CaseNumber", "{00000000}"),
        ("Order.OrderNumber", "{00000000}"),
        ("VoiceCall.Name", "VC-{00000000}"),
        ("ConvMessageSendRequest.Name", "MSJ-{00000000}"),
        ("ServiceAppointment.AppointmentNumber", "SA-{0000}"),
        ("KnowledgeArticle.ArticleNumber", "{000000000}"),
        ("ProcessException.ProcessExceptionNumber", "PE-{00000000}"),
        ("WorkOrder.WorkOrderNumber", "{00000000}"),
        ("Account.Account_ID__c", "IBG-B-{YYYY}{MM}{DD}-{000000}"),
    ],
)
def test_documented_formats_kept_exactly(name: str, fmt: str) -> None:
    assert default_spec().rule(name).format == fmt


def test_every_catalog_row_is_configured() -> None:
    if not CATALOG.exists():
        pytest.skip(f"the Salesforce catalog {CATALOG} is not on this machine")
    import re

    rows = re.findall(r"^\| \d+ \| (\w+) \| (\w+) \|", CATALOG.read_text(encoding="utf-8"), re.M)
    assert len(rows) == 125
    names = {r.name for r in default_spec().rules}
    assert {f"{o}.{f}" for o, f in rows} <= names


def test_generated_module_matches_the_markdown(text: str) -> None:
    assert default_spec() == parse_spec(text)


def test_lengths_follow_the_catalog() -> None:
    spec = default_spec()
    assert spec.rule("WorkOrderLineItem.LineItemNumber").length == 255
    assert spec.rule("Solution.SolutionNumber").length == 30


def _mutate(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("apiVersion: data-spec/v1", "apiVersion: data-spec/v9", "apiVersion must be"),
        ("## RecordType Codes", "## Record Codes", "missing section '## RecordType Codes'"),
        (
            "| Case | CaseNumber | `{00000000}` | 1 | global |  | 30 |",
            "| Case | CaseNumber | `{00000000}` | 1 | global |  | 31 |",
            "line",
        ),
        (
            "| Case | CaseNumber | `{00000000}` | 1 | global |",
            "| Case | CaseNumber | `{00000000}` | 1 | weekly |",
            "auto_number_scope 'weekly'",
        ),
        (
            "| Case | CaseNumber | `{00000000}` | 1 |",
            "| Case | CaseNumber | `{00000000}` | one |",
            "start must be an integer",
        ),
        ("Subject:text(255)", "Subject:blob(255)", "must look like Name:text(N)"),
        ("| object | table | fields |", "| object | table | columns |", "table columns must be"),
        (
            "| Contract | Services Agreement | CSA |",
            "| Contract | Services Agreement | CSA_TOO_LONG_CODE_X |",
            "RecordTypeCode 1..16",
        ),
        ("  - Solution\n", "", "missing: Solution"),
        (
            "| Case | CaseNumber | `{00000000}` | 1 |",
            "| Case | CaseNumber | `{00000000}` | 100000000 |",
            "start 100000000 does not fit the counter of '{00000000}' (width 8, largest 99999999)",
        ),
        (
            "-{RecordType.RecordTypeCode}-{YY}{MM}{DD}-{00}` | 1 | per_prefix",
            "-{RecordType.Name}-{YY}{MM}{DD}-{00}` | 1 | per_prefix",
            'rule 10: format "{Account.BillingCountryCode}-{RecordType.Name}-{YY}{MM}{DD}-{00}": token '
            "{RecordType.Name}: seeded formats may use only {RecordType.RecordTypeCode}",
        ),
    ],
)
def test_bad_specs_are_refused_with_their_place(text: str, old: str, new: str, expected: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_spec(_mutate(text, old, new), "copy.md")
    assert expected in str(info.value)
    assert "copy.md" in str(info.value)


def test_a_row_error_names_its_line(text: str) -> None:
    bad = _mutate(
        text,
        "| Case | CaseNumber | `{00000000}` | 1 | global |  | 30 |",
        "| Case | CaseNumber | `{00000000}` | 1 | global |  | 31 |",
    )
    line = next(i for i, s in enumerate(bad.split("\n"), 1) if s.startswith("| Case | CaseNumber"))
    with pytest.raises(SpecError, match=rf"Autonumber Fields' line {line}: Case.CaseNumber: length 31"):
        parse_spec(bad, "copy.md")


def test_a_missing_file_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="cannot read data-spec"):
        parse_spec_file(tmp_path / "nope.md")


def _with_policy_columns(
    text: str, case_cells: str, columns: tuple[str, ...] = ("numbering", "time zone")
) -> str:
    """The spec with extra policy columns, Case.CaseNumber's row filled with `case_cells`."""
    header = " | ".join(columns)
    out = []
    for line in text.splitlines(keepends=True):
        if line.startswith("| object | field | format |"):
            line = line.rstrip("\n") + f" {header} |\n"
        elif line.startswith("|---|---|---|---|---|---|---|---|") and header in out[-1]:
            line = line.rstrip("\n") + "---|" * len(columns) + "\n"
        elif line.startswith("| Case | CaseNumber |"):
            line = line.rstrip("\n") + f" {case_cells} |\n"
        elif line.startswith("| ") and out and header in "".join(out[-200:]) and line.count("|") == 9:
            line = line.rstrip("\n") + "  |" * len(columns) + "\n"
        out.append(line)
    return "".join(out)


def test_numbering_and_time_zone_columns(text: str) -> None:
    spec = parse_spec(_with_policy_columns(text, "gapless | Asia/Tokyo"), "copy.md")
    case = spec.rule("Case.CaseNumber")
    assert (case.numbering, case.time_zone) == ("gapless", "Asia/Tokyo")
    assert (spec.rule("Account.Account_ID__c").numbering, spec.rule("Account.Account_ID__c").time_zone) == (
        "standard",
        "UTC",
    )
    for cells, needle in (
        ("sometimes | UTC", "auto_number_numbering 'sometimes'"),
        ("gapless | Mars/Base", "time zone 'Mars/Base'"),
    ):
        with pytest.raises(SpecError, match=needle):
            parse_spec(_with_policy_columns(text, cells), "copy.md")


def test_allocation_column(text: str) -> None:
    columns = ("numbering", "allocation")
    spec = parse_spec(_with_policy_columns(text, "standard | blocks:100", columns), "copy.md")
    assert spec.rule("Case.CaseNumber").allocation == "blocks:100"
    assert spec.rule("Account.Account_ID__c").allocation == "single"
    for cells, needle in (
        ("gapless | blocks:100", "refused on a gapless field"),
        ("standard | blocks:0", "is not single or blocks:N"),
    ):
        with pytest.raises(SpecError, match=needle):
            parse_spec(_with_policy_columns(text, cells, columns), "copy.md")


def _with_fiscal_column(text: str, case_cell: str, column: str = "fiscal year start") -> str:
    """The spec with one more column (`fiscal year start`), Case.CaseNumber's cell set to `case_cell`."""
    out, inside = [], False
    for line in text.splitlines(keepends=True):
        if line.startswith("| object | field | format |"):
            inside, line = True, line.rstrip("\n") + f" {column} |\n"
        elif inside and line.startswith("|---"):
            line = line.rstrip("\n") + "---|\n"
        elif inside and line.startswith("| "):
            cell = case_cell if line.startswith("| Case | CaseNumber |") else ""
            line = line.rstrip("\n") + f" {cell} |\n"
        else:
            inside = False
        out.append(line)
    return "".join(out)


def test_fiscal_year_start_column(text: str) -> None:
    spec = parse_spec(_with_fiscal_column(text, "4"), "copy.md")
    assert spec.rule("Case.CaseNumber").fiscal_year_start == 4
    assert spec.rule("Account.Account_ID__c").fiscal_year_start == 1
    with pytest.raises(SpecError, match="fiscal_year_start 13 must be a month 1-12"):
        parse_spec(_with_fiscal_column(text, "13"), "copy.md")
    with pytest.raises(SpecError, match="fiscal year start must be an integer"):
        parse_spec(_with_fiscal_column(text, "April"), "copy.md")


def test_date_source_column(text: str) -> None:
    spec = parse_spec(_with_fiscal_column(text, "ClosedDate", "date source"), "copy.md")
    case = spec.rule("Case.CaseNumber")
    assert (case.date_src, case.date_field, case.date_source) == ("custom_field", "ClosedDate", "ClosedDate")
    created = parse_spec(_with_fiscal_column(text, "CreatedDate", "date source"), "copy.md")
    assert created.rule("Case.CaseNumber").date_src == "created_date"
    assert spec.rule("Account.Account_ID__c").date_src == "assigned_at"


def test_shared_counter_column(text: str) -> None:
    spec = parse_spec(_with_fiscal_column(text, "TICKETS", "shared counter"), "copy.md")
    assert spec.rule("Case.CaseNumber").shared_counter == "TICKETS"
    assert spec.rule("Account.Account_ID__c").shared_counter is None
    with pytest.raises(SpecError, match="shared counter name"):
        parse_spec(_with_fiscal_column(text, "no-dashes", "shared counter"), "copy.md")
