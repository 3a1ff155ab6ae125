"""Taxonomy tokens on every backend (case 13):
`{RecordType.RecordTypeCode}` resolves through the record's RecordTypeId against
`_System_RecordType.RecordTypeCode`; a record type without a code fails closed."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

import autonumber
from autonumber.db.tables import system_record_type
from autonumber.errors import TokenResolveError
from autonumber.rules.store import RuleSpec, store_rule
from autonumber.runtime import Platform
from support import bootstrap_url

DAY = datetime(2026, 4, 17, 9, 30, tzinfo=UTC)
TYPE = "{RecordType.RecordTypeCode}"
SPEC_CODES = {  # DeveloperName → RecordTypeCode
    "Services Agreement": "CSA",
    "Services Agreement Online": "TCSA",
    "Customer Reference Agreement": "CRA",
    "Non-Disclosure Agreement": "NDA",
    "Partner Network Agreement": "PNA",
    "Payment Agreement": "PA",
    "Cloud POC Agreement": "TCPA",
    "Enterprise POC Agreement": "TEPA",
    "Master Agreement": "MA",
}


@pytest.fixture
def platform(db_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Platform]:
    """The core pack with the database clock pinned to 2026-04-17."""
    bootstrap_url(db_url)
    p = autonumber.connect(db_url)
    monkeypatch.setattr(p.dialect, "utc_now", lambda conn: DAY)
    yield p
    p.close()


@pytest.fixture
def sg(platform: Platform) -> str:
    return str(platform.records.insert("Account", {"Name": "Acme", "BillingCountryCode": "SG"})["Id"])


def number(p: Platform, **fields: str | None) -> str:
    return str(p.records.insert("Contract", fields)["Contract_Number__c"])


def test_case13_every_seeded_record_type_renders_its_code(platform: Platform, sg: str) -> None:
    t = system_record_type
    with platform.db.connect() as conn:
        rows = conn.execute(sa.select(t.c.Id, t.c.DeveloperName).where(t.c.ObjectId == "obj_Contract"))
        seeded = {name: rt_id for rt_id, name in rows}
    assert set(seeded) == set(SPEC_CODES)
    for name, code in SPEC_CODES.items():
        rendered = number(platform, AccountId=sg, RecordTypeId=seeded[name])
        assert rendered == f"SG-{code}-260417-01", name


def test_r1_pure_taxonomy_format(platform: Platform) -> None:
    """`{RecordType.RecordTypeCode}-{YY}{MM}{DD}-{00}` renders CSA-260417-01, while
    DeveloperName stays the human-readable "Services Agreement"."""
    with platform.db.begin() as conn:
        store_rule(
            conn,
            RuleSpec("Contract", "ContractNumber", f"{TYPE}-{{YY}}{{MM}}{{DD}}-{{00}}", scope="per_prefix"),
        )
        name = conn.execute(
            sa.select(system_record_type.c.DeveloperName).where(
                system_record_type.c.Id == "rt_Contract_Services_Agreement"
            )
        ).scalar_one()
    assert name == "Services Agreement"
    platform.catalog.refresh()
    csa, nda = "rt_Contract_Services_Agreement", "rt_Contract_Non_Disclosure_Agreement"
    rows = [{"RecordTypeId": rt, "Account_Country_Code__c": "SG"} for rt in (csa, nda, csa)]
    numbers = [r["ContractNumber"] for r in platform.records.insert_many("Contract", rows)]
    assert numbers == ["CSA-260417-01", "NDA-260417-01", "CSA-260417-02"]


def test_record_type_without_code_fails_closed(platform: Platform, sg: str) -> None:
    with platform.db.begin() as conn:
        conn.execute(
            sa.update(system_record_type)
            .where(system_record_type.c.Id == "rt_Contract_Master_Agreement")
            .values(RecordTypeCode=None)
        )
    with pytest.raises(TokenResolveError) as info:
        number(platform, AccountId=sg, RecordTypeId="rt_Contract_Master_Agreement")
    err = info.value
    assert err.cause == "target null"
    assert err.token == TYPE
    assert err.chains == (
        "RecordTypeId → RecordType.RecordTypeCode: target null "
        "(RecordType 'rt_Contract_Master_Agreement' has no RecordTypeCode)",
    )
    assert "\n" not in str(err) and "Contract.Contract_Number__c" in str(err)
    assert platform.records.count("Contract") == 0


@pytest.mark.parametrize(
    ("record_type", "cause"), [(None, "fk null"), ("", "fk null"), ("rt_Contract_Nope", "row missing")]
)
def test_record_type_id_null_or_unknown(
    platform: Platform, sg: str, record_type: str | None, cause: str
) -> None:
    with pytest.raises(TokenResolveError) as info:
        number(platform, AccountId=sg, RecordTypeId=record_type)
    assert info.value.cause == cause
    assert info.value.token == TYPE
    assert platform.records.count("Contract") == 0
