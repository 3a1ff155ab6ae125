"""seed_counters (docs/setup.md): live values and legacy tables → counter rows; fail closed; never lower.

Cases 23, 23b, 24, 25, 26, the `CAT.{0000}` literal and a legacy CurrentNumber above the live max,
on SQLite, MariaDB and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

import autonumber
from autonumber.catalog.cache import load_snapshot
from autonumber.db import dialect_for
from autonumber.db.schema import create_legacy_tables
from autonumber.db.tables import counter_table, legacy_autonumber, legacy_compound
from autonumber.errors import SeedLimitError, SeedParseError
from autonumber.rules.store import RuleSpec
from autonumber.setup.apply import apply, phase_named, run_phases
from autonumber.setup.dataspec import DataSpec, SpecMeta
from autonumber.setup.pack import FieldSpec, ObjectSpec
from autonumber.setup.standard import CONTRACT_RECORD_TYPES, CORE_OBJECTS, CORE_RULES

WIDGET = ObjectSpec(
    "Widget", (FieldSpec("Code__c", "autonumber", None, 30), FieldSpec("Cat__c", "autonumber", None, 30))
)
WIDGET_RULES = (
    RuleSpec("Widget", "Code__c", "W-{YYYY}{MM}{DD}-{0000}", scope="per_day", length=30),
    RuleSpec("Widget", "Cat__c", "CAT.{0000}", length=30),
)
SPEC = DataSpec(
    SpecMeta(
        "data-spec/v1",
        "test",
        "local",
        "pending",
        (),
        (
            "_System_AutoNumber",
            "_System_CompoundAutoNumber",
            "_System_IdentifierRule",
            "_System_IdentifierSeq",
        ),
        (),
    ),
    (*CORE_OBJECTS, WIDGET),
    (*CORE_RULES, *WIDGET_RULES),
    CONTRACT_RECORD_TYPES,
    "test",
)


def prepare(engine: Engine) -> None:
    """The pre-cutover state: objects and tables exist, no rules, legacy tables present."""
    run_phases(engine, SPEC, [phase_named("schema"), phase_named("standard_pack")])
    create_legacy_tables(engine)


def insert(engine: Engine, obj: str, rows: Sequence[dict[str, Any]]) -> None:
    with engine.begin() as conn:
        table = load_snapshot(conn).table(obj)
        conn.execute(sa.insert(table), [dict(r) for r in rows])


def counters(engine: Engine) -> dict[tuple[str, str], int]:
    with engine.connect() as conn:
        return {(r.field_id, r.scope_key): r.next_value for r in conn.execute(sa.select(counter_table))}


def db_today(engine: Engine) -> datetime:
    with engine.connect() as conn:
        return dialect_for(conn).utc_now(conn)


def test_case_25_account_continues_after_the_observed_max(engine: Engine, db_url: str) -> None:
    prepare(engine)
    insert(
        engine,
        "Account",
        [
            {"Id": "a1", "Name": "A", "Account_ID__c": "IBG-B-20260415-003901"},
            {"Id": "a2", "Name": "B", "Account_ID__c": "IBG-B-20260417-003967"},
            {"Id": "a3", "Name": "C", "Account_ID__c": "IBG-B-20260416-003950"},
        ],
    )
    apply(engine, SPEC)
    assert counters(engine)[("Account.Account_ID__c", "")] == 3968
    with autonumber.connect(db_url) as platform:
        record = platform.records.insert("Account", {"Name": "New", "BillingCountryCode": "SG"})
    assert record["Account_ID__c"] == f"IBG-B-{db_today(engine):%Y%m%d}-003968"


def test_case_26_compound_counter_continues_per_prefix(engine: Engine, db_url: str) -> None:
    prepare(engine)
    insert(
        engine,
        "Contract",
        [
            {"Id": "c1", "Contract_Number__c": "SG-CSA-260417-41", "ContractNumber": "00000001"},
            {"Id": "c2", "Contract_Number__c": "SG-CSA-260417-42", "ContractNumber": "00000002"},
            {"Id": "c3", "Contract_Number__c": "US-NDA-260417-03", "ContractNumber": "00000003"},
        ],
    )
    with engine.begin() as conn:
        conn.execute(
            sa.insert(legacy_compound),
            [
                {"Id": "p1", "ObjectApiName": "Contract", "Prefix": "SG-CSA-260417", "CurrentNumber": 42},
                {"Id": "p2", "ObjectApiName": "Contract", "Prefix": "DE-MA-260416-", "CurrentNumber": 7},
                {"Id": "p3", "ObjectApiName": "Contract", "Prefix": "OLD2019", "CurrentNumber": 900},
            ],
        )
    results = apply(engine, SPEC)
    got = counters(engine)
    fid = "Contract.Contract_Number__c"
    assert got[(fid, "SG-CSA-260417-")] == 43
    assert got[(fid, "US-NDA-260417-")] == 4
    assert got[(fid, "DE-MA-260416-")] == 8  # a compound prefix with no live rows keeps its state
    seed = next(r for r in results if r.name == "seed_counters")
    assert any("OLD2019" in line and "not applied" in line for line in seed.changes)
    # ContractNumber is global: it takes the object's largest compound counter as a floor.
    assert got[("Contract.ContractNumber", "")] == 901
    with autonumber.connect(db_url) as platform:
        rule = platform.catalog.current().rule(fid)
        at = datetime(2026, 4, 17, 12, tzinfo=UTC)
        cross = {"Account.BillingCountryCode": "SG", "RecordType.RecordTypeCode": "CSA"}
        res = platform.engine.reserver.reserve_cas(rule, 1, cross, at=at)
    assert rule.format.render(res.first, at, cross) == "SG-CSA-260417-43"


def test_legacy_current_number_above_the_live_max_wins(engine: Engine) -> None:
    prepare(engine)
    insert(engine, "Case", [{"Id": f"k{i}", "CaseNumber": f"{i:08d}"} for i in range(1, 11)])
    with engine.begin() as conn:
        conn.execute(
            sa.insert(legacy_autonumber),
            [
                {"Id": "l1", "ObjectApiName": "Case", "FieldApiName": "CaseNumber", "CurrentNumber": 50},
                {"Id": "l2", "ObjectApiName": "Order", "FieldApiName": "OrderNumber", "CurrentNumber": 3},
            ],
        )
    insert(engine, "Order", [{"Id": "o1", "OrderNumber": "00000009"}])
    apply(engine, SPEC)
    got = counters(engine)
    assert got[("Case.CaseNumber", "")] == 51
    assert got[("Order.OrderNumber", "")] == 10  # here the live max is the larger floor
    assert got[("Quote.QuoteNumber", "")] == 1  # Approach X: a row even without data


def test_case_23b_per_day_rows_for_three_utc_days(engine: Engine) -> None:
    prepare(engine)
    values = {"20260415": [1, 5, 3], "20260416": [9], "20260417": [2, 1]}
    insert(
        engine,
        "Widget",
        [{"Id": f"w{day}{n}", "Code__c": f"W-{day}-{n:04d}"} for day, ns in values.items() for n in ns],
    )
    apply(engine, SPEC)
    rows = {k: v for (f, k), v in counters(engine).items() if f == "Widget.Code__c"}
    assert rows == {"20260415": 6, "20260416": 10, "20260417": 3}


def test_cat_literal_dot_is_not_a_wildcard(engine: Engine) -> None:
    prepare(engine)
    insert(engine, "Widget", [{"Id": "w1", "Cat__c": "CAT.0007"}, {"Id": "w2", "Cat__c": "CAT.0002"}])
    apply(engine, SPEC)
    assert counters(engine)[("Widget.Cat__c", "")] == 8
    insert(engine, "Widget", [{"Id": "w3", "Cat__c": "CATX0009"}])
    with pytest.raises(SeedParseError) as info:
        apply(engine, SPEC, reseed=True)
    assert info.value.row_id == "w3" and info.value.value == "CATX0009"
    assert r"CAT\." in info.value.regex


def test_case_24_unparseable_value_aborts_and_writes_no_counter(engine: Engine) -> None:
    prepare(engine)
    insert(
        engine,
        "Account",
        [
            {"Id": "a1", "Account_ID__c": "IBG-B-20260417-003967"},
            {"Id": "a01XXXX", "Account_ID__c": "weirdo-2021"},
        ],
    )
    with pytest.raises(SeedParseError) as info:
        apply(engine, SPEC)
    err = info.value
    assert (err.field, err.field_id, err.row_id, err.value) == (
        "Account.Account_ID__c",
        "Account.Account_ID__c",
        "a01XXXX",
        "weirdo-2021",
    )
    assert err.regex.startswith("^IBG\\-B\\-")
    assert "row Id=a01XXXX has value 'weirdo-2021' which does not match derived regex" in str(err)
    assert counters(engine) == {}
    with engine.connect() as conn:  # the legacy tables are still there: nothing was dropped
        assert legacy_autonumber.name in sa.inspect(conn).get_table_names()


def test_case_23_reseed_with_live_inserts_between_never_regresses(engine: Engine, db_url: str) -> None:
    prepare(engine)
    insert(engine, "Account", [{"Id": "a1", "Account_ID__c": "IBG-B-20260417-003967"}])
    apply(engine, SPEC)
    with autonumber.connect(db_url) as platform:
        made = [platform.records.insert("Account", {"Name": f"n{i}"})["Account_ID__c"] for i in range(3)]
    assert [m[-6:] for m in made] == ["003968", "003969", "003970"]
    before = counters(engine)
    results = apply(engine, SPEC, reseed=True)
    assert counters(engine) == before
    assert before[("Account.Account_ID__c", "")] == 3971
    assert next(r for r in results if r.name == "seed_counters").changes  # it did rescan
    again = apply(engine, SPEC)  # without --reseed: cut over already, nothing scanned
    assert next(r for r in again if r.name == "seed_counters").changes == []
    assert counters(engine) == before


def test_more_than_3650_buckets_is_a_structured_error(engine: Engine) -> None:
    prepare(engine)
    days = [datetime(2010, 1, 1, tzinfo=UTC).toordinal() + i for i in range(3651)]
    insert(
        engine,
        "Widget",
        [{"Id": f"w{d}", "Code__c": f"W-{datetime.fromordinal(d):%Y%m%d}-0001"} for d in days],
    )
    with pytest.raises(SeedLimitError, match="more than 3650 per_day buckets"):
        apply(engine, SPEC)
    assert counters(engine) == {}
