"""Depth-3 chains and the nested-dot syntax (docs/cross-record.md) on every backend:
`{Opportunity.Account.BillingCountryCode}` on Quote, `{Acct.Country.Region.Code}` three hops away,
through `field add|set` and the library; a broken hop fails closed or shows the token's default."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import autonumber
from autonumber.errors import TokenResolveError
from autonumber.objects.custom import add_object
from autonumber.rules.verify import verify
from autonumber.runtime import Platform
from support import bootstrap_url, run_cli


@pytest.fixture
def platform(db_url: str) -> Iterator[Platform]:
    """The core pack plus Region ← Country ← Acct ← Deal, each a lookup to the one before."""
    bootstrap_url(db_url)
    p = autonumber.connect(db_url)
    with p.db.begin() as conn:
        add_object(conn, "Region", ["Code:text(8)"])
        add_object(conn, "Country", ["RegionId:ref(Region)"])
        add_object(conn, "Acct", ["CountryId:ref(Country)"])
        add_object(conn, "Deal", ["AcctId:ref(Acct)"])
    p.catalog.refresh()
    yield p
    p.close()


def cli(capsys: pytest.CaptureFixture[str], db_url: str, *argv: str) -> tuple[int, str]:
    return run_cli([*argv, "--db", db_url], capsys)


def chain(p: Platform, code: str | None) -> str:
    region = p.records.insert("Region", {"Code": code})["Id"]
    country = p.records.insert("Country", {"RegionId": region})["Id"]
    return str(p.records.insert("Acct", {"CountryId": country})["Id"])


def test_three_hops_by_nested_dots(
    platform: Platform, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    fmt = "{Acct.Country.Region.Code}-{0000}"
    code, out = cli(
        capsys, db_url, "field", "add", "Deal", "DealNo", "--format", fmt, "--scope", "per_prefix"
    )
    assert code == 0, out
    platform.catalog.refresh()
    [ref] = platform.engine.rule("Deal.DealNo").token_refs
    assert [(s.fk, s.targetObject) for s in ref.fkChains[0]] == [
        ("AcctId", "Acct"),
        ("CountryId", "Country"),
        ("RegionId", "Region"),
    ]
    apac, emea = chain(platform, "APAC"), chain(platform, "EMEA")
    deals = platform.records.insert_many("Deal", [{"AcctId": a} for a in (apac, emea, apac)])
    assert [d["DealNo"] for d in deals] == ["APAC-0001", "EMEA-0001", "APAC-0002"]
    blank = chain(platform, None)
    before = platform.records.count("Deal")
    with pytest.raises(TokenResolveError) as info:  # the third hop's value is empty
        platform.records.insert("Deal", {"AcctId": blank})
    assert info.value.cause == "target null" and platform.records.count("Deal") == before
    code, out = cli(
        capsys, db_url, "field", "set", "Deal", "DealNo", "--format", "{Acct.Country.Region.Code|NA}-{0000}"
    )
    assert code == 0, out
    platform.catalog.refresh()
    assert platform.records.insert("Deal", {"AcctId": blank})["DealNo"] == "NA-0001"
    assert platform.records.insert("Deal", {})["DealNo"] == "NA-0002"  # fk null at the first hop
    assert verify(platform.db) == []


def test_nested_dots_on_quote_follow_the_opportunity(
    platform: Platform, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    fmt = "{Opportunity.Account.BillingCountryCode}-Q-{000}"
    code, out = cli(
        capsys, db_url, "field", "set", "Quote", "Quote_No__c", "--format", fmt, "--scope", "per_prefix"
    )
    assert code == 0, out
    platform.catalog.refresh()
    sg = platform.records.insert("Account", {"Name": "s", "BillingCountryCode": "SG"})["Id"]
    us = platform.records.insert("Account", {"Name": "u", "BillingCountryCode": "US"})["Id"]
    opp = platform.records.insert("Opportunity", {"Name": "o", "AccountId": sg})["Id"]
    # the direct AccountId is not what this token reads: only the path through the Opportunity
    quote = platform.records.insert("Quote", {"Name": "q", "OpportunityId": opp, "AccountId": us})
    assert quote["Quote_No__c"] == "SG-Q-001"
    with pytest.raises(TokenResolveError):
        platform.records.insert("Quote", {"Name": "q", "AccountId": us})
    code, out = cli(capsys, db_url, "field", "set", "Order", "Order_Number__c", "--format", fmt)
    assert code == 2 and "Order has no lookup to Opportunity" in out and out.count("\n") == 1, out
    code, out = cli(capsys, db_url, "format", "check", "{A.B.C.D.E}-{0000}")
    assert code == 2 and "walks 4 hops; chains have 1..3 steps" in out, out
