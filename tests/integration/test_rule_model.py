"""One rule model, on every backend — no door drops an attribute, reverts a sanctioned
change, or lets two edits silently undo each other; adopted tables with any key column are edited
like the platform's own."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

import autonumber
from autonumber.db import create_engine, dialect_for
from autonumber.db.tables import system_field
from autonumber.errors import AutonumberError, RuleChangedMeanwhile
from autonumber.rules import EDIT_LOCK, RuleEdit, RuleRequest, commit_requests, set_rule, stored_rule
from autonumber.rules.store import RuleSpec
from autonumber.rules.verify import verify
from autonumber.setup.apply import phase_named, run_phases
from autonumber.setup.dataspec import DataSpec, SpecMeta
from autonumber.setup.standard import CONTRACT_RECORD_TYPES, CORE_OBJECTS, CORE_RULES
from support import FormClient, bootstrap_url, run_cli


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    bootstrap_url(db_url)
    eng = create_engine(db_url)
    yield eng
    eng.dispose()


def rule_of(engine: Engine, obj: str, fld: str) -> tuple[object, ...]:
    with engine.connect() as conn:
        got = stored_rule(conn, obj, fld)
    assert got is not None
    return (got.format, got.scope, got.start, got.numbering, got.time_zone, got.max_length)


def test_field_add_with_a_length_keeps_numbering_and_time_zone(
    engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["field", "add", "Account", "Invoice_No__c", "--format", "INV-{YYYY}-{00000}"]
    argv += ["--length", "20", "--numbering", "gapless", "--time-zone", "Asia/Tokyo", "--db", db_url]
    code, out = run_cli(argv, capsys)
    assert code == 0, out
    assert rule_of(engine, "Account", "Invoice_No__c") == (
        "INV-{YYYY}-{00000}",
        "global",
        1,
        "gapless",
        "Asia/Tokyo",
        20,
    )


def test_setup_apply_keeps_a_rule_changed_after_cut_over(
    engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with autonumber.connect(db_url) as p:
        issued = [p.records.insert("Case", {"Subject": str(i)})["CaseNumber"] for i in range(2)]
    argv = ["field", "set", "Case", "CaseNumber", "--format", "CS-{YYYY}-{000000}", "--numbering", "gapless"]
    code, out = run_cli([*argv, "--db", db_url], capsys)
    assert code == 0, out
    before = rule_of(engine, "Case", "CaseNumber")
    with autonumber.connect(db_url) as p:
        issued.append(p.records.insert("Case", {"Subject": "after the change"})["CaseNumber"])
    meta = SpecMeta("data-spec/v1", "bootstrap", "local", "applied", (), (), ())
    spec = DataSpec(meta, CORE_OBJECTS, CORE_RULES, CONTRACT_RECORD_TYPES, "test")
    phases = [phase_named(n) for n in ("schema", "standard_pack", "formats", "seed_counters")]
    results = run_phases(engine, spec, phases)
    formats = next(r for r in results if r.name == "formats")
    assert [line for line in formats.changes if "Case.CaseNumber" in line] == []  # a drift is no change
    assert [line for line in formats.notes if "Case.CaseNumber" in line] == [
        "kept the stored rule of Case.CaseNumber (format: stored 'CS-{YYYY}-{000000}', data-spec "
        "'{00000000}'; numbering: stored 'gapless', data-spec 'standard'): copy the stored rule into the "
        "data-spec to silence this"
    ]
    assert rule_of(engine, "Case", "CaseNumber") == before
    with autonumber.connect(db_url) as p:
        nxt = p.records.insert("Case", {"Subject": "after setup apply"})["CaseNumber"]
    assert nxt not in issued and nxt.startswith("CS-")
    assert verify(engine) == []


def test_two_admins_editing_one_field_never_overwrite_each_other(engine: Engine, db_url: str) -> None:
    """Both read the rule, then both write: the second is refused, the first one's change stays."""
    base = RuleEdit("Case", "CaseNumber")
    with engine.connect() as conn:
        stored = stored_rule(conn, "Case", "CaseNumber")
    assert stored is not None
    edits = {"a": replace(base, numbering="gapless"), "b": replace(base, time_zone="Asia/Tokyo")}
    outcome: dict[str, str] = {}
    holding, release = threading.Event(), threading.Event()

    def hold_the_lock() -> None:  # the two edits queue behind a third door's edit
        with dialect_for(engine).named_lock(engine, EDIT_LOCK, 30.0):
            holding.set()
            release.wait(30.0)

    def edit(who: str) -> None:
        try:
            commit_requests(engine, [RuleRequest("set", edits[who], base=stored.token)])
            outcome[who] = "stored"
        except RuleChangedMeanwhile as exc:
            outcome[who] = str(exc)

    holder = threading.Thread(target=hold_the_lock)
    holder.start()
    assert holding.wait(30.0)
    workers = [threading.Thread(target=edit, args=(who,)) for who in edits]
    for w in workers:
        w.start()
    release.set()
    for t in (holder, *workers):
        t.join(60.0)
    assert sorted(outcome.values()) == [
        "Case.CaseNumber: change refused: changed by someone else, re-read and retry",
        "stored",
    ]
    winner = next(who for who, what in outcome.items() if what == "stored")
    got = rule_of(engine, "Case", "CaseNumber")
    assert got[3:5] == (("gapless", "UTC") if winner == "a" else ("standard", "Asia/Tokyo"))


