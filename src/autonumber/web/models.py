"""Pydantic bodies of the JSON API (they also document it at /docs)."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Scalar = str | int | float | bool | None
RecordIn = dict[str, Scalar]
"""A record as field name → scalar value; autonumber fields, Id and CreatedDate are refused."""

MAX_BULK = 1000


class ErrorOut(BaseModel):
    """Every error: a message a person can act on, plus the ids involved (field, token, rule …)."""

    model_config = ConfigDict(extra="allow")

    error: str


class RecordPage(BaseModel):
    """One page of an object's records, newest first."""

    object: str
    total: int
    limit: int
    offset: int
    records: list[dict[str, Any]]


class BulkIn(BaseModel):
    """Records to insert in one transaction (each autonumber field is reserved as one batch)."""

    model_config = ConfigDict(extra="forbid")

    records: list[RecordIn] = Field(min_length=1, max_length=MAX_BULK)


class BulkOut(BaseModel):
    """The stored records, numbers included, in input order."""

    object: str
    count: int
    records: list[dict[str, Any]]


class CounterOut(BaseModel):
    """The next value of one counter scope ('' is the global scope)."""

    scope_key: str
    next_value: int


class FieldOut(BaseModel):
    """One autonumber field: its rule, its counters and whether it can assign numbers."""

    field_id: str
    object: str
    field: str
    format: str
    scope: str
    start: int
    counter_width: int | None
    status: Literal["ok", "quarantined"]
    reason: str | None = None
    counters: list[CounterOut]


class PreviewIn(BaseModel):
    """A format to render with a sample counter, day and cross-record values; consumes no number."""

    model_config = ConfigDict(extra="forbid")

    format: str = Field(max_length=255, examples=["{Account.BillingCountryCode}-CSA-{YY}{MM}{DD}-{00}"])
    scope: str | None = Field(None, description="global, per_day or per_prefix (default: the field's)")
    counter: int = Field(1, ge=0)
    at: dt.date | None = Field(
        None, description="assigned-at day (UTC), like the CLI's `format preview --at`; default today"
    )
    date: dt.date | None = Field(
        None, description="deprecated alias of `at`", json_schema_extra={"deprecated": True}
    )
    values: dict[str, str] = Field(
        default_factory=dict,
        description="sample values of cross tokens, e.g. {'Account.BillingCountryCode': 'SG'}",
    )
    object: str | None = Field(None, description="check the metadata rules against this object")
    field: str | None = Field(None, description="the autonumber field being edited (Object.Field)")


    @property
    def day(self) -> dt.date | None:
        """The assigned-at day: `at`, else the deprecated `date`."""
        return self.at or self.date


class PreviewOut(BaseModel):
    """The rendered value and what the format is made of."""

    value: str
    format: str
    scope: str
    scope_key: str
    counter_width: int
    date_tokens: list[str]
    cross_tokens: list[str]
    samples_defaulted: list[str]
    max_length: int | None
    checked_against: str | None


class RuleChangeIn(BaseModel):
    """A new display format for an autonumber field (admin)."""

    model_config = ConfigDict(extra="forbid")

    format: str = Field(max_length=255)


class HealthOut(BaseModel):
    """The server is up and its database answers."""

    status: Literal["ok"]
    backend: str
    database_clock: str
    worker_pid: int


class ReadyOut(BaseModel):
    """The worker can take traffic: database reachable, catalog loaded."""

    status: Literal["ready"]
    objects: int
    worker_pid: int
