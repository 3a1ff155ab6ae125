"""The rows of a bulk write as the driver takes them: their values a column at a time (or as tuples
in a fixed column order), made at C speed, with SQLAlchemy's bind processing applied per column (a
value repeated down a column, such as a batch's CreatedDate, converted once)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from operator import itemgetter
from typing import Any

import sqlalchemy as sa

from .driver import kept

_UNSET = object()

Handed = Callable[[], None]
"""What a bulk send calls once its rows have left this process, only the server's work and its
answer still to come: the importing thread waits for it before it runs its own Python again, so
the two do not take turns at Python's lock while the rows go out (write/batch_sender.py)."""
Send = Callable[[Handed], None]
"""A bulk write made ready by `Dialect.bulk_sender`, run on the batch sender's thread."""


def nobody_waits() -> None:
    """The `Handed` of a bulk write that nobody waits on (sent on the caller's own thread)."""


def text_datetimes(
    table: sa.Table, fields: Sequence[str], columns: Sequence[Sequence[Any]]
) -> list[tuple[Any, ...]]:
    """The rows of `columns` as tuples, the values of `fields`' DateTime columns as their text, made
    once per distinct value: psycopg's text dumper of a datetime is `str()`, but it is chosen anew
    for each value, which doubled the cost of a COPY row (a batch's CreatedDate is one value)."""
    texts = [
        _processed(column, _datetime_text) if isinstance(table.c[name].type, sa.DateTime) else column
        for name, column in zip(fields, columns, strict=True)
    ]
    return list(zip(*texts, strict=True))


def _datetime_text(value: Any) -> Any:
    return str(value) if isinstance(value, datetime) else value


def row_columns(rows: Sequence[Mapping[str, Any]], fields: Sequence[str]) -> list[Sequence[Any]]:
    """Each of `fields`' values down `rows`, a list per field (no transposition of row tuples)."""
    return [list(map(itemgetter(name), rows)) for name in fields]


def bound_columns(
    dialect: sa.Dialect, table: sa.Table, fields: Sequence[str], rows: Sequence[Mapping[str, Any]]
) -> list[Sequence[Any]]:
    """`row_columns` with each column's bind processor of `dialect` applied (what `execute` does)."""
    columns = row_columns(rows, fields)
    for i, process in _processors(dialect, table, tuple(fields)):
        columns[i] = _processed(columns[i], process)
    return columns


def bound_tuples(
    dialect: sa.Dialect, table: sa.Table, fields: Sequence[str], rows: Sequence[Mapping[str, Any]]
) -> list[tuple[Any, ...]]:
    """`bound_columns` as a tuple per row."""
    if len(rows) == 1:  # a row alone (the group writer's one record): no column pass
        values = [rows[0][name] for name in fields]
        for i, process in _processors(dialect, table, tuple(fields)):
            values[i] = process(values[i])
        return [tuple(values)]
    return list(zip(*bound_columns(dialect, table, fields, rows), strict=True))


def flat_rows(columns: Sequence[Sequence[Any]]) -> list[Any]:
    """The rows' values one row after another (a multi-row INSERT's parameters), laid out a column
    at a time at C speed."""
    width = len(columns)
    flat: list[Any] = [None] * (width * len(columns[0]) if columns else 0)
    for i, column in enumerate(columns):
        flat[i::width] = column
    return flat


def _processors(
    dialect: sa.Dialect, table: sa.Table, fields: tuple[str, ...]
) -> list[tuple[int, Callable[[Any], Any]]]:
    """The bind processors of `fields` by position (those that have one), made once per table,
    dialect and fields: a processor is a closure SQLAlchemy builds anew on each request."""

    def make() -> list[tuple[int, Callable[[Any], Any]]]:
        kinds = [table.c[name].type.dialect_impl(dialect) for name in fields]
        processors = [(i, kind.bind_processor(dialect)) for i, kind in enumerate(kinds)]
        return [(i, process) for i, process in processors if process is not None]

    return kept(table, ("autonumber.bind_processors", dialect.name, dialect.driver, fields), make)


def _processed(values: Sequence[Any], process: Callable[[Any], Any]) -> Sequence[Any]:
    out = []
    last: Any = _UNSET
    done: Any = None
    for value in values:
        if value is not last:
            last, done = value, process(value)
        out.append(done)
    return out


def insert_text(conn: sa.Connection, table: sa.Table, fields: Sequence[str], rows: int = 1) -> str | None:
    """The driver's INSERT of `rows` rows of `fields` with positional placeholders, names quoted by
    the dialect; None for a paramstyle without positional `?` or `%s`."""
    marks = {"qmark": "?", "format": "%s", "pyformat": "%s"}.get(conn.dialect.paramstyle)
    if marks is None:
        return None
    prep = conn.dialect.identifier_preparer
    names = ", ".join(prep.quote(name) for name in fields)
    values = ", ".join([f"({', '.join([marks] * len(fields))})"] * rows)
    return f"INSERT INTO {prep.format_table(table)} ({names}) VALUES {values}"


class NotDelimitable(Exception):
    """A value a delimited-text batch does not render exactly as the driver would: take the
    driver's own path for that batch."""


def delimited(columns: Sequence[Sequence[Any]], text: Callable[[Any], str]) -> bytes:
    """The rows whose values `columns` hold as UTF-8 text with a tab between fields and a newline
    after each row (LOAD DATA's and COPY's text formats), built a column at a time: a column of
    plain text with no backslash, tab, newline, carriage return or NUL goes as it is (one scan of
    the joined column at C speed), any other value through `text` (which escapes it, or raises
    NotDelimitable), a repeated value once."""
    if not columns or not columns[0]:
        return b""
    columns = [_delimited_column(c, text) for c in columns]
    joined = "\n".join(map("\t".join, zip(*columns, strict=True)))
    try:
        return (joined + "\n").encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate: the driver decides what happens to it
        raise NotDelimitable("text not encodable as UTF-8") from exc


def _delimited_column(values: Sequence[Any], text: Callable[[Any], str]) -> Sequence[str]:
    if set(map(type, values)) == {str}:
        joined = "".join(values)
        if not any(c in joined for c in ("\\", "\t", "\n", "\r", "\x00")):
            return values
    return _processed(values, text)


def by_fields(rows: Sequence[Mapping[str, Any]]) -> dict[tuple[str, ...], list[Mapping[str, Any]]]:
    """Rows grouped by the fields they set (callers may set different ones; a missing field takes
    its column default, so it must not be sent as NULL)."""
    shapes: dict[tuple[str, ...], list[Mapping[str, Any]]] = {}
    keys: Any = None
    group: list[Mapping[str, Any]] = []
    for row in rows:
        if row.keys() != keys:  # a run of rows with the same fields is sorted once
            keys = row.keys()
            group = shapes.setdefault(tuple(sorted(row)), [])
        group.append(row)
    return shapes
