"""Hostile input: names never reach SQL, values are stored verbatim, oversize formats are refused.

Names with quotes, semicolons, backticks or non-ASCII letters are rejected where they enter the
catalog (check_api_name, install_objects, store_rule) and, if one was written into the metadata
behind the platform's back, where a table would be built from it. The 10^5 fuzzed formats that
raise only FormatError live in tests/unit/test_format_parse.py (not repeated here).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from rel_support import CASE, make_platform, next_value, number
from sqlalchemy import event

from autonumber.db import check_reachable, create_engine
from autonumber.db.tables import counter_table, system_field
from autonumber.errors import (
    AutonumberError,
    CounterOverflow,
    FormatError,
    InvalidIdentifier,
    RecordError,
    UnknownObject,
)
from autonumber.identifiers import check_api_name
from autonumber.rules.store import RuleSpec, store_rule
from autonumber.runtime import Platform
from autonumber.setup.pack import FieldSpec, ObjectSpec, install_objects

HOSTILE_NAMES = [
    "Case'",
    'Ca"se',
    "Ca`se",
    "Case;DROP TABLE x",
    "Case -- x",
    "Cäse",
    "Case\u200b",
    "名前",
    "1Case",
    "_Case",
    "Case)",
    "",
    "x" * 65,
]
METACHARACTERS = '\'; DROP TABLE "Case"; -- `x` \\\' \\" %s %(x)s ? :p $1 /* */ \x00? Ω😀'
SHORT_METACHARACTERS = "'\";-`%\\"
"""Eight characters: fits Account.BillingCountryCode, so it flows into a rendered number."""


@pytest.fixture
def platform(db_url: str) -> Iterator[Platform]:
    p = make_platform(db_url, poll_interval=0.0)
    yield p
    p.close()


class StatementLog:
    """Every SQL text a set of engines sends, to prove a name never got into one."""

    def __init__(self, *engines: sa.Engine) -> None:
        self.statements: list[str] = []
        for engine in engines:
            event.listen(engine, "before_cursor_execute", self._record)

    def _record(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        self.statements.append(statement)

    def mentioning(self, text: str) -> list[str]:
        return [s for s in self.statements if text in s]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_check_api_name_rejects(name: str) -> None:
    with pytest.raises(InvalidIdentifier):
        check_api_name(name)


@pytest.mark.parametrize("name", ["Case", "Account_ID__c", "X1", "a" * 64])
def test_check_api_name_accepts(name: str) -> None:
    assert check_api_name(name) == name


@pytest.mark.parametrize("name", ["Bad'Name", "Bad;Name", "Bad`Name", "Bäd"])
def test_install_objects_rejects_hostile_object_and_field_names(platform: Platform, name: str) -> None:
    log = StatementLog(platform.db)
    for spec in (
        ObjectSpec(name, (FieldSpec("Title"),)),
        ObjectSpec("Fine", (FieldSpec(name),)),
        ObjectSpec("Fine", (FieldSpec("Title"),), table=name),
    ):
        with pytest.raises(InvalidIdentifier), platform.begin() as conn:
            install_objects(conn, [spec])
    assert log.mentioning(name) == []
    with platform.db.connect() as conn:
        assert "Fine" not in sa.inspect(conn).get_table_names()


@pytest.mark.parametrize("name", ["Case;DROP TABLE x", "Ca`se", "Cäse", "Case'"])
def test_store_rule_rejects_hostile_names(platform: Platform, name: str) -> None:
    log = StatementLog(platform.db)
    for spec in (RuleSpec(name, "CaseNumber", "{00000000}"), RuleSpec("Case", name, "{00000000}")):
        with pytest.raises(AutonumberError), platform.begin() as conn:
            store_rule(conn, spec)
    assert log.mentioning(name) == []


def test_records_refuse_hostile_object_and_field_names(platform: Platform) -> None:
    log = StatementLog(platform.db)
    with pytest.raises(UnknownObject):
        platform.records.insert("Case; DROP TABLE x", {"Subject": "a"})
    with pytest.raises(RecordError):
        platform.records.insert("Case", {'Subject"; DROP TABLE x; --': "a"})
    assert log.mentioning("DROP TABLE x") == []


def test_a_hostile_field_name_written_behind_the_catalog_never_reaches_sql(platform: Platform) -> None:
    hostile = 'Evil"; DROP TABLE "Case"; --'
    case_object = platform.catalog.current().require_object("Case")
    with platform.begin() as conn:
        object_id = (
            conn.execute(sa.select(system_field.c.ObjectId).where(system_field.c.ApiName == "Subject"))
            .scalars()
            .first()
        )
        conn.execute(
            sa.insert(system_field).values(
                Id="fld_evil", ObjectId=object_id, ApiName=hostile, Label="x", Type="text", MaxLength=10
            )
        )
    platform.catalog.refresh()
    log = StatementLog(*platform.engines)
    with pytest.raises(InvalidIdentifier):
        platform.records.insert("Case", {"Subject": "a"})
    assert log.mentioning("Evil") == []
    with platform.db.connect() as conn:
        assert case_object.table in sa.inspect(conn).get_table_names()


def test_values_full_of_metacharacters_are_stored_verbatim(platform: Platform) -> None:
    value = METACHARACTERS.replace("\x00", "")  # NUL is not storable text on PostgreSQL
    stored = platform.records.insert("Case", {"Subject": value})
    assert stored["Subject"] == value
    assert platform.records.get("Case", stored["Id"])["Subject"] == value
    assert platform.records.count("Case") == 1


def test_metacharacters_in_a_cross_record_value_render_verbatim(platform: Platform) -> None:
    account = platform.records.insert("Account", {"Name": "a", "BillingCountryCode": SHORT_METACHARACTERS})
    quote = platform.records.insert("Quote", {"Name": "q", "AccountId": account["Id"]})
    assert quote["Quote_No__c"].startswith(SHORT_METACHARACTERS + "-QT-")
    again = platform.records.get("Quote", quote["Id"])
    assert again["Quote_No__c"] == quote["Quote_No__c"]
    with platform.db.connect() as conn:
        keys = list(conn.execute(sa.select(counter_table.c.scope_key)).scalars())
    assert any(SHORT_METACHARACTERS in k for k in keys), keys


def test_a_format_longer_than_its_column_is_refused_at_apply_time(platform: Platform) -> None:
    before = platform.catalog.current().rule(CASE).format.source
    for fmt in ("X" * 40 + "{0000}", "CASE-NUMBER-LONG-PREFIX-{00000000}"):
        with pytest.raises(FormatError) as info, platform.begin() as conn:
            store_rule(conn, RuleSpec("Case", "CaseNumber", fmt))
        assert info.value.rule == 5
    platform.catalog.refresh()
    assert platform.catalog.current().rule(CASE).format.source == before


def test_a_counter_past_its_width_raises_instead_of_truncating(platform: Platform) -> None:
    fid = platform.catalog.current().field_id(CASE)
    with platform.begin() as conn:
        conn.execute(
            sa.update(counter_table).where(counter_table.c.field_id == fid).values(next_value=99_999_999)
        )
    assert number(platform.records.insert("Case", {"Subject": "last"})["CaseNumber"]) == 99_999_999
    with pytest.raises(CounterOverflow):
        platform.records.insert("Case", {"Subject": "one too many"})
    assert platform.records.count("Case") == 1
    assert next_value(platform) >= 100_000_000


def test_engine_url_with_metacharacters_in_the_password_is_masked() -> None:
    engine = create_engine("mysql+pymysql://root:s3cr'et;--@127.0.0.1:1/x")
    with pytest.raises(AutonumberError) as info:
        check_reachable(engine)
    engine.dispose()
    assert "s3cr'et" not in str(info.value)
