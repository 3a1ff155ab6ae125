"""The status lifecycle and rollback guards of `spec apply`, without a database (docs/runbook.md)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from autonumber.errors import ConfigError, SpecError, SpecRefused
from autonumber.specapply.document import parse_document, read_document
from autonumber.specapply.guards import check_env, check_staging, decide, is_rollback

ROOT = Path(__file__).resolve().parents[2]
ROLLBACK = ROOT / "data-specs/2026-04-19-autonumber-v2-rollback.md"
CLEANUP = ROOT / "data-specs/2026-05-02-autonumber-v2-backup-cleanup.md"
APPROVED = [{"name": "alice", "role": "engineer"}, {"name": "bob", "role": "sre"}]


def spec(
    status: str = "pending-staging",
    ticket: str | None = "INC-42",
    approvals: object = APPROVED,
    ops: str = "- restore_legacy_backups",
) -> str:
    lines = [
        "---",
        "apiVersion: data-spec/v1",
        "id: t-rollback",
        "scope: staging-then-production",
        f"status: {status}",
    ]
    if ticket is not None:
        lines.append(f"incident_ticket: {ticket}")
    if approvals is not None:
        lines.append(f"approvals: {approvals!r}".replace("'", '"'))
    return "\n".join([*lines, "---", "", "## Operations", "", "```yaml", ops, "```", ""])


def test_shipped_rollback_spec_is_a_skipped_draft() -> None:
    doc = read_document(ROLLBACK)
    assert doc.status == "draft-rollback" and is_rollback(doc)
    assert [op.name for op in doc.operations] == [
        "restore_legacy_backups",
        "set_legacy_current_numbers_from_live",
        "drop_autonumber_schema",
    ]
    for env in ("staging", "production"):
        decision = decide(doc, env)
        assert decision.action == "skip" and "draft-rollback" in decision.message


def test_cleanup_spec_is_pending_and_not_a_rollback() -> None:
    doc = read_document(CLEANUP)
    assert doc.status == "pending" and not is_rollback(doc)
    assert [op.name for op in doc.operations] == ["verify", "drop_backups"]
    assert decide(doc, "production").action == "apply"


def test_approved_rollback_applies_in_its_pinned_env() -> None:
    assert decide(parse_document(spec(), "t.md"), "staging").action == "apply"
    assert decide(parse_document(spec("pending-prod"), "t.md"), "production").action == "apply"


@pytest.mark.parametrize(
    ("text", "env", "match"),
    [
        (spec(ticket=None), "staging", "incident_ticket: INC-<number>"),
        (spec(ticket="JIRA-1"), "staging", "incident_ticket"),
        (spec(ticket="INC-"), "staging", "incident_ticket"),
        (spec(approvals=APPROVED[:1]), "staging", "missing: sre"),
        (spec(approvals=[]), "staging", "missing: engineer and sre"),
        (spec(approvals=None), "staging", "needs approvals"),
        (
            spec(approvals=[{"name": "alice", "role": "engineer"}, {"name": "@Alice", "role": "sre"}]),
            "staging",
            "two different people",
        ),
        (spec(approvals=[{"name": "alice"}]), "staging", "must have a name and a role"),
        (spec("pending-staging"), "production", "pinned to staging"),
        (spec("pending-prod"), "staging", "pinned to production"),
        (spec("pending"), "staging", "status pending is not allowed"),
    ],
    ids=[
        "no-ticket",
        "bad-ticket",
        "empty-ticket",
        "one-approval",
        "no-approvals",
        "approvals-missing",
        "same-person",
        "approval-without-role",
        "staging-status-in-prod",
        "prod-status-in-staging",
        "pending-rollback",
    ],
)
def test_each_guard_refuses_with_one_line(text: str, env: str, match: str) -> None:
    with pytest.raises(SpecRefused, match=match) as info:
        decide(parse_document(text, "t.md"), env)
    assert "\n" not in str(info.value) and info.value.exit_code == 3


def test_pending_prod_needs_a_clean_staging_apply_the_same_utc_day() -> None:
    doc = parse_document(spec("pending-prod"), "t.md")
    today = datetime(2026, 4, 19, 0, 5, tzinfo=UTC)
    check_staging(doc, [today - timedelta(minutes=4)], today)
    with pytest.raises(SpecRefused, match="staging applies found: never"):
        check_staging(doc, [], today)
    with pytest.raises(SpecRefused, match="2026-04-18"):
        check_staging(doc, [today - timedelta(minutes=6)], today)  # 23:59 the day before


def test_digest_ignores_only_the_status_line() -> None:
    a = parse_document(spec("pending-staging"), "t.md")
    b = parse_document(spec("pending-prod"), "t.md")
    c = parse_document(spec("pending-prod", ops="- drop_autonumber_schema"), "t.md")
    assert a.digest == b.digest != c.digest


def test_env_must_be_staging_or_production() -> None:
    with pytest.raises(ConfigError, match="staging, production"):
        check_env("prod")
    with pytest.raises(ConfigError):
        check_env(None)


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ("## Operations\n\n```sql\nDROP TABLE x;\n```\n", "a sql block is not executed"),
        ("## Operations\n\n```yaml\n{op: 1}\n```\n", "must be a YAML list"),
        ("## Notes\n\ntext\n", "nothing to apply"),
    ],
)
def test_malformed_specs_are_spec_errors(body: str, match: str) -> None:
    text = "---\napiVersion: data-spec/v1\nid: x\nscope: s\nstatus: pending\n---\n" + body
    with pytest.raises(SpecError, match=match):
        parse_document(text, "t.md")


def test_unknown_frontmatter_key_and_status() -> None:
    with pytest.raises(SpecError, match="unknown frontmatter key"):
        parse_document(spec().replace("scope:", "approver: x\nscope:"), "t.md")
    with pytest.raises(SpecError, match="is not one of"):
        decide(parse_document(spec("done"), "t.md"), "staging")
