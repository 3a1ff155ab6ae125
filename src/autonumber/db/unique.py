"""A UNIQUE index on every autonumber column: the database itself refuses a value stored twice.

NULL is allowed any number of times on every backend (rows created before a field existed keep
NULL). An index is created only after the column is shown to hold no duplicate; otherwise
DuplicateValues names the field, the value and the row Ids, and nothing is created.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from autonumber.errors import DuplicateValues, SetupError
from autonumber.identifiers import check_api_name

from .objects import key_column
from .tables import system_field, system_object

INDEX_NAME_LIMIT = 60
"""Below PostgreSQL's 63 and MySQL's 64 characters."""
MYSQL_INDEX_CHARS = 768
"""InnoDB indexes at most 3,072 bytes: 768 characters of utf8mb4."""
SHOWN_IDS = 5


@dataclass(frozen=True)
class Target:
    """One autonumber column: its field (for messages), table and column."""

    field: str
    table: str
    column: str


@dataclass(frozen=True)
class Duplicate:
    """A value stored more than once, with (up to SHOWN_IDS of) the rows holding it."""

    field: str
    value: str
    count: int
    ids: tuple[str, ...]

    def describe(self) -> str:
        more = f" and {self.count - len(self.ids)} more" if self.count > len(self.ids) else ""
        return (
            f"{self.field} value {self.value!r} is stored {self.count} times (row Ids "
            f"{', '.join(self.ids)}{more})"
        )


def catalog_targets(conn: Connection) -> list[Target]:
    """Every autonumber column the catalog knows (Type autonumber or a rule set); [] before the
    system tables exist (and only Type before the rule columns do: a rolled-back database)."""
    f, o = system_field, system_object
    inspector = sa.inspect(conn)
    if not {f.name, o.name} <= set(inspector.get_table_names()):
        return []
    autonumber = f.c.Type == "autonumber"
    if "auto_number_format" in {c["name"] for c in inspector.get_columns(f.name)}:
        autonumber = sa.or_(autonumber, f.c.auto_number_format.is_not(None))
    stmt = (
        sa.select(o.c.ApiName, o.c.TableName, f.c.ApiName)
        .join(o, o.c.Id == f.c.ObjectId)
        .where(autonumber)
        .order_by(o.c.ApiName, f.c.ApiName)
    )
    return [Target(f"{obj}.{name}", table, name) for obj, table, name in conn.execute(stmt)]


def index_name(table: str, column: str) -> str:
    """`ux_<table>_<column>`, or a shortened name with a digest when that is too long."""
    name = f"ux_{table}_{column}"
    if len(name) <= INDEX_NAME_LIMIT:
        return name
    digest = hashlib.blake2b(f"{table}.{column}".encode(), digest_size=8).hexdigest()
    return f"ux_{table[: INDEX_NAME_LIMIT - 20]}_{digest}"


class _Columns:
    """One inspection of the tables involved: their columns and unique indexes, reflected for all
    the targets' tables at once (on PostgreSQL one query each, not one per table)."""

    def __init__(self, conn: Connection, targets: Sequence[Target] = ()) -> None:
        self.conn = conn
        self.inspector = sa.inspect(conn)
        self.tables = set(self.inspector.get_table_names())
        self._columns: dict[str, dict[str, sa.types.TypeEngine[object]]] = {}
        self._uniques: dict[str, list[list[str | None]]] = {}
        self._keys: dict[str, list[str]] = {}
        self._partial: dict[str, list[tuple[str, list[str | None]]]] = {}
        self._reflect({t.table for t in targets})

    def _reflect(self, tables: set[str]) -> None:
        names = sorted(t for t in tables if t in self.tables and t not in self._columns)
        if not names:
            return
        insp = self.inspector
        # SQLite keeps an inline `UNIQUE` column constraint (Django's) as an automatic index only
        auto: dict[str, Any] = {"include_auto_indexes": insp.dialect.name == "sqlite"}
        for name in names:
            self._columns[name], self._uniques[name] = {}, []
        for (_, name), cols in insp.get_multi_columns(filter_names=names).items():
            self._columns[name] = {c["name"]: c["type"] for c in cols}
        with warnings.catch_warnings():  # an expression index is skipped: it is no whole-column index
            warnings.filterwarnings("ignore", "Skipped unsupported reflection", sa.exc.SAWarning)
            found = insp.get_multi_indexes(filter_names=names, **auto)
        for (_, name), indexes in found.items():
            for index in indexes:
                if not index.get("unique"):
                    continue
                if covers_every_row(index):
                    self._uniques[name].append(list(index["column_names"]))
                else:
                    self._partial.setdefault(name, []).append(
                        (str(index["name"]), list(index["column_names"]))
                    )
        for (_, name), constraints in insp.get_multi_unique_constraints(filter_names=names).items():
            self._uniques[name] += [list(uc["column_names"]) for uc in constraints]
        for (_, name), pk in insp.get_multi_pk_constraint(filter_names=names).items():
            self._keys[name] = list(pk.get("constrained_columns") or [])

    def columns(self, table: str) -> dict[str, sa.types.TypeEngine[object]]:
        self._reflect({table})
        return self._columns.get(table, {})

    def exists(self, target: Target) -> bool:
        return target.table in self.tables and target.column in self.columns(target.table)

    def free_name(self, target: Target, name: str) -> str:
        """`name`, or `name` with a suffix when the table has an index of that name already (the
        index of a column renamed since keeps its name)."""
        from . import dialect_for  # the package imports every dialect, and they import this module

        taken = dialect_for(self.conn).index_names(self.conn, target.table)
        n = 2
        wanted = name
        while wanted in taken:
            wanted = f"{name[: INDEX_NAME_LIMIT - 4]}_{n}"
            n += 1
        return wanted

    def has_unique_index(self, target: Target) -> bool:
        self._reflect({target.table})
        return [target.column] in self._uniques.get(target.table, [])

    def partial_index(self, target: Target) -> str | None:
        """The name of a unique index on the column that is partial or on an expression (it does
        not refuse every second copy, so it is not the column's UNIQUE index)."""
        self._reflect({target.table})
        for name, columns in self._partial.get(target.table, []):
            if target.column in columns or columns == [None]:
                return name
        return None

    def table(self, target: Target) -> sa.Table:
        """A Core table with just `Id` and the target column (names validated first)."""
        check_api_name(target.table.lstrip("_"), "table name")
        check_api_name(target.column, "field name")
        kind = self.columns(target.table)[target.column]
        pk = self._keys.get(target.table) or ["Id"]
        key = pk[0] if len(pk) == 1 else "Id"
        check_api_name(key, "key column")
        return sa.Table(
            target.table,
            sa.MetaData(),
            sa.Column(key, sa.String(64), primary_key=True),
            sa.Column(target.column, kind),
        )


