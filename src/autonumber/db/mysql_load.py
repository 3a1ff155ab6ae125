"""MariaDB's bulk path: `LOAD DATA LOCAL INFILE` fed from memory, checked row for row.

Why it is safe to turn on (docs/import.md, "MariaDB: LOAD DATA LOCAL, fed from memory and checked"):

- PyMySQL's own `local_infile=True` sends whatever file the server names, in answer to any query.
  Here the connection only advertises the capability (`CLIENT.LOCAL_FILES`, so the server accepts
  the statement); PyMySQL's `_local_infile` stays False, which refuses every file request, except
  while `load_local` runs its own statement. Then the file sender below sends the batch it was
  given, from memory, and only when the server asks for this statement's name; no file is opened.
- With LOCAL the server cannot stop the client mid-transfer, so it turns duplicate-key and
  conversion errors into warnings and skips or truncates the row. Every LOAD DATA is therefore
  followed by SHOW WARNINGS: any warning, or fewer rows stored than sent, raises the error the
  INSERT would have raised (1062 as IntegrityError, 1265 as DataError, …), and the caller's
  transaction rolls back. Nothing is skipped silently. (The server's reply counts the warnings:
  when it says none and every row was stored, SHOW WARNINGS is not sent.)

It uses two private names of PyMySQL (`_send_local_file`, `Connection._local_infile`); when either
is missing the multi-row INSERT is used (`available()`, `MySQLDialect.loads_local`).
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

import sqlalchemy as sa

from .bulk import Handed, NotDelimitable, delimited, nobody_waits

ARMED = "_autonumber_local_batch"
"""The attribute of a PyMySQL connection that holds (file name, bytes, called once the bytes are
written) while `load_local` runs."""
FILE_NAME = "autonumber-batch.tsv"
"""The name the statement gives the batch: never opened, only compared with the server's request."""
CHUNK = 64 * 1024
NOT_ALLOWED = {1148, 3948, 4166}
"""The server refuses LOCAL (local_infile=OFF on MariaDB 1148; MySQL 3948; MariaDB 4166)."""

_install_lock = threading.Lock()
_original_sender: Callable[[Any, Any], None] | None = None
_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\x00": "\\0"})
_NULL = "\\N"


def available() -> bool:
    """Install the guarded file sender once; False when this PyMySQL lacks the hooks it needs."""
    global _original_sender
    try:
        import pymysql.connections as connections
    except ImportError:
        return False
    with _install_lock:
        current = getattr(connections, "_send_local_file", None)
        if current is None or not hasattr(connections.Connection, "write_packet"):
            return False
        if current is not _send_guarded:
            _original_sender = current
            connections._send_local_file = _send_guarded
    return True


def _send_guarded(filename: Any, conn: Any) -> None:
    """PyMySQL's file sender, replaced: an armed connection gets its batch from memory and only
    under the statement's own name; any other connection keeps PyMySQL's behaviour (it reaches
    here only with `local_infile=True` of its own)."""
    armed = getattr(conn, ARMED, None)
    if armed is None:
        if _original_sender is None:
            raise RuntimeError("LOAD DATA LOCAL request refused: no file sender")
        _original_sender(filename, conn)
        return
    from pymysql.err import InternalError

    name, payload, handed = armed
    asked = filename if isinstance(filename, bytes) else str(filename).encode("utf-8", "replace")
    if asked != name:
        # the empty packet PyMySQL sends next ends the transfer: the server loads nothing. Not an
        # OperationalError, which the importer would report as a lost connection worth retrying.
        raise InternalError(2000, f"LOAD DATA LOCAL refused: the server asked for {asked!r}")
    view = memoryview(payload)
    for start in range(0, len(view), CHUNK):
        conn.write_packet(bytes(view[start : start + CHUNK]))
    handed()


