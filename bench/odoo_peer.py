"""The Odoo-style peer: how Odoo numbers a document inside the caller's transaction.

Odoo's `ir.sequence` (implementation "standard") reads the sequence's definition row, takes
`nextval()` of a database sequence, formats prefix + zero-padded number in Python and the caller
INSERTs its record, all in the caller's transaction. The same job here, per call and in one
transaction: SELECT the definition (prefix, padding), the next value of a database sequence
(PostgreSQL `nextval`, MariaDB `NEXT VALUE FOR` of a `CREATE SEQUENCE` made before the cell: inside
a transaction that DDL would commit the caller's work), the number formatted in Python, the INSERT,
then the caller's work. SQLite has no sequences: there the peer is Odoo's "no_gap" implementation,
the definition row's counter bumped in place (`UPDATE … RETURNING`) inside the transaction.
"""

from __future__ import annotations

import time
from collections.abc import Hashable
from typing import Any

import sqlalchemy as sa

from autonumber.db import create_engine

from .contestants import Contestant
from .database import engine_for, stored_numbers, warm
from .harness import Op

NAME = "peer:odoo-sequence"
DEFINITION_TABLE = "bench_odoo_sequence"
ROW_TABLE = "bench_odoo_case"
SEQUENCE = sa.Sequence("bench_odoo_case_seq", start=1)
CODE, PREFIX, PADDING = "case", "C-", 8


def _tables() -> tuple[sa.Table, sa.Table]:
    meta = sa.MetaData()
    definition = sa.Table(
        DEFINITION_TABLE,
        meta,
        sa.Column("code", sa.String(32), primary_key=True),
        sa.Column("prefix", sa.String(32), nullable=False),
        sa.Column("padding", sa.Integer, nullable=False),
        sa.Column("number_next", sa.BigInteger, nullable=False),
    )
    rows = sa.Table(
        ROW_TABLE,
        meta,
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True),
        sa.Column("name", sa.String(30), nullable=False, unique=True),
        sa.Column("subject", sa.String(80), nullable=False),
        sa.Column("created", sa.DateTime(), nullable=False, server_default=sa.func.current_timestamp()),
    )
    return definition, rows


class OdooSequence(Contestant):
    """Definition read + database sequence + Python formatting + INSERT, in one transaction."""

    name = NAME
    family = "peer"

    def __init__(self, url: str, *, pool_max: int) -> None:
        self.url = url
        self.pool_max = pool_max
        self.definition, self.rows = _tables()
        with engine_for(url) as setup, setup.begin() as conn:
            self.native = conn.dialect.supports_sequences
            self.definition.create(conn, checkfirst=True)
            self.rows.create(conn, checkfirst=True)
            if self.native:
                SEQUENCE.create(conn, checkfirst=True)
            if conn.execute(sa.select(self.definition.c.code)).first() is None:
                row = {"code": CODE, "prefix": PREFIX, "padding": PADDING, "number_next": 1}
                conn.execute(sa.insert(self.definition).values(**row))
        self.db: sa.Engine | None = None

    def _next_value(self) -> sa.Executable:
        if self.native:
            return sa.select(SEQUENCE.next_value())
        d = self.definition.c
        # Odoo's no_gap: the definition row's counter, bumped under the transaction's write lock
        return (
            sa.update(self.definition)
            .where(d.code == CODE)
            .values(number_next=d.number_next + 1)
            .returning(d.number_next - 1)
        )

    def op_for(self, callers: int, work: float = 0.0) -> Op:
        size = min(callers, self.pool_max)
        self.db = create_engine(self.url, pool_size=size, max_overflow=0, pool_pre_ping=False)
        warm(self.db, size)
        db, d = self.db, self.definition.c
        read = sa.select(d.prefix, d.padding).where(d.code == CODE)
        next_value, insert = self._next_value(), sa.insert(self.rows)

        def number_and_insert() -> Hashable:
            with db.begin() as conn:
                prefix, padding = conn.execute(read).one()
                name = f"{prefix}{int(conn.execute(next_value).scalar_one()):0{padding}d}"
                conn.execute(insert, {"name": name, "subject": "bench"})
                if work:
                    time.sleep(work)
            return name

        return number_and_insert

    def end_cell(self) -> dict[str, Any]:
        if self.db is not None:
            self.db.dispose()
            self.db = None
        return {}

    def verify(self) -> dict[str, Any]:
        with engine_for(self.url) as db:
            return stored_numbers(db, self.rows.c.name)

    def close(self) -> None:
        self.end_cell()
