"""The status lifecycle and the rollback guards (docs/runbook.md): pure decisions, no database.

- `pending` → applied in the environment given, then recorded `applied` for it;
- `applied` and `draft-rollback` → skipped (exit 0, nothing applied);
- a rollback spec moves `draft-rollback` → `pending-staging` → `pending-prod`; an env-pinned status
  naming another environment than `--env` is refused, and so is `pending` on a rollback spec;
- a rollback spec needs `incident_ticket: INC-<digits>` and two approvals by different people, one
  `engineer` and one `sre`;
- `pending-prod` needs a clean staging apply of the same spec on the same UTC day (checked by the
  runner against the apply log, see `check_staging`).

Every refusal is a SpecRefused (exit 3) with one line naming the spec.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from autonumber.errors import ConfigError, SpecError, SpecRefused

from .document import Approval, SpecDocument

ENVS = ("staging", "production")
STATUSES = ("pending", "applied", "draft-rollback", "pending-staging", "pending-prod")
PINNED = {"pending-staging": "staging", "pending-prod": "production"}
ROLLBACK_STATUSES = frozenset({"draft-rollback", "pending-staging", "pending-prod"})
ROLLBACK_OPERATIONS = frozenset(
    {
        "restore_legacy_backups",
        "set_legacy_current_numbers_from_live",
        "drop_autonumber_schema",
    }
)
TICKET = re.compile(r"INC-\d+")
ROLES = ("engineer", "sre")


@dataclass(frozen=True)
class Decision:
    """What to do with a spec in an environment."""

    action: Literal["apply", "skip"]
    message: str


def check_env(env: str | None) -> str:
    """The environment, which must be staging or production."""
    if env not in ENVS:
        raise ConfigError(f"--env (or AUTONUMBER_ENV) must be one of {', '.join(ENVS)}, got {env!r}")
    return env


def is_rollback(doc: SpecDocument) -> bool:
    """A rollback spec: a rollback status or any operation that undoes the cut-over."""
    return doc.status in ROLLBACK_STATUSES or any(op.name in ROLLBACK_OPERATIONS for op in doc.operations)


def decide(doc: SpecDocument, env: str) -> Decision:
    """Apply or skip; SpecRefused when a guard fails. Reads nothing but the spec."""
    name = f"data-spec {doc.id}"
    if doc.status not in STATUSES:
        raise SpecError(f"{name}: status {doc.status!r} is not one of {', '.join(STATUSES)}")
    if doc.status == "draft-rollback":
        return Decision(
            "skip",
            f"{name} is a draft rollback (status draft-rollback): skipped, nothing "
            "applied; to roll back flip it to pending-staging, then pending-prod",
        )
    if doc.status == "applied":
        return Decision("skip", f"{name} has status applied: skipped, nothing to do")
    pinned = PINNED.get(doc.status)
    if pinned is not None and pinned != env:
        raise SpecRefused(f"{name}: status {doc.status} is pinned to {pinned}, refusing to apply it to {env}")
    if is_rollback(doc):
        if doc.status == "pending":
            raise SpecRefused(
                f"{name} is a rollback spec: status pending is not allowed; it moves "
                "draft-rollback → pending-staging → pending-prod"
            )
        check_ticket(doc)
        check_approvals(doc)
    return Decision("apply", f"{name}: applying to {env}")


def check_ticket(doc: SpecDocument) -> None:
    """`incident_ticket:` must be INC-<digits>."""
    ticket = doc.incident_ticket
    if not isinstance(ticket, str) or not TICKET.fullmatch(ticket.strip()):
        raise SpecRefused(
            f"data-spec {doc.id} is a rollback spec and needs incident_ticket: INC-<number> "
            f"in its frontmatter, got {ticket!r}"
        )


def approvals(doc: SpecDocument) -> list[Approval]:
    """The frontmatter approvals as (name, role) pairs; SpecRefused when malformed."""
    raw = doc.approvals
    if not isinstance(raw, list):
        raise SpecRefused(
            f"data-spec {doc.id} is a rollback spec and needs approvals: a list of "
            f"{{name, role}} entries, got {raw!r}"
        )
    out = []
    for item in raw:
        if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in ("name", "role")):
            raise SpecRefused(f"data-spec {doc.id}: approval {item!r} must have a name and a role")
        out.append(Approval(item["name"].strip().lstrip("@").lower(), item["role"].strip().lower()))
    return out


def check_approvals(doc: SpecDocument) -> None:
    """Two different people: one engineer and one sre."""
    given = approvals(doc)
    engineers = {a.name for a in given if a.role == "engineer" and a.name}
    sres = {a.name for a in given if a.role == "sre" and a.name}
    if not engineers or not sres:
        missing = " and ".join(r for r, who in zip(ROLES, (engineers, sres), strict=True) if not who)
        raise SpecRefused(
            f"data-spec {doc.id} is a rollback spec and needs two approvals (one engineer, "
            f"one sre); missing: {missing}"
        )
    if not any(e != s for e in engineers for s in sres):
        raise SpecRefused(
            f"data-spec {doc.id}: the engineer and the sre approval must be two different "
            f"people, got {', '.join(sorted(engineers | sres))} for both"
        )


def check_staging(doc: SpecDocument, clean_staging_days: Iterable[datetime], today: datetime) -> None:
    """pending-prod: the same spec (same digest) applied cleanly to staging on today's UTC date."""
    if doc.status != "pending-prod":
        return
    days = sorted({d.date() for d in clean_staging_days})
    if today.date() not in days:
        seen = ", ".join(str(d) for d in days) or "never"
        raise SpecRefused(
            f"data-spec {doc.id}: pending-prod needs a clean staging apply of this same spec "
            f"today ({today.date()} UTC); staging applies found: {seen}"
        )
