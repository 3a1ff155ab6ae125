"""The rows of a bulk write as the driver takes them: tuples in a fixed column order, made at C
speed, with SQLAlchemy's bind processing applied per column (a value repeated down a column, such
as a batch's CreatedDate, converted once)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from operator import itemgetter
from typing import Any

import sqlalchemy as sa

from .driver import kept

_UNSET = object()


def row_tuples(rows: Sequence[Mapping[str, Any]], fields: Sequence[str]) -> list[tuple[Any, ...]]:
    """Each row's values of `fields`, in that order."""
    if len(fields) == 1:
        only = fields[0]
        return [(row[only],) for row in rows]
    return list(map(itemgetter(*fields), rows))


def text_datetimes(
    table: sa.Table, fields: Sequence[str], tuples: list[tuple[Any, ...]]
) -> list[tuple[Any, ...]]:
    """`tuples` with the values of `fields`' DateTime columns as their text, made once per distinct
    value: psycopg's text dumper of a datetime is `str()`, but it is chosen anew for each value,
    which doubled the cost of a COPY row (a batch's CreatedDate is one value)."""
    dated = [i for i, name in enumerate(fields) if isinstance(table.c[name].type, sa.DateTime)]
    if not dated or not tuples:
        return tuples
    columns = list(zip(*tuples, strict=True))
    for i in dated:
        columns[i] = _processed(columns[i], _datetime_text)
    return list(zip(*columns, strict=True))


def _datetime_text(value: Any) -> Any:
    return str(value) if isinstance(value, datetime) else value


def bound_tuples(
    dialect: sa.Dialect, table: sa.Table, fields: Sequence[str], rows: Sequence[Mapping[str, Any]]
) -> list[tuple[Any, ...]]:
    """`row_tuples` with each column's bind processor of `dialect` applied (what `execute` does)."""
    processors = _processors(dialect, table, tuple(fields))
    if len(rows) == 1:  # a row alone (the group writer's one record): no column pass
        values = [rows[0][name] for name in fields]
        for i, process in processors:
            values[i] = process(values[i])
        return [tuple(values)]
    tuples = row_tuples(rows, fields)
    if not processors or not tuples:
        return tuples
    columns = list(zip(*tuples, strict=True))
    for i, process in processors:
        columns[i] = _processed(columns[i], process)
    return list(zip(*columns, strict=True))


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


def _processed(values: Sequence[Any], process: Callable[[Any], Any]) -> tuple[Any, ...]:
    out = []
    last: Any = _UNSET
    done: Any = None
    for value in values:
        if value is not last:
            last, done = value, process(value)
        out.append(done)
    return tuple(out)


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


def delimited(rows: Sequence[tuple[Any, ...]], text: Callable[[Any], str]) -> bytes:
    """`rows` as UTF-8 text with a tab between fields and a newline after each row (LOAD DATA's
    and COPY's text formats), built a column at a time: a column of plain text with no backslash,
    tab, newline, carriage return or NUL goes as it is (one scan of the joined column at C speed),
    any other value through `text` (which escapes it, or raises NotDelimitable), a repeated value
    once."""
    if not rows:
        return b""
    columns = [_delimited_column(c, text) for c in zip(*rows, strict=True)]
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