def find_duplicates(
    conn: Connection, table: sa.Table, column: str, field: str, limit: int = 10
) -> list[Duplicate]:
    """Values of `column` stored more than once (the first `limit`, smallest first)."""
    col = table.c[column]
    count = sa.func.count().label("n")
    stmt = (
        sa.select(col, count)
        .where(col.is_not(None))
        .group_by(col)
        .having(sa.func.count() > 1)
        .order_by(col)
        .limit(limit)
    )
    out = []
    for value, n in conn.execute(stmt).all():
        key = key_column(table)
        ids = conn.execute(sa.select(key).where(col == value).order_by(key).limit(SHOWN_IDS)).scalars().all()
        out.append(Duplicate(field, str(value), int(n), tuple(str(i) for i in ids)))
    return out


def check_no_duplicates(conn: Connection, targets: Sequence[Target]) -> None:
    """DuplicateValues naming every duplicate found in the existing columns (reads only)."""
    cols = _Columns(conn, targets)
    found: list[Duplicate] = []
    for target in targets:
        if cols.exists(target):
            found += find_duplicates(conn, cols.table(target), target.column, target.field)
    if found:
        raise DuplicateValues([d.describe() for d in found])


def ensure_unique_indexes(conn: Connection, targets: Sequence[Target]) -> list[str]:
    """Create the missing UNIQUE indexes (idempotent); duplicates are refused before any is made."""
    cols = _Columns(conn, targets)
    todo = [t for t in targets if cols.exists(t) and not cols.has_unique_index(t)]
    if not todo:
        return []
    found: list[Duplicate] = []
    for target in todo:
        found += find_duplicates(conn, cols.table(target), target.column, target.field)
    if found:
        raise DuplicateValues([d.describe() for d in found])
    for target in todo:
        _check_indexable(conn, target, cols.table(target))
    changes = []
    for target in todo:
        table = cols.table(target)
        name = cols.free_name(target, index_name(target.table, target.column))
        sa.Index(name, table.c[target.column], unique=True).create(conn)
        changes.append(f"unique index {name} on {target.table}.{target.column}")
    return changes


def missing_unique_indexes(conn: Connection, targets: Sequence[Target]) -> list[Target]:
    """The existing autonumber columns without a UNIQUE index of their own (verify reports them)."""
    return list(unindexed(conn, targets))


def unindexed(conn: Connection, targets: Sequence[Target]) -> dict[Target, str | None]:
    """missing_unique_indexes, each with the partial or expression unique index it has instead
    (None: none at all)."""
    cols = _Columns(conn, targets)
    return {t: cols.partial_index(t) for t in targets if cols.exists(t) and not cols.has_unique_index(t)}


def covers_every_row(index: Mapping[str, Any]) -> bool:
    """Whether a reflected unique index refuses every second copy: not partial (PostgreSQL's and
    SQLite's `WHERE`), not on an expression."""
    options = index.get("dialect_options") or {}
    partial = any(key.endswith("_where") and value is not None for key, value in options.items())
    return not partial and not index.get("expressions") and None not in index.get("column_names", [])


def _check_indexable(conn: Connection, target: Target, table: sa.Table) -> None:
    """MariaDB/MySQL cannot index a whole column past 768 characters: refuse, never a prefix index
    (a prefix index would refuse distinct values that share their first 768 characters)."""
    length = getattr(table.c[target.column].type, "length", None)
    if conn.dialect.name in ("mysql", "mariadb") and (length is None or length > MYSQL_INDEX_CHARS):
        raise SetupError(
            f"{target.field}: column {target.table}.{target.column} holds "
            f"{length or 'unbounded'} characters; a UNIQUE index on MariaDB/MySQL covers at most "
            f"{MYSQL_INDEX_CHARS}: make the autonumber column at most {MYSQL_INDEX_CHARS} long"
        )
