"""Field values checked against their column before any number is reserved.

Every value a database would refuse (a NUL or a lone surrogate in text, a number out of range, a
word in a number column, an unparseable date) is a RecordError naming the record and the field,
so a bad request consumes no number and writes nothing. Date-times become UTC here (`_when`), the
one place every write path converts them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

import sqlalchemy as sa

from ..db.replies import driver_code
from ..errors import RecordError

SCALARS = (str, int, float, bool, Decimal, date)
BIGINT_MAX = 2**63 - 1
INTEGER_MAX: dict[type[Any], int] = {
    sa.SmallInteger: 2**15 - 1,
    sa.Integer: 2**31 - 1,
    sa.BigInteger: BIGINT_MAX,
}
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


def checked_value(where: object, object_name: str, column: sa.Column[Any], value: Any) -> Any:
    """The value to store in `column`, or a RecordError naming `where` and the field."""
    if value is None:
        return None
    kind = column.type
    if _plain_text_fits(kind, value):  # the common case, without building an error message
        return value
    name = f"{where}: {object_name}.{column.name}"
    if not isinstance(value, SCALARS):
        raise RecordError(f"{name} must be a scalar, got {type(value).__name__}")
    if isinstance(kind, sa.String):
        return _text(name, kind, value)
    if isinstance(kind, sa.Boolean):
        return _boolean(name, value)
    if isinstance(kind, sa.Integer):  # a reflected type (an adopted table's) by its generic kind
        limit = next((INTEGER_MAX[c] for c in type(kind).__mro__ if c in INTEGER_MAX), BIGINT_MAX)
        return _integer(name, value, limit)
    if isinstance(kind, sa.Float):
        return _float(name, value)
    if isinstance(kind, sa.Numeric):
        digits = (kind.precision - (kind.scale or 0)) if kind.precision else None
        return _number(name, value, Decimal(10) ** digits if digits else None)
    if isinstance(kind, sa.DateTime | sa.Date):
        return _when(name, kind, value)
    return value


MYSQL_REFUSED = frozenset({1264, 1265, 1292, 1366, 1367, 1406, 1411})
"""MySQL/MariaDB errnos of a value its column cannot take (out of range, truncated, incorrect value
for the type, too long), some of which PyMySQL raises as OperationalError."""
PG_REFUSED = frozenset({"42804", "42846"})
"""PostgreSQL SQLSTATEs of a value of the wrong type (besides class 22, data exceptions)."""
SQLITE_DATATYPE = 3091
"""SQLITE_CONSTRAINT_DATATYPE: a STRICT table's column refused a value of another type."""
_NAMED_COLUMN = re.compile(r"column (\S+?)(?: at row|$)")
"""Where MySQL/MariaDB (`'qty'`, `` `db`.`table`.`qty` ``) and SQLite (`table.qty`) name the column."""


def refused_value(
    exc: sa.exc.StatementError, where: object, object_name: str, record: dict[str, Any], given: Sequence[str]
) -> RecordError | None:
    """A RecordError naming `where`, the field and its value when the database refused a value of
    `record` that the checks above let through (an application's own column type, a range only the
    database knows); None for any other error. The field is the one the database names, else each
    field the caller `given` a value, with its value."""
    code = driver_code(exc)
    data = isinstance(exc, sa.exc.DataError) or code in MYSQL_REFUSED or code in PG_REFUSED
    data = data or getattr(exc.orig, "sqlite_errorcode", None) == SQLITE_DATATYPE
    data = data or isinstance(exc.orig, TypeError | ValueError)  # the driver could not send it
    if not data and not (isinstance(code, str) and code.startswith("22")):
        return None
    cause = (str(getattr(exc, "orig", exc)).strip().splitlines() or [""])[0][:160]
    named = _NAMED_COLUMN.search(cause)
    field = named.group(1).split(".")[-1].strip("`'\"") if named else None
    fields = [field] if field in record else [f for f in given if record.get(f) is not None]
    shown = ", ".join(f"{object_name}.{f} = {_shown(record[f])}" for f in fields) or object_name
    return RecordError(f"{where}: the database refused {shown}; nothing was written: {cause}")


def _plain_text_fits(kind: sa.types.TypeEngine[Any], value: Any) -> bool:
    """ASCII text without NUL that fits a text column: stored as given (no lone surrogate either)."""
    if type(value) is not str or not isinstance(kind, sa.String) or "\x00" in value:
        return False
    return value.isascii() and (kind.length is None or len(value) <= kind.length)


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


def _integer(name: str, value: Any, limit: int) -> int:
    if isinstance(value, str) and INTEGER_TEXT.fullmatch(value.strip()):
        value = int(value)  # a console form posts text
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecordError(f"{name} must be a whole number, got {_shown(value)}")
    if abs(value) > limit:
        raise RecordError(f"{name} is out of range: at most {limit} in absolute value")
    return int(value)


def _float(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise RecordError(f"{name} must be a number, got {_shown(value)}")
    number = float(value)
    if not math.isfinite(number):
        raise RecordError(f"{name} must be a finite number, got {value}")
    return number


def _number(name: str, value: Any, limit: Decimal | None) -> Decimal:
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
    if not number.is_finite() or (limit is not None and abs(number) >= limit):
        raise RecordError(f"{name} is out of range: less than {limit} in absolute value")
    return number


def _when(name: str, kind: sa.types.TypeEngine[Any], value: Any) -> datetime | date:
    """An ISO 8601 date or date-time (text, or a Python date/datetime) as the column stores it.

    A date-time is an instant: one with an offset is converted to UTC, a naive one means UTC (one
    rule for the whole product, docs/engine.md). It is bound as naive UTC, since a column without a
    time zone keeps what it is given and a driver may drop or re-read the offset; a column with a
    time zone gets it aware. A `date` column keeps the day as written (the time, if any, dropped)."""
    if isinstance(value, str):
        check_text(value, name)
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError:
            raise RecordError(f"{name} must be an ISO 8601 date or date-time, got {_shown(value)}") from None
    if not isinstance(value, date):
        raise RecordError(f"{name} must be an ISO 8601 date or date-time, got {_shown(value)}")
    if not isinstance(kind, sa.DateTime):  # a calendar day
        return value.date() if isinstance(value, datetime) else value
    at = value if isinstance(value, datetime) else datetime(value.year, value.month, value.day)
    if at.utcoffset() is not None:
        at = at.astimezone(UTC)
    return at.replace(tzinfo=UTC) if kind.timezone else at.replace(tzinfo=None)
