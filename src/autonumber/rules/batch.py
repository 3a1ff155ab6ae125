"""What planning a batch of rule requests reads and updates as it walks them (reads only)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from autonumber.db import dialect_for
from autonumber.db.schema import has_table
from autonumber.db.tables import counter_table, system_field, system_object
from autonumber.format import FieldInfo, MemoryCatalog, ObjectInfo
from autonumber.rules import floor, history
from autonumber.rules.store import metadata_view, read_stored


class BatchCatalog(MemoryCatalog):
    """The metadata as the batch will leave it: the stored catalog plus the fields being added."""

    def __init__(self, base: MemoryCatalog) -> None:
        super().__init__([], [])
        self._base = base
        self._extra: dict[tuple[str, str], FieldInfo] = {}

    def add(self, info: FieldInfo) -> None:
        """A field being added, or a stored one as the batch changes it (its width)."""
        self._extra[(info.object, info.name)] = info

    def get_object(self, name: str) -> ObjectInfo | None:
        return self._base.get_object(name)

    def get_field(self, object_name: str, field_name: str) -> FieldInfo | None:
        return self._extra.get((object_name, field_name)) or self._base.get_field(object_name, field_name)

    def fields_of(self, object_name: str) -> Sequence[FieldInfo]:
        extra = {name: f for (o, name), f in self._extra.items() if o == object_name}
        base = [extra.pop(f.name, f) for f in self._base.fields_of(object_name)]  # a new width wins
        return (*base, *extra.values())

    def record_type_columns(self) -> Collection[str]:
        return self._base.record_type_columns()


class Batch:
    """What planning knows and updates as it walks the requests (reads only)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        base, self.ids = metadata_view(conn)
        self.catalog = BatchCatalog(base)
        self.stored = read_stored(conn)
        o = system_object
        self.tables = dict(conn.execute(sa.select(o.c.ApiName, o.c.TableName)).tuples().all())
        self.object_ids = dict(conn.execute(sa.select(o.c.ApiName, o.c.Id)).tuples().all())
        self.adopted = set(conn.execute(sa.select(o.c.ApiName).where(o.c.KeyColumn.is_not(None))).scalars())
        self.history = history.formats_of(conn)
        self.counters: dict[str, dict[str, int]] = {}
        self.reserved: dict[str, dict[str, int]] = {}
        self.empty_columns: set[str] = set()
        self.physical: dict[str, set[str]] = {}

    def counters_of(self, fid: str, *, lock: bool = False) -> dict[str, int]:
        """The field's counter rows (as earlier requests of the batch leave them); `lock`: locked
        until the change commits, read as they are now (not as the transaction's snapshot)."""
        if fid not in self.counters or lock:
            t = counter_table
            stmt = sa.select(t.c.scope_key, t.c.next_value).where(t.c.field_id == fid)
            rows = self.conn.execute(dialect_for(self.conn).for_update(stmt) if lock else stmt)
            read = {key: int(nxt) for key, nxt in rows}
            self.counters.setdefault(fid, read)
        return self.counters[fid]

    def lock_move(self, fid: str, *counters: str) -> None:
        """Before a field moves between counters (joins or leaves a shared counter): lock its field
        row, which a reservation creating a lazy row locks too (engine/reservation.py), and the rows
        of both counters, so no number is reserved from them between these reads and the commit."""
        f = system_field
        self.conn.execute(dialect_for(self.conn).for_update(sa.select(f.c.Id).where(f.c.Id == fid)))
        for cid in counters:
            self.counters_of(cid, lock=True)

    def floors_of(self, fid: str) -> dict[str, int]:
        """What each scope key of the field ever reserved (journal, retired rows; rules/floor.py)."""
        if fid not in self.reserved:
            self.reserved[fid] = floor.floors(self.conn, fid)
        return self.reserved[fid]

    def field_floor(self, fid: str) -> int:
        """The floor of a global counter: above every key's and the seed's recorded floor."""
        return max(
            [
                *self.floors_of(fid).values(),
                *self.counters_of(fid).values(),
                floor.field_floor(self.conn, fid),
            ]
        )

    def columns_of(self, table: str) -> set[str]:
        if table not in self.physical:
            present = has_table(self.conn, table)
            cols = sa.inspect(self.conn).get_columns(table) if present else []
            self.physical[table] = {c["name"] for c in cols}
        return self.physical[table]
