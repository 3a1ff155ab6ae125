"""`spec apply` on real databases: case D1, every refusal changes nothing, the full rollback cycle on a
database made by `autonumber demo legacy`, the backup cleanup (docs/runbook.md)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

import autonumber
import testdb
from autonumber.cli import main
from autonumber.db import create_engine, dialect_for
from autonumber.db.base import TransactionalDDL
from autonumber.db.schema import table_names
from autonumber.db.tables import LEGACY_TABLES, counter_table, legacy_autonumber, legacy_compound
from autonumber.errors import SpecRefused, VerifyError
from autonumber.setup.apply import apply
from autonumber.setup.demo import fill_legacy
from autonumber.setup.generate import default_spec
from autonumber.specapply import apply_spec, operations
from autonumber.specapply import log as apply_log
from autonumber.specapply.document import read_document

ROOT = Path(__file__).resolve().parents[2]
ROLLBACK = ROOT / "data-specs/2026-04-19-autonumber-v2-rollback.md"
CLEANUP = ROOT / "data-specs/2026-05-02-autonumber-v2-backup-cleanup.md"

pytestmark = pytest.mark.slow
"""Every test cuts over a demo legacy database of the full spec: out of `make check`, started
first by `make test`."""

SPEC = default_spec()
ENGINEER = {"name": "alice", "role": "engineer"}
SRE = {"name": "bob", "role": "sre"}
LOG = "_System_DataSpecApplyLog"
SA_RT = "rt_Contract_Services_Agreement"


def _cut_over(url: str) -> None:
    engine = create_engine(url)
    try:
        fill_legacy(engine, SPEC, 40)
        apply(engine, SPEC)
    finally:
        engine.dispose()


@pytest.fixture
def cut_over(db_url: str) -> Iterator[Engine]:
    """A demo legacy database after `setup apply` (backups made, legacy tables dropped): cut over
    once per backend in the run, copied for each test (tests/testdb/)."""
    testdb.restore_state(db_url, "spec_cut_over_40", _cut_over)
    engine = create_engine(db_url)
    yield engine
    engine.dispose()


def flip(
    tmp_path: Path,
    status: str,
    ticket: str | None = "INC-4711",
    approvals: list[dict[str, str]] | None = None,
    name: str = "rollback.md",
) -> Path:
    """The shipped rollback spec with its frontmatter flipped, as the flip PR would."""
    text = ROLLBACK.read_text(encoding="utf-8")
    text = text.replace("status: draft-rollback", f"status: {status}", 1)
    text = text.replace("incident_ticket:\n", f"incident_ticket: {ticket or ''}\n", 1)
    given = [ENGINEER, SRE] if approvals is None else approvals
    text = text.replace("approvals: []", "approvals: " + repr(given).replace("'", '"'), 1)
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def dump(engine: Engine) -> dict[str, Any]:
    """Every table but the apply log: its columns and its rows, sorted."""
    out: dict[str, Any] = {}
    with engine.connect() as conn:
        for name in sorted(table_names(conn) - {LOG}):
            table = sa.Table(name, sa.MetaData(), autoload_with=conn)
            rows = conn.execute(sa.select(table)).all()
            out[name] = ([c.name for c in table.columns], sorted(tuple(map(str, r)) for r in rows))
    return out


def outcomes(engine: Engine) -> list[tuple[str, str]]:
    return [(row["env"], row["outcome"]) for row in apply_log.attempts(engine)]


def cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(argv)
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def test_d1_draft_rollback_is_skipped_and_the_flipped_spec_applies(
    cut_over: Engine, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = dump(cut_over)
    code, out, _ = cli(["spec", "apply", str(ROLLBACK), "--env", "staging", "--db", db_url], capsys)
    assert code == 0 and "skipped, nothing applied" in out
    assert dump(cut_over) == before
    code, out, err = cli(
        ["spec", "apply", str(flip(tmp_path, "pending-staging")), "--env", "staging", "--db", db_url], capsys
    )
    assert code == 0, err
    assert "applied to staging" in out
    present = table_names(cut_over)
    assert {t.name for t in LEGACY_TABLES} <= present and counter_table.name not in present
    assert outcomes(cut_over) == [("staging", "skipped"), ("staging", "applied")]


def test_every_refusal_leaves_the_database_unchanged(
    cut_over: Engine, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = dump(cut_over)
    cases = [
        (flip(tmp_path, "pending-staging", ticket=None, name="a.md"), "staging", "incident_ticket"),
        (flip(tmp_path, "pending-staging", approvals=[ENGINEER], name="b.md"), "staging", "missing: sre"),
        (
            flip(
                tmp_path,
                "pending-staging",
                approvals=[ENGINEER, {"name": "Alice", "role": "sre"}],
                name="c.md",
            ),
            "staging",
            "two different people",
        ),
        (flip(tmp_path, "pending-staging", name="d.md"), "production", "pinned to staging"),
        (flip(tmp_path, "pending-prod", name="e.md"), "production", "staging applies found: never"),
    ]
    for path, env, match in cases:
        code, out, err = cli(["spec", "apply", str(path), "--env", env, "--db", db_url], capsys)
        assert code == 3, (path.name, out, err)
        assert match in err and err.count("\n") == 1, err
        assert dump(cut_over) == before, path.name
    code, out, _ = cli(["spec", "apply", str(ROLLBACK), "--env", "production", "--db", db_url], capsys)
    assert code == 0 and "draft-rollback" in out
    assert dump(cut_over) == before
    refused = [r for r in apply_log.attempts(cut_over) if r["outcome"] == "refused"]
    assert len(refused) == 5 and all(r["error"] and r["finished_at"] for r in refused)
    assert outcomes(cut_over)[-1] == ("production", "skipped")


def test_env_comes_from_autonumber_env(
    cut_over: Engine,
    db_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AUTONUMBER_ENV", "production")
    code, _, err = cli(["spec", "apply", str(flip(tmp_path, "pending-staging")), "--db", db_url], capsys)
    assert code == 3 and "refusing to apply it to production" in err


def issue(url: str) -> dict[str, list[str]]:
    """Records through the engine: new Accounts, Cases and Contracts (a new and an old prefix)."""
    out: dict[str, list[str]] = {"Account": [], "Case": [], "Contract": []}
    with autonumber.connect(url) as platform:
        for i in range(3):
            out["Account"].append(
                platform.records.insert("Account", {"Name": f"n{i}", "BillingCountryCode": "SG"})[
                    "Account_ID__c"
                ]
            )
            out["Case"].append(platform.records.insert("Case", {"Subject": f"s{i}"})["CaseNumber"])
            for country in ("SG", "MY"):
                out["Contract"].append(
                    platform.records.insert(
                        "Contract",
                        {
                            "AccountId": "001000000000001",
                            "RecordTypeId": SA_RT,
                            "Account_Country_Code__c": country,
                        },
                    )["Contract_Number__c"]
                )
    return out


def legacy(engine: Engine) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]]:
    a, c = legacy_autonumber, legacy_compound
    with engine.connect() as conn:
        numbers = {
            (o, f): int(n)
            for o, f, n in conn.execute(sa.select(a.c.ObjectApiName, a.c.FieldApiName, a.c.CurrentNumber))
        }
        compound = {
            (o, p): int(n)
            for o, p, n in conn.execute(sa.select(c.c.ObjectApiName, c.c.Prefix, c.c.CurrentNumber))
        }
    return numbers, compound


def column(engine: Engine, table: str, name: str) -> list[str]:
    t = sa.Table(table, sa.MetaData(), autoload_with=engine)
    with engine.connect() as conn:
        return [v for v in conn.execute(sa.select(t.c[name]).where(t.c[name].is_not(None))).scalars()]


def test_full_cycle_rollback_then_cut_over_again_continues_without_duplicates(
    cut_over: Engine, db_url: str, tmp_path: Path
) -> None:
    first = issue(db_url)
    staging = apply_spec(cut_over, flip(tmp_path, "pending-staging"), "staging")
    assert staging.outcome == "applied"
    prod = apply_spec(cut_over, flip(tmp_path, "pending-prod", name="prod.md"), "production")
    assert prod.outcome == "applied"  # same UTC day, same spec: allowed; idempotent on this database

    numbers, compound = legacy(cut_over)
    assert numbers[("Account", "Account_ID__c")] >= max(int(v[-6:]) for v in first["Account"])
    assert numbers[("Case", "CaseNumber")] >= max(int(v) for v in first["Case"])
    for value in first["Contract"]:
        prefix, counter = value.rsplit("-", 1)
        assert compound[("Contract", prefix)] >= int(counter), value

    apply(cut_over, SPEC)  # re-apply the cut-over from the restored legacy tables
    second = issue(db_url)
    for obj, values in second.items():
        assert not set(values) & set(first[obj]), obj
    assert min(int(v[-6:]) for v in second["Account"]) > max(int(v[-6:]) for v in first["Account"])
    for table, name in (
        ("Account", "Account_ID__c"),
        ("Case", "CaseNumber"),
        ("Contract", "Contract_Number__c"),
    ):
        values = column(cut_over, table, name)
        assert len(values) == len(set(values)), f"duplicate {table}.{name}"


def test_rollback_runs_once_per_env_and_prod_follows_staging(cut_over: Engine, tmp_path: Path) -> None:
    with pytest.raises(SpecRefused, match="staging applies found: never"):
        apply_spec(cut_over, flip(tmp_path, "pending-prod"), "production")
    assert apply_spec(cut_over, flip(tmp_path, "pending-staging"), "staging").outcome == "applied"
    again = apply_spec(cut_over, flip(tmp_path, "pending-staging"), "staging")
    assert again.outcome == "skipped" and "already applied to staging" in again.message
    changed = flip(tmp_path, "pending-prod", name="changed.md")
    changed.write_text(changed.read_text().replace("- drop_autonumber_schema\n", ""))
    with pytest.raises(SpecRefused, match="pending-prod needs a clean staging apply of this same spec"):
        apply_spec(cut_over, changed, "production")  # another digest than the one staging applied


def test_pending_prod_reads_the_staging_log_of_another_database(cut_over: Engine, tmp_path: Path) -> None:
    staging = create_engine(f"sqlite:///{tmp_path / 'staging.db'}")
    try:
        apply_log.ensure_log(staging)
        doc = read_document(flip(tmp_path, "pending-staging"))
        apply_log.start(staging, doc, "staging", "applied")
        result = apply_spec(
            cut_over, flip(tmp_path, "pending-prod", name="prod.md"), "production", staging_log=staging
        )
    finally:
        staging.dispose()
    assert result.outcome == "applied"
    assert counter_table.name not in table_names(cut_over)


def backups(engine: Engine) -> list[str]:
    return sorted(t for t in table_names(engine) if re.search(r"__bak_\d{8}$", t))


def test_backup_cleanup_drops_the_backups_only_when_verify_holds(cut_over: Engine) -> None:
    assert len(backups(cut_over)) == 4
    with cut_over.begin() as conn:
        conn.execute(sa.delete(counter_table).where(counter_table.c.field_id == "Case.CaseNumber"))
    with pytest.raises(VerifyError, match="V5"):
        apply_spec(cut_over, CLEANUP, "staging")
    assert len(backups(cut_over)) == 4
    assert outcomes(cut_over) == [("staging", "failed")]
    apply(cut_over, SPEC)  # the documented CounterMissing fix: re-run setup apply (idempotent)
    assert apply_spec(cut_over, CLEANUP, "staging").outcome == "applied"
    assert backups(cut_over) == []
    assert apply_spec(cut_over, CLEANUP, "production").outcome == "applied"


def test_a_failed_rollback_changes_nothing_where_ddl_is_transactional_and_completes_when_rerun(
    cut_over: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = issue(str(cut_over.url.render_as_string(hide_password=False)))
    before = dump(cut_over)

    def broken(conn: Any, args: Any) -> list[str]:
        raise RuntimeError("disk full")

    kind = operations.OPERATIONS["drop_autonumber_schema"]
    monkeypatch.setitem(operations.OPERATIONS, kind.name, dataclasses.replace(kind, run=broken))
    with pytest.raises(RuntimeError, match="disk full"):
        apply_spec(cut_over, flip(tmp_path, "pending-staging"), "staging")
    if isinstance(dialect_for(cut_over), TransactionalDDL):
        assert dump(cut_over) == before  # one transaction: all or nothing
    else:  # MariaDB: restore and correction committed with their DDL
        assert {t.name for t in LEGACY_TABLES} <= table_names(cut_over)
    monkeypatch.setitem(operations.OPERATIONS, kind.name, kind)
    assert apply_spec(cut_over, flip(tmp_path, "pending-staging"), "staging").outcome == "applied"
    assert outcomes(cut_over) == [("staging", "failed"), ("staging", "applied")]
    numbers, _ = legacy(cut_over)
    assert numbers[("Account", "Account_ID__c")] == max(int(v[-6:]) for v in first["Account"])
    assert counter_table.name not in table_names(cut_over)
