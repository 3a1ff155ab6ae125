"""A rule changed behind the applier's back: the catalog re-validates it, the field is
quarantined (assign_one/assign_batch/insert raise RuleQuarantined, the gauge counts it) until a repair
through the applier — `field set` or a data-spec's `set_rule` — lifts it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from prometheus_client import REGISTRY

import autonumber
from autonumber.cli import main
from autonumber.db import create_engine
from autonumber.db.tables import system_field
from autonumber.errors import RuleQuarantined
from autonumber.runtime import Platform
from autonumber.specapply import apply_spec
from support import bootstrap_url

FIELD = "Account.Account_ID__c"
GOOD = "IBG-B-{YYYY}{MM}{DD}-{000000}"
REPAIR = "IBG-B-{YYYY}{MM}{DD}-{0000000}"


@pytest.fixture
def platform(db_url: str) -> Iterator[Platform]:
    bootstrap_url(db_url)
    with autonumber.connect(db_url, poll_interval=0) as p:
        yield p


def gauge() -> float:
    return REGISTRY.get_sample_value("autonumber_quarantined_fields") or 0.0


def tamper(url: str, fmt: str) -> None:
    """What an admin with a SQL console does: a raw UPDATE, no applier, no verify."""
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(
                sa.update(system_field).where(system_field.c.Id == FIELD).values(auto_number_format=fmt)
            )
    finally:
        engine.dispose()


def assert_quarantined(platform: Platform, reason: str) -> None:
    for call in (
        lambda: platform.engine.assign_one(FIELD, {}),
        lambda: platform.engine.assign_batch(FIELD, [{}, {}]),
        lambda: platform.records.insert("Account", {"Name": "x"}),
    ):
        with pytest.raises(RuleQuarantined) as info:
            call()
        assert info.value.field_id == FIELD and reason in info.value.reason
    assert gauge() == 1


@pytest.mark.parametrize(
    ("garbage", "reason"),
    [
        ("IBG-B-{YYYY}{MM}{DD}-{000000", "rule 0"),
        ("{Account.NoSuchField}-{000}", "NoSuchField"),
        ("IBG-{YYYY}", "counter"),
    ],
    ids=["syntax", "unknown-field", "no-counter"],
)
def test_raw_update_quarantines_on_the_next_assignment_and_field_set_lifts_it(
    platform: Platform, db_url: str, garbage: str, reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    first = platform.engine.assign_one(FIELD, {})
    assert gauge() == 0
    tamper(db_url, garbage)
    assert_quarantined(platform, reason)
    platform.engine.assign_one("Case.CaseNumber", {})  # other fields keep working

    with pytest.raises(SystemExit) as info:
        main(["field", "set", "Account", "Account_ID__c", "--format", REPAIR, "--db", db_url])
    assert info.value.code == 0, capsys.readouterr().err
    after = platform.engine.assign_one(FIELD, {})
    assert gauge() == 0
    assert len(after) == len(first) + 1 and int(after[-7:]) == int(first[-6:]) + 1


def test_a_spec_set_rule_repairs_it(platform: Platform, db_url: str, tmp_path: Path) -> None:
    platform.engine.assign_one(FIELD, {})
    tamper(db_url, "not a format {")
    assert_quarantined(platform, "rule 0")
    spec = tmp_path / "repair.md"
    spec.write_text(
        "---\napiVersion: data-spec/v1\nid: 2026-04-20-repair-account-id\nscope: staging-then-production\n"
        "status: pending\n---\n\n## Operations\n\n```yaml\n"
        f"- op: set_rule\n  object: Account\n  field: Account_ID__c\n  format: '{GOOD}'\n```\n"
    )
    engine = create_engine(db_url)
    try:
        assert apply_spec(engine, spec, "production").outcome == "applied"
    finally:
        engine.dispose()
    assert platform.engine.assign_one(FIELD, {}).startswith("IBG-B-")
    assert gauge() == 0


def test_quarantine_is_noticed_within_the_polling_interval(platform: Platform, db_url: str) -> None:
    with autonumber.connect(db_url, poll_interval=0.2) as polled:
        polled.engine.assign_one(FIELD, {})
        tamper(db_url, "broken {0")
        deadline = time.monotonic() + 30  # bounded wait, no timing assertion
        while time.monotonic() < deadline:
            try:
                polled.engine.assign_one(FIELD, {})
            except RuleQuarantined:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the tampered rule was never quarantined")


def test_field_set_refuses_a_garbage_repair_and_keeps_the_quarantine(
    platform: Platform, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    tamper(db_url, "broken {0")
    with pytest.raises(SystemExit) as info:
        main(["field", "set", "Account", "Account_ID__c", "--format", "still {broken", "--db", db_url])
    assert info.value.code == 2 and "rule 0" in capsys.readouterr().err
    assert_quarantined(platform, "rule 0")
