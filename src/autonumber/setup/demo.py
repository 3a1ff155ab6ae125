"""`autonumber demo legacy`: a pre-cutover database to try `setup apply` on.

It holds the object tables with numbers the legacy code handed out (Account_ID__c up to
`IBG-B-20260417-003967`, compound `SG-CSA-260417-42`, …) and the four legacy tables with their
counter state, including a `_System_AutoNumber.CurrentNumber` above the live maximum (CaseNumber).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from autonumber.db import dialect_for
from autonumber.db.objects import object_table
from autonumber.db.schema import create_legacy_tables, reconcile_system_schema
from autonumber.db.tables import (
    legacy_autonumber,
    legacy_compound,
    legacy_identifier_rule,
    legacy_identifier_seq,
)
from autonumber.format import FieldInfo
from autonumber.progress import NullReporter, Reporter

from .dataspec import DataSpec
from .pack import ObjectSpec, install_objects, install_record_types, record_type_id

LAST_DAY = date(2026, 4, 17)
ACCOUNT_MAX = 3967
COUNTRIES = ("SG", "US", "DE", "JP")
CHUNK = 1000
HOT_PREFIX = ("SG", "CSA", LAST_DAY)
HOT_COUNT = 42
CASE_LEGACY_GAP = 25
"""The legacy CaseNumber counter runs this far ahead of the live maximum (deleted cases)."""


@dataclass(frozen=True)
class DemoSummary:
    """How many rows the demo wrote where."""

    rows: dict[str, int]

    def lines(self) -> list[str]:
        """One line per table."""
        return [f"{name}: {n} row(s)" for name, n in self.rows.items()]


def _table(spec: ObjectSpec) -> sa.Table:
    infos = [FieldInfo(spec.name, f.name, f.type, f.reference_to, f.max_length) for f in spec.fields]
    return object_table(spec.table_name, infos, sa.MetaData())


def _accounts(n: int) -> Iterator[dict[str, Any]]:
    first = ACCOUNT_MAX - n + 1
    for i in range(n):
        day = LAST_DAY - timedelta(days=(n - 1 - i) // 20)
        yield {
            "Id": f"001{i:012d}",
            "Name": f"Account {i}",
            "BillingCountryCode": COUNTRIES[i % 4],
            "Account_ID__c": f"IBG-B-{day:%Y%m%d}-{first + i:06d}",
        }


def _compound_rows(n: int, codes: Sequence[str]) -> Iterator[tuple[str, str, date, int]]:
    """(country, code, day, counter): the hot prefix gets exactly 42, the rest ≤ 99 per prefix."""
    for k in range(1, HOT_COUNT + 1):
        yield (*HOT_PREFIX, k)
    counts: dict[tuple[str, str, date], int] = {}
    made = HOT_COUNT
    i = 0
    limit = len(COUNTRIES) * len(codes) * 60 * 100
    while made < n and i < limit:
        day = LAST_DAY - timedelta(days=1 + (i // 36) % 60)
        key = (COUNTRIES[i % 4], codes[(i // 4) % len(codes)], day)
        i += 1
        if counts.get(key, 0) >= 99:
            continue
        counts[key] = counts.get(key, 0) + 1
        made += 1
        yield (*key, counts[key])


def _insert(engine: Engine, table: sa.Table, rows: Iterator[dict[str, Any]], advance: Any) -> int:
    dialect = dialect_for(engine)
    total = 0
    batch: list[dict[str, Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= CHUNK:
            total += _flush(engine, dialect, table, batch, advance)
    return total + _flush(engine, dialect, table, batch, advance)


def _flush(engine: Engine, dialect: Any, table: sa.Table, batch: list[dict[str, Any]], advance: Any) -> int:
    if not batch:
        return 0
    with engine.begin() as conn:
        conn.execute(sa.insert(table), batch)
    n = len(batch)
    advance(n)
    batch.clear()
    return n


def fill_legacy(engine: Engine, spec: DataSpec, rows: int, reporter: Reporter | None = None) -> DemoSummary:
    """Create the pre-cutover schema and fill it; `rows` sizes the Case and Contract tables."""
    rep = reporter or NullReporter()
    reconcile_system_schema(engine)
    with engine.begin() as conn:
        install_objects(conn, spec.objects, unique=False)  # legacy databases had none
        install_record_types(conn, spec.record_types)
    create_legacy_tables(engine)
    objects = {o.name: o for o in spec.objects}
    codes = [rt.code for rt in spec.record_types]
    rt_ids = {rt.code: record_type_id(rt) for rt in spec.record_types}
    n_acc = min(rows, ACCOUNT_MAX)
    out: dict[str, int] = {}
    with rep.task("demo legacy data", n_acc + 3 * rows) as advance:
        out["Account"] = _insert(engine, _table(objects["Account"]), _accounts(n_acc), advance)
        out["Case"] = _insert(
            engine,
            _table(objects["Case"]),
            (
                {"Id": f"500{i:012d}", "Subject": f"Case {i}", "CaseNumber": f"{i:08d}"}
                for i in range(1, rows + 1)
            ),
            advance,
        )
        compound = list(_compound_rows(rows, codes))
        out["Contract"] = _insert(
            engine,
            _table(objects["Contract"]),
            (
                {
                    "Id": f"800{i:012d}",
                    "AccountId": f"001{i % n_acc:012d}",
                    "RecordTypeId": rt_ids[code],
                    "Account_Country_Code__c": country,
                    "ContractNumber": f"{i + 1:08d}",
                    "Contract_Number__c": f"{country}-{code}-{day:%y%m%d}-{k:02d}",
                }
                for i, (country, code, day, k) in enumerate(compound)
            ),
            advance,
        )
        quotes = [(c, d, k) for c, _, d, k in _compound_rows(max(rows // 4, HOT_COUNT), ["QT"])]
        out["Quote"] = _insert(
            engine,
            _table(objects["Quote"]),
            (
                {
                    "Id": f"0Q0{i:012d}",
                    "Name": f"Quote {i}",
                    "AccountId": f"001{i % n_acc:012d}",
                    "QuoteNumber": f"{i + 1:08d}",
                    "Quote_No__c": f"{c}-QT-{d:%y%m%d}-{k:02d}",
                }
                for i, (c, d, k) in enumerate(quotes)
            ),
            advance,
        )
        out.update(_legacy_tables(engine, rows, compound, quotes))
    return DemoSummary(out)


def _legacy_tables(
    engine: Engine,
    rows: int,
    compound: Sequence[tuple[str, str, date, int]],
    quotes: Sequence[tuple[str, date, int]],
) -> dict[str, int]:
    prefixes: dict[tuple[str, str], int] = {}
    for country, code, day, k in compound:
        key = ("Contract", f"{country}-{code}-{day:%y%m%d}")
        prefixes[key] = max(prefixes.get(key, 0), k)
    for country, day, k in quotes:
        key = ("Quote", f"{country}-QT-{day:%y%m%d}")
        prefixes[key] = max(prefixes.get(key, 0), k)
    numbers = [
        ("Account", "Account_ID__c", "IBG-B-{YYYY}{MM}{DD}-{000000}", ACCOUNT_MAX),
        ("Case", "CaseNumber", "{00000000}", rows + CASE_LEGACY_GAP),
        ("Contract", "ContractNumber", "{00000000}", len(compound)),
        ("Quote", "QuoteNumber", "{00000000}", len(quotes)),
    ]
    rules = [("Contract", "Contract_Number__c"), ("Quote", "Quote_No__c"), ("Order", "Order_Number__c")]
    with engine.begin() as conn:
        conn.execute(
            sa.insert(legacy_autonumber),
            [
                {
                    "Id": f"an{i}",
                    "ObjectApiName": o,
                    "FieldApiName": f,
                    "DisplayFormat": d,
                    "CurrentNumber": n,
                }
                for i, (o, f, d, n) in enumerate(numbers)
            ],
        )
        conn.execute(
            sa.insert(legacy_compound),
            [
                {"Id": f"ca{i}", "ObjectApiName": o, "Prefix": p, "CurrentNumber": n}
                for i, ((o, p), n) in enumerate(sorted(prefixes.items()))
            ],
        )
        conn.execute(
            sa.insert(legacy_identifier_rule),
            [
                {"Id": f"ir{i}", "ObjectApiName": o, "FieldApiName": f, "Template": None, "Scope": "prefix"}
                for i, (o, f) in enumerate(rules)
            ],
        )
        conn.execute(
            sa.insert(legacy_identifier_seq),
            [{"Id": "is0", "RuleId": "ir2", "ScopeKey": "SG-ORD", "CurrentValue": 7}],
        )
    return {
        legacy_autonumber.name: len(numbers),
        legacy_compound.name: len(prefixes),
        legacy_identifier_rule.name: len(rules),
        legacy_identifier_seq.name: 1,
    }
