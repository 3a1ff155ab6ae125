"""The system schema as SQLAlchemy Core tables (docs/setup.md, docs/engine.md)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.types import TypeDecorator, UserDefinedType

metadata = sa.MetaData()

Timestamp6 = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")
"""Microsecond timestamps on every backend (PostgreSQL TIMESTAMP is 6 digits by default)."""


class ExactText(TypeDecorator[str]):
    """Text compared byte for byte, trailing spaces included: the MySQL family's default collations
    fold case and accents and pad with spaces, so two distinct keys would meet as one there
    (SQLite and PostgreSQL compare exactly by default). MariaDB gets `utf8mb4_nopad_bin`, MySQL 8
    `utf8mb4_0900_bin` (both binary and NO PAD)."""

    impl = sa.String
    cache_ok = True

    def load_dialect_impl(self, dialect: sa.Dialect) -> sa.types.TypeEngine[Any]:
        length = getattr(self.impl_instance, "length", None)
        if dialect.name in ("mysql", "mariadb"):
            collation = "utf8mb4_nopad_bin" if getattr(dialect, "is_mariadb", False) else "utf8mb4_0900_bin"
            return dialect.type_descriptor(mysql.VARCHAR(length, charset="utf8mb4", collation=collation))
        return dialect.type_descriptor(sa.String(length))


class utc_now6(FunctionElement[Any]):
    """CURRENT_TIMESTAMP with microseconds, as a column default."""

    type = Timestamp6
    inherit_cache = True


@compiles(utc_now6)
def _utc_now6_default(element: Any, compiler: Any, **kw: Any) -> str:
    return "CURRENT_TIMESTAMP"


@compiles(utc_now6, "mysql")
@compiles(utc_now6, "mariadb")
def _utc_now6_mysql(element: Any, compiler: Any, **kw: Any) -> str:
    return "CURRENT_TIMESTAMP(6)"


@compiles(utc_now6, "sqlite")
def _utc_now6_sqlite(element: Any, compiler: Any, **kw: Any) -> str:
    return "(strftime('%Y-%m-%d %H:%M:%f','now'))"


class _JSONColumn(UserDefinedType[str]):
    """A JSON column whose text is passed through untouched, so canonical bytes stay canonical."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "JSON"


class CanonicalJSON(TypeDecorator[str]):
    """Token refs: JSON where the backend has it (PostgreSQL json keeps the text as written,
    MariaDB JSON is checked LONGTEXT), TEXT on SQLite; values are canonical JSON strings."""

    impl = sa.Text
    cache_ok = True

    def load_dialect_impl(self, dialect: sa.Dialect) -> sa.types.TypeEngine[Any]:
        if dialect.name in ("postgresql", "mysql", "mariadb"):
            return dialect.type_descriptor(_JSONColumn())
        return dialect.type_descriptor(sa.Text())

    def column_expression(self, column: Any) -> Any:
        """Read the stored text itself (psycopg would otherwise parse json into objects)."""
        return sa.cast(column, sa.Text)


def _id(name: str = "Id") -> sa.Column[str]:
    return sa.Column(name, sa.String(64), primary_key=True)


system_object = sa.Table(
    "_System_Object",
    metadata,
    _id(),
    sa.Column("ApiName", sa.String(64), nullable=False, unique=True),
    sa.Column("TableName", sa.String(64), nullable=False),
    sa.Column("Label", sa.String(255), nullable=True),
    sa.Column("KeyColumn", sa.String(64), nullable=True),
)
"""KeyColumn NULL: the platform's own table (`Id`, `CreatedDate`); else an adopted table's primary key."""

