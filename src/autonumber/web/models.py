"""Pydantic bodies of the JSON API (they also document it at /docs)."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from autonumber.commands.fields import CounterView, FieldView

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


CounterOut = CounterView
FieldOut = FieldView
"""A field as the API shows it: the one view of `autonumber.commands.fields` (`field show --json`)."""


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
    """A partial rule change for an autonumber field (admin): what is omitted stays as stored."""

    model_config = ConfigDict(extra="forbid")

    format: str | None = Field(None, max_length=255, description="display format (default: unchanged)")
    length: int | None = Field(
        None,
        ge=1,
        le=255,
        description="column length: widens a custom object's column (never below its longest value); "
        "on an adopted table, the width the application gave its column (default: unchanged)",
    )
    scope: str | None = Field(None, description="global, per_day or per_prefix (default: unchanged)")
    start: int | None = Field(
        None, ge=0, description="first number when no value exists (default: unchanged)"
    )
    numbering: Literal["standard", "gapless"] | None = Field(None, description="default: unchanged")
    time_zone: str | None = Field(None, max_length=64, description="IANA zone; default: unchanged")
    allocation: str | None = Field(
        None, max_length=16, description="single or blocks:N (N 2..100000); default: unchanged"
    )
    base: str | None = Field(
        None,
        max_length=64,
        description="the field's `token` as read: if the rule changed since, 409 (re-read and retry); "
        "default: the rule stored when the request arrives",
    )
    fiscal_year_start: int | None = Field(
        None, description="month 1-12 a fiscal year starts on ({FYYYY}/{FYY}); default: unchanged"
    )
    date_source: str | None = Field(
        None,
        max_length=64,
        description="clock, CreatedDate or a date/datetime field of the record, e.g. InvoiceDate; "
        "default: unchanged",
    )
    shared_counter: str | None = Field(
        None,
        max_length=48,
        description="draw from this shared counter with its other members (they must match: scope "
        "global or per_day, counter width, start, allocation; per_day also time zone and date "
        'source); "" leaves it for a counter of the field\'s own; default: unchanged',
    )


class CounterSetIn(BaseModel):
    """Set the next number of one counter (admin), as `autonumber counter set` does."""

    model_config = ConfigDict(extra="forbid")

    next: int = Field(ge=0, le=10**18 - 1, description="the next number to hand out")
    scope_key: str | None = Field(
        None, max_length=64, description="the counter of a per_day/per_prefix field (global: omit)"
    )


class CounterLineOut(BaseModel):
    """One counter row: its next value, the number it prints as (null when that depends on the
    record) and the floor (one past the greatest value the scope ever reserved: the lowest next
    value a set accepts)."""

    scope_key: str
    next_value: int
    next_number: str | None
    floor: int


class CountersOut(BaseModel):
    """A field's counters (`autonumber counter show`)."""

    field_id: str
    field: str
    scope: str
    counters: list[CounterLineOut]


class FieldRemovedOut(BaseModel):
    """What removing a rule did: the field keeps its column and values, its counters are floors."""

    field_id: str
    field: str
    changes: list[str]


class FieldRenameIn(BaseModel):
    """A field's new API name (admin)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(max_length=64, description="the new API name; the field keeps its id")


class CounterMoveOut(BaseModel):
    """What a counter set did: the next value before and after (equal: nothing changed)."""

    field_id: str
    field: str
    scope_key: str
    was: int
    now: int
    message: str


class GapOut(BaseModel):
    """A run of counter values the counter moved past that no stored record carries."""

    scope_key: str
    first: int
    last: int
    count: int
    reason: str
    numbers: str | None = Field(None, description="the run as printed on documents, when known")
    reserved_at: dt.datetime | None = None
    released_at: dt.datetime | None = None
    caller: str | None = Field(None, description="who reserved it: `label (host:pid)` or `host:pid`")


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
