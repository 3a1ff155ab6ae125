"""Pydantic bodies of the JSON API (they also document it at /docs)."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Scalar = str | int | float | bool | None
RecordIn = dict[str, Scalar]
"""A record as field name → scalar value; autonumber fields, Id and CreatedDate are refused."""

MAX_BULK = 1000
MAX_REJECTED = 1000


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


class RejectedLine(BaseModel):
    """A line of an NDJSON import refused by the checks, with why."""

    line: int
    error: str


class ImportOut(BaseModel):
    """What an NDJSON import stored (read the records back by listing them; a million would not fit
    one answer) and which lines it refused (the first MAX_REJECTED, with `rejected_count` in all)."""

    object: str
    count: int
    last_line: int
    rejected_count: int
    rejected: list[RejectedLine]


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
    numbering: Literal["standard", "gapless"] = Field(
        "standard",
        description="standard: reserved off the caller's transaction (a rollback leaves a "
        "gap); gapless: taken inside it, the counter row locked until it ends",
    )
    time_zone: str = Field("UTC", description="IANA zone whose calendar dates the numbers")
    fiscal_year_start: int = Field(1, description="month 1-12 a fiscal year starts on ({FYYYY}/{FYY})")
    date_source: str = Field(
        "clock", description="where the dates come from: clock, CreatedDate or a date field of the record"
    )


class PreviewIn(BaseModel):
    """A format to render with a sample counter, day and cross-record values; consumes no number."""

    model_config = ConfigDict(extra="forbid")

    format: str = Field(max_length=255, examples=["{Account.BillingCountryCode}-CSA-{YY}{MM}{DD}-{00}"])
    scope: str | None = Field(None, description="global, per_day or per_prefix (default: the field's)")
    counter: int = Field(1, ge=0)
    date: dt.date | None = Field(None, description="assigned-at day (in time_zone); default today")
    at: dt.datetime | None = Field(
        None,
        description="assigned-at instant, ISO with offset (wins over date), e.g. 2026-04-17T20:00:00+00:00",
    )
    time_zone: str | None = Field(
        None, description="IANA zone for the date tokens (default: the field's, else UTC)"
    )
    fiscal_year_start: int | None = Field(
        None, description="month 1-12 a fiscal year starts on (default: the field's, else 1)"
    )
    values: dict[str, str] = Field(
        default_factory=dict,
        description="sample values of cross tokens, e.g. {'Account.BillingCountryCode': 'SG'}",
    )
    object: str | None = Field(None, description="check the metadata rules against this object")
    field: str | None = Field(None, description="the autonumber field being edited (Object.Field)")


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
    """A rule change for an autonumber field (admin); scope and start default to the stored ones."""

    model_config = ConfigDict(extra="forbid")

    format: str = Field(max_length=255)
    scope: str | None = Field(None, description="global, per_day or per_prefix (default: unchanged)")
    start: int | None = Field(
        None, ge=0, description="first number when no value exists (default: unchanged)"
    )
    numbering: Literal["standard", "gapless"] | None = Field(None, description="default: unchanged")
    time_zone: str | None = Field(None, max_length=64, description="IANA zone; default: unchanged")
    fiscal_year_start: int | None = Field(
        None, description="month 1-12 a fiscal year starts on ({FYYYY}/{FYY}); default: unchanged"
    )
    date_source: str | None = Field(
        None,
        max_length=64,
        description="clock, CreatedDate or a date/datetime field of the record, e.g. InvoiceDate; "
        "default: unchanged",
    )


class GapOut(BaseModel):
    """A run of counter values the counter moved past that no stored record carries."""

    scope_key: str
    first: int
    last: int
    count: int
    reason: str


class GapsOut(BaseModel):
    """The gap audit of one field (exit code 1 of `autonumber audit gaps` ⇔ `gaps` not empty)."""

    field_id: str
    field: str
    numbering: str
    checked: int
    missing: int
    gaps: list[GapOut]


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
