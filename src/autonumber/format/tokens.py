"""Typed tokens of a display format (docs/formats.md) and the constants the grammar shares."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass

SCOPES: tuple[str, ...] = ("global", "per_day", "per_prefix")
"""Counter scopes: one counter per field, per day of the field's time zone, or per text shown around
the counter."""
DATE_SOURCES: tuple[str, ...] = ("assigned_at", "created_date", "custom_field")
"""Where a rule's date tokens and its per_day/per_prefix days come from: the database clock sample
of the reservation, the record's CreatedDate (that same sample on the platform's objects), or a
date/datetime field of the record itself (`auto_number_date_field`)."""
DATE_FIELD_TYPES: tuple[str, ...] = ("date", "datetime")
ON_CHANGE: tuple[str, ...] = ("keep_existing", "regenerate_all")
"""What a format change does to stored values (kept: old values stay as they are)."""
NUMBERING: tuple[str, ...] = ("standard", "gapless")
"""Numbering policies: `standard` reserves off the caller's transaction (a rollback leaves a gap);
`gapless` takes the number inside it, with the counter row locked until it ends."""

MAX_WIDTH = 18
"""Widest counter token: BIGINT holds 19 digits, one is kept as overflow headroom (docs/formats.md)."""

TAXONOMY_OBJECT = "RecordType"
"""`{RecordType.X}` is sugar for a lookup through the record's `RecordTypeId` (docs/cross-record.md)."""

RECORD_TYPE_FK = "RecordTypeId"

VALID_TOKENS = (
    "{0…0} (counter, 1-18 zeros), {YYYY}, {YY}, {MM}, {DD}, {HH}, {mm}, {ss}, {FYYYY}, {FYY}, "
    "{Object.Field}, {Object.Field|default}, {RecordType.Field}"
)

FISCAL_MONTHS = range(1, 13)
"""A fiscal year starts on the first day of one of these months (1: the calendar year)."""


class TokenKind(enum.Enum):
    """What a token renders: literal text, the counter, one date part, or a cross-record value."""

    LITERAL = "literal"
    COUNTER = "counter"
    YEAR4 = "YYYY"
    YEAR2 = "YY"
    MONTH = "MM"
    DAY = "DD"
    HOUR = "HH"
    MINUTE = "mm"
    SECOND = "ss"
    FISCAL4 = "FYYYY"
    FISCAL2 = "FYY"
    CROSS = "cross"
    TAXONOMY = "taxonomy"

    @property
    def is_date(self) -> bool:
        """True for the date and time tokens (everything read off the rule's clock)."""
        return self in _DATE_KINDS


_DATE_KINDS = frozenset(
    {
        TokenKind.YEAR4,
        TokenKind.YEAR2,
        TokenKind.MONTH,
        TokenKind.DAY,
        TokenKind.HOUR,
        TokenKind.MINUTE,
        TokenKind.SECOND,
        TokenKind.FISCAL4,
        TokenKind.FISCAL2,
    }
)
TIME_KINDS = frozenset({TokenKind.HOUR, TokenKind.MINUTE, TokenKind.SECOND})
DATE_NAMES: dict[str, TokenKind] = {k.value: k for k in _DATE_KINDS}


@dataclass(frozen=True)
class CrossRef:
    """A `{Object.Field}` token; `taxonomy` when the object is `RecordType` (docs/cross-record.md).

    `literal` is always the canonical `{Object.Field}` (what token refs and overrides name);
    `default` the text shown when the chain yields no value (`{Object.Field|XX}`; None: fail closed).
    A nested-dot token keeps its whole name in `literal` (`{Opportunity.Account.BillingCountryCode}`).
    """

    literal: str
    object: str
    field: str
    taxonomy: bool
    default: str | None = None
    path: tuple[str, ...] = ()
    """Objects walked before `object` (`{Opportunity.Account.BillingCountryCode}`: Opportunity)."""

    @property
    def key(self) -> str:
        """The `Object.Field` key under which render() expects the value."""
        return f"{self.object}.{self.field}"


@dataclass(frozen=True)
class Token:
    """One segment of a format; `position` is the 0-based index of its first character."""

    kind: TokenKind
    text: str
    position: int
    width: int = 0
    ref: CrossRef | None = None


def quote_format(fmt: str, limit: int = 80) -> str:
    """Quote a format for an error message on one line, shortened when it is very long."""
    shown = fmt if len(fmt) <= limit else fmt[:limit] + "…"
    # JSON escapes control characters; a lone surrogate is escaped too, so the line can be encoded.
    return json.dumps(shown, ensure_ascii=False).encode("utf-8", "backslashreplace").decode("utf-8")
