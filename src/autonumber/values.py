"""Field values checked against their column before any number is reserved.

Every value a database would refuse (a NUL or a lone surrogate in text, a number out of range, a
word in a number column, an unparseable date) is a RecordError naming the record and the field,
so a bad request consumes no number and writes nothing.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

import sqlalchemy as sa

from .errors import RecordError

SCALARS = (str, int, float, bool, Decimal)
BIGINT_MAX = 2**63 - 1
NUMERIC_MAX = Decimal(10) ** 14
"""Numeric(18, 4): 14 digits before the point."""
INTEGER_TEXT = re.compile(r"[+-]?[0-9]{1,19}")
NUMBER_TEXT = re.compile(r"[+-]?[0-9]{1,18}(\.[0-9]{1,18})?")
BOOLEAN_WORDS = {"true": True, "false": False, "1": True, "0": False}


def text_problem(value: str) -> str | None:
    """Why `value` cannot be stored as text on every backend, or None."""
    nul = value.find("\x00")
    if nul >= 0:
        return f"contains a NUL character (U+0000) at position {nul + 1}"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"contains a lone surrogate (U+{ord(value[exc.start]):04X}) at position {exc.start + 1}"
    return None


def check_text(value: str, what: str) -> str:
    """`value` unchanged, or a RecordError saying `what` holds a NUL or a lone surrogate."""
    problem = text_problem(value)
    if problem:
        raise RecordError(f"{what} {problem}; send valid UTF-8 text without NUL")
    return value


def checked_value(where: str, object_name: str, column: sa.Column[Any], value: Any) -> Any:
    """The value to store in `column`, or a RecordError naming `where` and the field."""
    if value is None:
        return None
    name = f"{where}: {object_name}.{column.name}"
    if not isinstance(value, SCALARS):
        raise RecordError(f"{name} must be a scalar, got {type(value).__name__}")
    kind = column.type
    if isinstance(kind, sa.String):
        return _text(name, kind, value)
    if isinstance(kind, sa.Boolean):
        return _boolean(name, value)
    if isinstance(kind, sa.BigInteger):
        return _integer(name, value)
    if isinstance(kind, sa.Numeric):
        return _number(name, value)
    if isinstance(kind, sa.DateTime):
        return _timestamp(name, value)
    return value


def _shown(value: Any) -> str:
    return repr(value)[:60]


def _text(name: str, kind: sa.String, value: Any) -> str:
    if not isinstance(value, str):
        raise RecordError(f"{name} must be text, got {_shown(value)}")
    check_text(value, name)
    if kind.length is not None and len(value) > kind.length:
        raise RecordError(f"{name} is {len(value)} characters; at most {kind.length} fit")
    return value


def _boolean(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in BOOLEAN_WORDS:
        return BOOLEAN_WORDS[value.lower()]
    raise RecordError(f"{name} must be true or false, got {_shown(value)}")


def _integer(name: str, value: Any) -> int:
    if isinstance(value, str) and INTEGER_TEXT.fullmatch(value.strip()):
        value = int(value)  # a console form posts text
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecordError(f"{name} must be a whole number, got {_shown(value)}")
    if abs(value) > BIGINT_MAX:
        raise RecordError(f"{name} is out of range: at most {BIGINT_MAX} in absolute value")
    return int(value)


def _number(name: str, value: Any) -> Decimal:
    if isinstance(value, bool) or (isinstance(value, str) and not NUMBER_TEXT.fullmatch(value.strip())):
        raise RecordError(f"{name} must be a number, got {_shown(value)}")
    if isinstance(value, str):
        value = value.strip()
    if isinstance(value, float) and not math.isfinite(value):
        raise RecordError(f"{name} must be a finite number, got {value}")
    try:
        number = Decimal(str(value)) if isinstance(value, float) else Decimal(value)
    except InvalidOperation:
        raise RecordError(f"{name} must be a number, got {_shown(value)}") from None
    if not number.is_finite() or abs(number) >= NUMERIC_MAX:
        raise RecordError(f"{name} is out of range: less than {NUMERIC_MAX} in absolute value")
    return number


def _timestamp(name: str, value: Any) -> datetime:
    if not isinstance(value, str):
        raise RecordError(f"{name} must be an ISO 8601 date or timestamp, got {_shown(value)}")
    check_text(value, name)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise RecordError(f"{name} must be an ISO 8601 date or timestamp, got {_shown(value)}") from None
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(UTC).replace(tzinfo=None)
    return parsed