def _text(value: Any) -> str:
    """One value as PyMySQL would send it in an INSERT, unquoted and TSV-escaped."""
    kind = type(value)
    if kind is str:
        escaped: str = value.translate(_ESCAPES)
        return escaped
    if value is None:
        return _NULL
    if kind is bool:
        return str(int(value))
    if kind is int:
        return str(value)
    if kind is Decimal and value.is_finite():
        return format(value, "f")
    if kind is dt.datetime:
        from pymysql.converters import escape_datetime

        return str(escape_datetime(value))[1:-1]
    if kind is dt.date:
        from pymysql.converters import escape_date

        return str(escape_date(value))[1:-1]
    raise NotDelimitable(kind.__name__)


def tsv(columns: Sequence[Sequence[Any]]) -> bytes:
    """The batch whose values `columns` hold, as LOAD DATA reads it with `CLAUSES`: a tab between
    fields, a newline after each row, backslash escapes, NULL as \\N, UTF-8. Raises NotDelimitable
    for a value of another type."""
    return delimited(columns, _text)


CLAUSES = (
    "CHARACTER SET utf8mb4 FIELDS TERMINATED BY '\\t' ENCLOSED BY '' ESCAPED BY '\\\\' "
    "LINES STARTING BY '' TERMINATED BY '\\n'"
)


def statement(conn: sa.Connection, table: sa.Table, fields: Sequence[str]) -> str:
    """The LOAD DATA of `fields` into `table`, names quoted by the dialect."""
    prep = conn.dialect.identifier_preparer
    names = ", ".join(prep.quote(name) for name in fields)
    return f"LOAD DATA LOCAL INFILE '{FILE_NAME}' INTO TABLE {prep.format_table(table)} {CLAUSES} ({names})"


def load_local(
    conn: sa.Connection,
    table: sa.Table,
    fields: Sequence[str],
    rows: int,
    payload: bytes,
    handed: Handed = nobody_waits,
) -> None:
    """Write the `rows` rows of `payload` (`tsv` of their bound values, in `fields` order) with one
    LOAD DATA in `conn`'s transaction; `handed` hears that the payload is written, before the
    server's answer.

    Raises the DBAPIError of the server's refusal (see NOT_ALLOWED) as is, and, when the server
    skipped or changed a row (a warning, or fewer rows stored than sent), the error the INSERT
    would have raised for it: the caller's transaction must then roll back, as it does for any
    error."""
    sql = statement(conn, table, fields)
    raw = conn.connection.dbapi_connection
    setattr(raw, ARMED, (FILE_NAME.encode(), payload, handed))
    raw._local_infile = True  # type: ignore[union-attr]
    try:
        result = conn.exec_driver_sql(sql, execution_options={"no_parameters": True})
    finally:
        raw._local_infile = False  # type: ignore[union-attr]
        setattr(raw, ARMED, None)
    stored = result.rowcount
    # the server's reply counts its warnings: SHOW WARNINGS (a round trip) only when it has some
    # or when this PyMySQL does not say
    if stored == rows and getattr(result.context.cursor, "warning_count", None) == 0:
        return
    warnings = conn.exec_driver_sql("SHOW WARNINGS").all()
    if stored != rows or warnings:
        raise _refusal(conn, sql, table, rows, stored, warnings)


def _refusal(
    conn: sa.Connection, sql: str, table: sa.Table, sent: int, stored: int, warnings: Sequence[Any]
) -> sa.exc.DBAPIError:
    """The error the INSERT would have raised for the first warning (IntegrityError for a duplicate
    key, DataError for a value the column does not take), saying how many rows the server kept."""
    from pymysql import err

    code, message = (int(warnings[0][1]), str(warnings[0][2])) if warnings else (1261, "rows missing")
    kind = err.error_map.get(code, err.DataError)
    detail = f"{message} (LOAD DATA into {table.name}: {stored} of {sent} rows stored)"
    orig = kind(code, detail)
    wrapped: sa.exc.DBAPIError = sa.exc.DBAPIError.instance(sql, None, orig, err.Error, dialect=conn.dialect)
    return wrapped
