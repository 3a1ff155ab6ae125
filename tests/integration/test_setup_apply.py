"""`setup apply` with the canonical spec: every field configured, idempotent, binding, lock-safe."""

from __future__ import annotations

import subprocess
import sys

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from autonumber.cli import main
from autonumber.db.schema import table_names
from autonumber.db.tables import LEGACY_TABLES, counter_table
from autonumber.errors import SetupError
from autonumber.rules.legacy import backup_name
from autonumber.setup.apply import PHASES, apply, phase_named, run_phases
from autonumber.setup.dataspec import DataSpec
from autonumber.setup.demo import fill_legacy
from autonumber.setup.generate import default_spec
from autonumber.setup.pack import field_id
from autonumber.setup.report import snapshot

SPEC = default_spec()


@pytest.mark.slow
def test_fresh_apply_configures_every_field_and_verify_passes(
    engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["setup", "apply", "--db", db_url, "--quiet"])
    assert info.value.code == 0
    got = snapshot(engine)
    assert {row[0] for row in got["fields"]} == {field_id(r.object, r.field) for r in SPEC.rules}
    assert len(got["fields"]) == len(SPEC.rules) == 129
    global_rules = [r for r in SPEC.rules if r.scope == "global"]
    assert len(got["counters"]) == len(global_rules) == 126
    assert all(code is not None for _, code in got["codes"]) and len(got["codes"]) == 9
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        main(["setup", "verify", "--db", db_url])
    assert info.value.code == 0
    assert capsys.readouterr().out == "verify: V1–V7 hold\n"


@pytest.mark.slow
def test_apply_twice_changes_nothing(engine: Engine) -> None:
    apply(engine, SPEC)
    first = snapshot(engine)
    results = apply(engine, SPEC)
    assert [r.name for r in results] == [p.name for p in PHASES]
    assert {r.name: r.changes for r in results if r.changes} == {}
    assert snapshot(engine) == first


@pytest.mark.slow
def test_populated_legacy_database_is_cut_over(engine: Engine) -> None:
    fill_legacy(engine, SPEC, 300)
    apply(engine, SPEC)
    present = table_names(engine)
    with engine.connect() as conn:
        day = f"{conn.execute(sa.select(sa.func.max(counter_table.c.created_date))).scalar_one():%Y%m%d}"
    for legacy in LEGACY_TABLES:
        assert legacy.name not in present
        assert backup_name(legacy.name, day) in present
    got = dict(((f, k), n) for f, k, n in snapshot(engine)["counters"])
    assert got[("Account.Account_ID__c", "")] == 3968
    assert got[("Contract.Contract_Number__c", "SG-CSA-260417-")] == 43
    assert got[("Case.CaseNumber", "")] == 300 + 25 + 1  # the legacy counter ran ahead
    again = apply(engine, SPEC)  # state (c): cut over already
    assert all(not r.changes for r in again)


@pytest.mark.slow
def test_backup_on_the_same_day_twice_does_not_fail(engine: Engine) -> None:
    fill_legacy(engine, SPEC, 20)
    phases = [phase_named(n) for n in ("schema", "standard_pack", "formats", "backup_legacy")]
    run_phases(engine, SPEC, phases)
    [second] = [r for r in run_phases(engine, SPEC, phases) if r.name == "backup_legacy"]
    assert len(second.changes) == 4 and all("already holds" in line for line in second.changes)


@pytest.mark.slow
def test_record_type_codes_assert_record_types_exist(engine: Engine) -> None:
    no_types = DataSpec(SPEC.meta, SPEC.objects, SPEC.rules, (), SPEC.source)
    run_phases(engine, no_types, [phase_named(n) for n in ("schema", "standard_pack", "formats")])
    with pytest.raises(SetupError, match=r"_System_RecordType is empty .*Contract.Contract_Number__c"):
        run_phases(engine, no_types, [phase_named("record_type_codes")])


def test_plan_lists_the_phases_in_order(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["setup", "plan"], ["setup", "apply", "--list"]):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 0
        out = capsys.readouterr().out
        positions = [out.index(p.name) for p in PHASES]
        assert positions == sorted(positions)


@pytest.mark.slow
def test_three_parallel_applies_all_succeed_with_one_final_state(engine: Engine, db_url: str) -> None:
    cmd = [
        sys.executable,
        "-c",
        "from autonumber.cli import main; main()",
        "setup",
        "apply",
        "--db",
        db_url,
        "--quiet",
    ]
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)
    ]
    outcomes = [(p.wait(timeout=300), p.stderr.read() if p.stderr else "") for p in procs]
    assert [code for code, _ in outcomes] == [0, 0, 0], outcomes
    parallel = snapshot(engine)
    with engine.connect() as conn:
        rows = conn.execute(sa.select(sa.func.count()).select_from(counter_table)).scalar_one()
    assert rows == len(parallel["counters"]) == 126
    apply(engine, SPEC)
    assert snapshot(engine) == parallel