def test_a_stale_edit_is_refused_and_changes_nothing(
    engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with engine.connect() as conn:
        stale = stored_rule(conn, "Case", "CaseNumber")
    assert stale is not None
    set_rule(engine, RuleEdit("Case", "CaseNumber", start=5))
    with pytest.raises(RuleChangedMeanwhile):
        commit_requests(
            engine, [RuleRequest("set", RuleEdit("Case", "CaseNumber", start=7), base=stale.token)]
        )
    assert rule_of(engine, "Case", "CaseNumber")[2] == 5


@pytest.mark.parametrize("key", ["InvoiceKey", "id", "Id"])
def test_field_set_works_on_an_adopted_table_whatever_its_key_column(
    engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str], key: str
) -> None:
    md = sa.MetaData()
    table = sa.Table(
        "i23_invoices",
        md,
        sa.Column(key, sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("invoice_no", sa.String(20)),
    )
    md.create_all(engine)
    with engine.begin() as conn:
        conn.execute(sa.insert(table), [{"invoice_no": "INV-0041"}, {"invoice_no": "INV-0042"}])
    for argv in (
        ["object", "adopt", "Invoice__c", "--table", "i23_invoices"],
        ["field", "add", "Invoice__c", "invoice_no", "--format", "INV-{0000}"],
        ["field", "set", "Invoice__c", "invoice_no", "--format", "INV-{00000}", "--numbering", "gapless"],
    ):
        code, out = run_cli([*argv, "--db", db_url], capsys)
        assert code == 0, out
    assert rule_of(engine, "Invoice__c", "invoice_no")[:4] == ("INV-{00000}", "global", 1, "gapless")
    with autonumber.connect(db_url) as p:
        assert p.records.insert("Invoice__c", {})["invoice_no"] == "INV-00043"
    assert verify(engine) == []


_SPECS = [0]


def spec_file(tmp_path: Path, ops: list[dict[str, Any]]) -> Path:
    """A data-spec document whose operations are `ops` (None values left out)."""
    _SPECS[0] += 1
    lines = []
    for op in ops:
        items = [(k, v) for k, v in op.items() if v is not None]
        for i, (key, value) in enumerate(items):
            shown = f"'{value}'" if isinstance(value, str) and key != "op" else str(value)
            lines.append(f"{'- ' if i == 0 else '  '}{key}: {shown}")
    path = tmp_path / f"i23-{_SPECS[0]}.md"
    path.write_text(
        "---\napiVersion: data-spec/v1\n"
        f"id: 2026-06-01-i23-{_SPECS[0]}\nscope: staging-then-production\nstatus: pending\n---\n\n"
        "## Operations\n\n```yaml\n" + "\n".join(lines) + "\n```\n",
        encoding="utf-8",
    )
    return path


def apply_spec(path: Path, db_url: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    return run_cli(["spec", "apply", str(path), "--env", "production", "--db", db_url], capsys)


def test_a_spec_set_after_an_add_builds_on_the_added_rule(
    engine: Engine, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    add = {
        "op": "add_autonumber_field",
        "object": "Account",
        "field": "Ref__c",
        "format": "R-{YYYY}{MM}{DD}-{0000}",
    }
    add |= {"scope": "per_day", "start": 10, "numbering": "gapless", "time_zone": "Asia/Tokyo"}
    then = {"op": "set_rule", "object": "Account", "field": "Ref__c", "format": "RF-{YYYY}{MM}{DD}-{0000}"}
    code, out = apply_spec(spec_file(tmp_path, [add, then]), db_url, capsys)
    assert code == 0, out
    assert rule_of(engine, "Account", "Ref__c") == (
        "RF-{YYYY}{MM}{DD}-{0000}",
        "per_day",
        10,
        "gapless",
        "Asia/Tokyo",
        30,
    )


def test_a_spec_length_on_a_set_widens_the_column(
    engine: Engine, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    op = {"op": "set_rule", "object": "Case", "field": "CaseNumber", "format": "C-{00000000}", "length": 40}
    code, out = apply_spec(spec_file(tmp_path, [op]), db_url, capsys)
    assert code == 0, out
    assert rule_of(engine, "Case", "CaseNumber")[0] == "C-{00000000}"
    with engine.connect() as conn:
        f = system_field
        assert conn.execute(sa.select(f.c.MaxLength).where(f.c.Id == "Case.CaseNumber")).scalar_one() == 40


EDITS: dict[str, tuple[dict[str, Any], tuple[object, ...] | None]] = {
    "format": ({"format": "C-{00000000}"}, ("C-{00000000}", "global", 1, "standard", "UTC")),
    "scope": (
        {"format": "C-{YYYY}-{0000}", "scope": "per_prefix"},
        ("C-{YYYY}-{0000}", "per_prefix", 1, "standard", "UTC"),
    ),
    "start": ({"format": "{00000000}", "start": 50}, ("{00000000}", "global", 50, "standard", "UTC")),
    "numbering": (
        {"format": "{00000000}", "numbering": "gapless"},
        ("{00000000}", "global", 1, "gapless", "UTC"),
    ),
    "time_zone": (
        {"format": "{00000000}", "time_zone": "Asia/Tokyo"},
        ("{00000000}", "global", 1, "standard", "Asia/Tokyo"),
    ),
    "no-op": ({"format": "{00000000}"}, ("{00000000}", "global", 1, "standard", "UTC")),
    "bad-format": ({"format": "C-{0000"}, None),
    "bad-scope": ({"format": "{00000000}", "scope": "per_week"}, None),
    "bad-zone": ({"format": "{00000000}", "time_zone": "Mars/Olympus"}, None),
    "bad-start": ({"format": "{000}", "start": 1000}, None),
}


def declared(original: tuple[object, ...], given: dict[str, Any]) -> dict[str, Any]:
    """The whole rule a model declares for an edit: the original rule with the edit's values."""
    keys = ("format", "scope", "start", "numbering", "time_zone")
    return {**dict(zip(keys, original, strict=True)), **given}


@pytest.mark.parametrize("case", sorted(EDITS))
def test_every_door_gives_the_same_answer(
    engine: Engine, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    """CLI, HTTP API, the console's form, spec apply and Django's migrate store the same rule for
    the same edit, or all refuse it."""
    from fastapi.testclient import TestClient

    from autonumber.integrations.django_migrations import sync_field
    from autonumber.web import create_app

    given, expected = EDITS[case]
    original = rule_of(engine, "Case", "CaseNumber")[:5]

    def cli() -> bool:
        argv = ["field", "set", "Case", "CaseNumber"]
        for key, value in given.items():
            argv += [f"--{key.replace('_', '-')}", str(value)]
        return run_cli([*argv, "--db", db_url], capsys)[0] == 0

    def http() -> bool:
        with autonumber.connect(db_url) as p:
            client = TestClient(create_app(p, admin_token="t"), headers={"Authorization": "Bearer t"})
            r = client.put("/api/autonumber/fields/Case.CaseNumber", json=given)
            return r.status_code == 200

    def console() -> bool:
        """The rules page's form as a browser posts it: every input, the selects and the time zone
        showing the stored rule, start left empty unless typed."""
        with autonumber.connect(db_url) as p:
            app = create_app(p, admin_token="t")
            with FormClient(app, headers={"Accept": "text/html"}, follow_redirects=False) as browser:
                browser.post("/login", data={"token": "t"})
                now = rule_of(engine, "Case", "CaseNumber")
                form = {"format": now[0], "scope": now[1], "start": "", "numbering": now[3]}
                form |= {"time_zone": now[4], **{k: str(v) for k, v in given.items()}}
                r = browser.post("/rules/Case.CaseNumber", data=form)
                assert r.status_code == 303, r.text
                flash = browser.get(r.headers["location"]).text
                assert ("now uses" in flash) != ("error: " in flash), flash
                return "Case.CaseNumber now uses" in flash

    def spec() -> bool:
        op = {"op": "set_rule", "object": "Case", "field": "CaseNumber", **given}
        return apply_spec(spec_file(tmp_path, [op]), db_url, capsys)[0] == 0

    def django_migrate() -> bool:
        """A model whose AutoNumberField now declares the edited rule, brought in step by migrate."""
        try:
            sync_field(engine, "Case", RuleSpec("Case", "CaseNumber", **declared(original, given)))
        except AutonumberError:
            return False
        return True

    for door in (cli, http, console, spec, django_migrate):
        ok = door()
        got = rule_of(engine, "Case", "CaseNumber")[:5]
        assert (ok, got) == ((True, expected) if expected else (False, original)), door.__name__
        if expected:  # back to the original for the next door (the counters never go down)
            set_rule(engine, RuleEdit("Case", "CaseNumber", *original[:1], scope=str(original[1])))
            set_rule(engine, RuleEdit("Case", "CaseNumber", start=1, numbering="standard", time_zone="UTC"))


@pytest.mark.parametrize("case", sorted(EDITS))
def test_a_sqlalchemy_model_declaring_the_rule_gets_the_same_answer(
    engine: Engine, db_url: str, case: str
) -> None:
    """`autonumbered` on a new table stores what `field set` stores for the same rule, or refuses
    what it refuses; on a column already registered it never edits: only the same rule passes."""
    from sqlalchemy.orm import registry

    from autonumber.integrations.sqlalchemy import autonumbered, unbind

    given, expected = EDITS[case]
    original = rule_of(engine, "Case", "CaseNumber")[:5]
    rule = declared(original, given)
    md = sa.MetaData()
    fresh = sa.Table(
        "i23_orm_docs",
        md,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("doc_no", sa.String(40)),
    )
    md.create_all(engine)
    mapper = registry(metadata=md)

    class Doc:
        pass

    class Case:
        pass

    mapper.map_imperatively(Doc, fresh)
    mapper.map_imperatively(Case, sa.Table("Case", md, autoload_with=engine))
    with autonumber.connect(db_url) as p:
        for cls, key, object_name in ((Doc, "doc_no", "Doc__c"), (Case, "CaseNumber", "Case")):
            attribute = getattr(cls, key)
            try:
                autonumbered(attribute, p, object_name=object_name, **rule)
                ok = True
                unbind(attribute)
            except AutonumberError:
                ok = False
            with engine.connect() as conn:
                stored = stored_rule(conn, object_name, key)
            got = None if stored is None else rule_of(engine, object_name, key)[:5]
            if object_name == "Doc__c":  # a new field: the same stored rule, or the same refusal
                assert (ok, got) == ((True, expected) if expected else (False, None))
            else:  # registered already: only the rule as stored is accepted, nothing is changed
                assert (ok, got) == (case == "no-op", original)


def test_field_list_and_show_print_the_stored_rule_and_the_next_number(
    engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    code, out = run_cli(
        [
            "field",
            "set",
            "Case",
            "CaseNumber",
            "--format",
            "C-{0000}",
            "--scope",
            "per_prefix",
            "--time-zone",
            "Asia/Tokyo",
            "--db",
            db_url,
        ],
        capsys,
    )
    assert code == 0, out
    with autonumber.connect(db_url) as p:
        assert p.records.insert("Case", {"Subject": "x"})["CaseNumber"] == "C-0001"
    code, out = run_cli(["field", "show", "Case.CaseNumber", "--json", "--db", db_url], capsys)
    assert code == 0, out
    shown = json.loads(out)  # one field: one object
    assert {k: shown[k] for k in ("format", "scope", "start", "numbering", "time_zone", "status")} == {
        "format": "C-{0000}",
        "scope": "per_prefix",
        "start": 1,
        "numbering": "standard",
        "time_zone": "Asia/Tokyo",
        "status": "ok",
    }
    assert shown["counters"] == [
        {
            "scope_key": "C-",
            "next_value": 2,
            "next_number": "C-0002",
            "preview": "C-0002",
            "depends_on_record": False,
        }
    ]
    assert shown["per_prefix_keys"] == ["C-"]
    code, out = run_cli(["field", "list", "Case", "--json", "--db", db_url], capsys)
    assert code == 0, out
    assert [f["field_id"] for f in json.loads(out)] == ["Case.CaseNumber"]
    code, out = run_cli(["field", "list", "--db", db_url], capsys)
    assert code == 0 and "C-0002" in out and "Asia/T" in out, out  # the table (folded to the terminal)
    code, out = run_cli(["field", "show", "Case.Nope", "--db", db_url], capsys)
    assert code == 2 and out.strip().count("\n") == 0, out


def test_the_gap_audit_reads_values_stored_under_an_earlier_format(
    engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with autonumber.connect(db_url) as p:
        for i in range(3):
            p.records.insert("Case", {"Subject": str(i)})
    code, out = run_cli(
        ["field", "set", "Case", "CaseNumber", "--format", "{000000000}", "--db", db_url], capsys
    )
    assert code == 0, out
    with autonumber.connect(db_url) as p:
        assert p.records.insert("Case", {"Subject": "wider"})["CaseNumber"] == "000000004"
    code, out = run_cli(["audit", "gaps", "Case.CaseNumber", "--db", db_url], capsys)
    assert code == 0, out  # 00000001-00000003 are stored, under the earlier format
    assert "0 missing" in out