system_field = sa.Table(
    "_System_Field",
    metadata,
    _id(),
    sa.Column("ObjectId", sa.String(64), nullable=False),
    sa.Column("ApiName", sa.String(64), nullable=False),
    sa.Column("Label", sa.String(255), nullable=True),
    sa.Column("Type", sa.String(32), nullable=False, server_default="text"),
    sa.Column("ReferenceTo", sa.String(64), nullable=True),
    sa.Column("MaxLength", sa.Integer, nullable=True),
    sa.Column("IsRequired", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("auto_number_format", sa.String(255), nullable=True),
    sa.Column("auto_number_start", sa.BigInteger, nullable=False, server_default="1"),
    sa.Column("auto_number_scope", sa.String(16), nullable=False, server_default="global"),
    sa.Column("auto_number_date_src", sa.String(16), nullable=False, server_default="assigned_at"),
    sa.Column("auto_number_on_change", sa.String(16), nullable=False, server_default="keep_existing"),
    sa.Column("auto_number_token_refs", CanonicalJSON, nullable=True),
    sa.Column("auto_number_numbering", sa.String(16), nullable=False, server_default="standard"),
    sa.Column("auto_number_time_zone", sa.String(64), nullable=False, server_default="UTC"),
    sa.Column("auto_number_allocation", sa.String(16), nullable=False, server_default="single"),
    sa.Column("auto_number_fiscal_year_start", sa.SmallInteger, nullable=False, server_default="1"),
    sa.Column("auto_number_date_field", sa.String(64), nullable=True),
    sa.Column("auto_number_shared_counter", sa.String(64), nullable=True),
    sa.UniqueConstraint("ObjectId", "ApiName", name="uq_System_Field_object_api"),
)

AUTONUMBER_COLUMNS: tuple[str, ...] = tuple(
    c.name for c in system_field.columns if c.name.startswith("auto_number_")
)
"""The `_System_Field` columns an autonumber rule is made of, in table order (a new rule attribute
is a new `auto_number_*` column above)."""

system_record_type = sa.Table(
    "_System_RecordType",
    metadata,
    _id(),
    sa.Column("ObjectId", sa.String(64), nullable=False),
    sa.Column("DeveloperName", sa.String(255), nullable=False),
    sa.Column("Name", sa.String(255), nullable=True),
    sa.Column("RecordTypeCode", sa.String(16), nullable=True),
)

counter_table = sa.Table(
    "_System_AutoNumberCounter",
    metadata,
    sa.Column("field_id", sa.String(255), primary_key=True),
    sa.Column("scope_key", sa.String(64), primary_key=True, server_default=""),
    sa.Column("next_value", sa.BigInteger, nullable=False),
    sa.Column("created_date", Timestamp6, nullable=False, server_default=utc_now6()),
    sa.Column("last_modified_date", Timestamp6, nullable=False, server_default=utc_now6()),
)

lock_table = sa.Table(
    "_System_Lock",
    metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("holder", sa.String(128), nullable=False),
    sa.Column("acquired_at", Timestamp6, nullable=False),
    sa.Column("expires_at", Timestamp6, nullable=False),
)

spec_apply_log = sa.Table(
    "_System_DataSpecApplyLog",
    metadata,
    sa.Column("Id", sa.String(32), primary_key=True),
    sa.Column("spec_id", sa.String(255), nullable=False),
    sa.Column("spec_digest", sa.String(64), nullable=False),
    sa.Column("env", sa.String(32), nullable=False),
    sa.Column("status", sa.String(32), nullable=False),
    sa.Column("started_at", Timestamp6, nullable=False),
    sa.Column("finished_at", Timestamp6, nullable=True),
    sa.Column("outcome", sa.String(16), nullable=False),
    sa.Column("error", sa.Text, nullable=True),
)
"""Every `autonumber spec apply` attempt (docs/setup.md): applied, skipped, refused or failed."""

reservation_journal = sa.Table(
    "_System_AutoNumberJournal",
    metadata,
    sa.Column(
        "Id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True
    ),
    sa.Column("field_id", sa.String(255), nullable=False),
    sa.Column("scope_key", sa.String(64), nullable=False, server_default=""),
    sa.Column("first_value", sa.BigInteger, nullable=False),
    sa.Column("count", sa.Integer, nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("owner", sa.String(128), nullable=False),
    sa.Column("logged_at", Timestamp6, nullable=False, server_default=utc_now6()),
    sa.Column("detail", sa.String(255), nullable=True),
    sa.Column("caller", sa.String(128), nullable=True),
    sa.Index("ix_System_AutoNumberJournal_range", "field_id", "scope_key", "first_value"),
    sa.Index("ix_System_AutoNumberJournal_logged_at", "logged_at"),
)
"""The reservation journal, append-only: a `reserved` line per committed reservation (a batch is one
range of `count` values from `first_value`), and a `rolled_back` or `failed` line for the values a
caller gave up, written once its outcome is known. A stored record needs no line: it is the proof.
`owner` is the process (`host:pid:start`), `caller` the application's label for it, if it set one
(`connect(caller=…)`, AUTONUMBER_CALLER; schema version 4)."""

field_format_history = sa.Table(
    "_System_FieldFormatHistory",
    metadata,
    sa.Column("field_id", sa.String(64), primary_key=True),
    sa.Column("format", sa.String(255), primary_key=True),
    sa.Column("scope", sa.String(16), nullable=False),
    sa.Column("effective_from", Timestamp6, nullable=True),
)
"""Every format an autonumber field has had: stored values stay valid under any of them (verify V1).
`effective_from` is when the format last became current (NULL: before history was kept)."""

SYSTEM_TABLES: tuple[sa.Table, ...] = (
    system_object,
    system_field,
    system_record_type,
    counter_table,
    lock_table,
    spec_apply_log,
    reservation_journal,
    field_format_history,
)


idempotency_table = sa.Table(
    "_System_IdempotencyKey",
    metadata,
    sa.Column("idempotency_key", ExactText(255), primary_key=True),
    sa.Column("object_name", sa.String(64), nullable=False),
    sa.Column("request_digest", sa.String(64), nullable=False),
    sa.Column("record_ids", sa.Text, nullable=False),
    sa.Column("created_date", Timestamp6, nullable=False, server_default=utc_now6()),
)
"""One row per idempotent create: the key, a digest of its request and the Ids it stored (kept
at least 24 h; `autonumber.write.idempotency.purge` removes older rows)."""

web_session_table = sa.Table(
    "_System_WebSession",
    metadata,
    sa.Column("session_digest", sa.String(64), primary_key=True),
    sa.Column("role", sa.String(16), nullable=False),
    sa.Column("expires_at", Timestamp6, nullable=False),
)
"""Console logins: a row per live session (logout deletes it), so every worker sees a logout."""

schema_version_table = sa.Table(
    "_System_SchemaVersion",
    metadata,
    sa.Column("version", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("name", sa.String(128), nullable=False),
    sa.Column("release", sa.String(32), nullable=False),
    sa.Column("applied_at", Timestamp6, nullable=False, server_default=utc_now6()),
)
"""One row per numbered migration applied (docs/upgrading.md); the database's schema version is
the largest. No row (or no table) on a database with the system tables: version 0."""

SYSTEM_TABLES = (*SYSTEM_TABLES, idempotency_table, web_session_table, schema_version_table)

state_metadata = sa.MetaData()

setup_state = sa.Table(
    "_System_SetupState",
    state_metadata,
    sa.Column("name", sa.String(255), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
    sa.Column("updated_at", Timestamp6, nullable=False),
)
"""What setup has done (autonumber.rules.state): created by `db init` and `setup apply`, read only
where it exists."""

legacy_metadata = sa.MetaData()

legacy_autonumber = sa.Table(
    "_System_AutoNumber",
    legacy_metadata,
    _id(),
    sa.Column("ObjectApiName", sa.String(64), nullable=False),
    sa.Column("FieldApiName", sa.String(64), nullable=False),
    sa.Column("DisplayFormat", sa.String(255), nullable=True),
    sa.Column("CurrentNumber", sa.BigInteger, nullable=False, server_default="0"),
)

legacy_compound = sa.Table(
    "_System_CompoundAutoNumber",
    legacy_metadata,
    _id(),
    sa.Column("ObjectApiName", sa.String(64), nullable=False),
    sa.Column("Prefix", sa.String(255), nullable=False),
    sa.Column("CurrentNumber", sa.BigInteger, nullable=False, server_default="0"),
)

legacy_identifier_rule = sa.Table(
    "_System_IdentifierRule",
    legacy_metadata,
    _id(),
    sa.Column("ObjectApiName", sa.String(64), nullable=False),
    sa.Column("FieldApiName", sa.String(64), nullable=False),
    sa.Column("Template", sa.String(255), nullable=True),
    sa.Column("Scope", sa.String(32), nullable=True),
)

legacy_identifier_seq = sa.Table(
    "_System_IdentifierSeq",
    legacy_metadata,
    _id(),
    sa.Column("RuleId", sa.String(64), nullable=False),
    sa.Column("ScopeKey", sa.String(255), nullable=False, server_default=""),
    sa.Column("CurrentValue", sa.BigInteger, nullable=False, server_default="0"),
)

LEGACY_TABLES = (legacy_autonumber, legacy_compound, legacy_identifier_rule, legacy_identifier_seq)

PRODUCT_METADATA: tuple[sa.MetaData, ...] = (metadata, state_metadata, legacy_metadata)
"""Every table the product defines: the system tables, setup's state, and the legacy tables that
`db upgrade` reads (other tools must leave them all alone: autonumber.integrations.alembic)."""

__all__ = [
    "AUTONUMBER_COLUMNS",
    "LEGACY_TABLES",
    "PRODUCT_METADATA",
    "SYSTEM_TABLES",
    "CanonicalJSON",
    "Timestamp6",
    "counter_table",
    "field_format_history",
    "idempotency_table",
    "legacy_autonumber",
    "legacy_compound",
    "legacy_identifier_rule",
    "legacy_identifier_seq",
    "lock_table",
    "metadata",
    "reservation_journal",
    "schema_version_table",
    "setup_state",
    "spec_apply_log",
    "state_metadata",
    "system_field",
    "system_object",
    "system_record_type",
    "utc_now6",
    "web_session_table",
]
