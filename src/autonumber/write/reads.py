"""Reading records back: one by Id, a page newest first, a count, and the records of a write
found again by their Ids (an unknown COMMIT's outcome, an idempotent repeat)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..catalog.cache import Catalog
from ..db.objects import key_column
from ..errors import AutonumberError, RecordError, RecordNotFound
from .rows import key_equals, plain
from .transaction import reading
from .values import text_problem

MAX_LIMIT = 10_000
MAX_OFFSET = 1_000_000_000
"""Paging bounds every backend accepts (a larger offset is refused, not sent to the database)."""


class RecordReads:
    """get / list / count / exists of `Records`, over the catalog's tables."""

    _db: sa.Engine
    catalog: Catalog

    def exists(self, object_name: str, record_id: str) -> bool:
        """Whether a record with this Id is stored (a resumed import asks about its last batch)."""
        return bool(self._stored(object_name, [record_id]))

    def _stored(self, object_name: str, ids: Sequence[str], *, lock: bool = False) -> list[dict[str, Any]]:
        """The stored records with these Ids, in that order (those found); `lock`: a shared-lock read."""
        table = self.catalog.current().table(object_name)
        stmt = sa.select(table).where(table.c.Id.in_(ids))
        if lock:
            stmt = stmt.with_for_update(read=True)
        with reading(self._db, f"reading {object_name} records") as conn:
            rows = {r["Id"]: plain(r) for r in conn.execute(stmt).mappings()}
        return [rows[i] for i in ids if i in rows]

    def _by_ids(
        self, c: Connection, object_name: str, table: sa.Table, ids: Sequence[str]
    ) -> list[dict[str, Any]]:
        """The records an earlier request with the same idempotency key stored, in its order."""
        found = {}
        for record_id in ids:
            stmt = sa.select(table).where(key_equals(table, object_name, record_id))
            row = c.execute(stmt).mappings().first()
            if row is None:
                raise RecordNotFound(object_name, record_id)
            found[record_id] = plain(row)
        return [found[i] for i in ids]

    def landed(self, object_name: str, records: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        """The records as stored when an earlier COMMIT of theirs did land (Ids are fresh, with 74
        random bits each, so finding every one means that), else None — also when the database
        cannot be asked.

        A locking read: it waits for a COMMIT the server is still running (MariaDB's KILL closes the
        socket while the killed session goes on committing), where a plain read would miss it."""
        try:
            stored = self._stored(object_name, [r["Id"] for r in records], lock=True)
        except (sa.exc.SQLAlchemyError, AutonumberError):
            return None
        return stored if len(stored) == len(records) else None

    def get(self, object_name: str, record_id: str, conn: Connection | None = None) -> dict[str, Any]:
        """One record by Id, or RecordNotFound."""
        table = self.catalog.current().table(object_name)
        if text_problem(record_id):
            raise RecordNotFound(object_name, record_id)
        stmt = sa.select(table).where(key_equals(table, object_name, record_id))
        if conn is not None:
            row = conn.execute(stmt).mappings().first()
        else:
            with reading(self._db, f"reading {object_name} records") as own:
                row = own.execute(stmt).mappings().first()
        if row is None:
            raise RecordNotFound(object_name, record_id)
        return plain(row)

    def list(self, object_name: str, *, limit: int = 50, offset: int = 0) -> list[dict[str, Any]]:
        """A page of records, newest first."""
        table = self.catalog.current().table(object_name)
        if not (0 < limit <= MAX_LIMIT and 0 <= offset <= MAX_OFFSET):
            raise RecordError(
                f"paging out of range: limit must be 1..{MAX_LIMIT} and offset 0..{MAX_OFFSET}, "
                f"got limit={limit}, offset={offset}"
            )
        key = key_column(table)
        newest = (table.c.CreatedDate.desc(), key) if "CreatedDate" in table.c else (key.desc(),)
        stmt = sa.select(table).order_by(*newest).limit(limit).offset(offset)
        with reading(self._db, f"reading {object_name} records") as conn:
            return [plain(r) for r in conn.execute(stmt).mappings()]

    def count(self, object_name: str) -> int:
        """How many records an object has."""
        table = self.catalog.current().table(object_name)
        with reading(self._db, f"counting {object_name} records") as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())
