"""Metadata rules 4-10 and token-ref derivation against an in-memory catalog (no database)."""

from __future__ import annotations

import itertools
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autonumber.errors import FormatError
from autonumber.format import (
    ChainStep,
    FieldInfo,
    MemoryCatalog,
    ObjectInfo,
    TokenRef,
    canonicalize_token_refs,
    derive_token_refs,
    parse_format,
    validate_format,
)

OBJECTS = ["Account", "Opportunity", "Contract", "Quote", "Order", "Case", "Invoice"]


def _fields(contract_has_account: bool = True) -> list[FieldInfo]:
    F = FieldInfo
    out = [
        F("Account", "Name", "text", max_length=255),
        F("Account", "BillingCountryCode", "text", max_length=3),
        F("Account", "SomeFormula__c", "formula"),
        F("Account", "Account_ID__c", "autonumber", max_length=30),
        F("Account", "ParentId", "reference", "Account"),
        F("Account", "NoLength__c", "text"),
        F("Opportunity", "Name", "text", max_length=120),
        F("Opportunity", "AccountId", "reference", "Account"),
        F("Contract", "RecordTypeId", "reference", "RecordType"),
        F("Contract", "Account_Country_Code__c", "text", max_length=3),
        F("Contract", "ContractNumber", "autonumber", max_length=20),
        F("Contract", "Contract_Number__c", "autonumber", max_length=40),
        F("Contract", "Calc__c", "formula"),
        F("Quote", "Name", "text", max_length=80),
        F("Quote", "OpportunityId", "reference", "Opportunity"),
        F("Quote", "AccountId", "reference", "Account"),
        F("Quote", "Account_Country_Code__c", "text", max_length=3),
        F("Quote", "Quote_No__c", "autonumber", max_length=30),
        F("Order", "AccountId", "reference", "Account"),
        F("Order", "Order_Number__c", "autonumber", max_length=30),
        F("Case", "Subject", "text", max_length=255),
        F("Case", "CaseNumber", "autonumber", max_length=30),
        F("Invoice", "BillToId", "reference", "Account"),
        F("Invoice", "ShipToId", "reference", "Account"),
        F("Invoice", "Number__c", "autonumber", max_length=40),
    ]
    if contract_has_account:
        out.append(F("Contract", "AccountId", "reference", "Account"))
    return out


def make_catalog(contract_has_account: bool = True) -> MemoryCatalog:
    return MemoryCatalog(
        [ObjectInfo(o, o.lower()) for o in OBJECTS],
        _fields(contract_has_account),
        record_type_columns=("Id", "DeveloperName", "Name", "RecordTypeCode"),
    )


CAT = make_catalog()


def rule_of(fmt: str, source: str, catalog: MemoryCatalog = CAT, **kw: Any) -> int:
    with pytest.raises(FormatError) as info:
        validate_format(fmt, source_object=source, catalog=catalog, **kw)
    assert str(info.value).startswith(f"rule {info.value.rule}: format ")
    return info.value.rule


@pytest.mark.parametrize(
    ("fmt", "source", "rule"),
    [  # the fail examples, every row; the metadata rows on the object the table names
        ("AUTO-", "Account", 1),
        ("{0000}-{0000}", "Account", 1),
        ("{YYYY}", "Account", 1),
        ("{hh}-{0000}", "Account", 0),
        ("{Account.Unknown}-{0000}", "Contract", 4),
        ("{NoSuchObject.Field}-{0000}", "Contract", 4),
        ("{Account.SomeFormula__c}-{0000}", "Contract", 6),
        ("{0000000000000000000}", "Account", 2),
        ("{}", "Account", 0),
        ("{", "Account", 0),
        ("{RecordType.Name}", "Case", 1),  # as written it also lacks a counter: rule 1 first
        ("{RecordType.Name}-{0000}", "Case", 7),
        ("{RecordType.NoSuchColumn}-{0000}", "Contract", 10),
        ("{proj-0000}", "Account", 0),
    ],
)
def test_fail_examples(fmt: str, source: str, rule: int) -> None:
    assert rule_of(fmt, source) == rule


def test_no_fk_path_is_rule_4() -> None:
    no_fk = make_catalog(contract_has_account=False)
    assert rule_of("{Account.Name}-{0000}", "Contract", no_fk) == 4
    assert rule_of("{Account.Name}-{0000}", "Case") == 4


def test_record_type_developer_name_is_accepted_at_parse() -> None:
    refs = validate_format("{RecordType.DeveloperName}-{0000}", source_object="Contract", catalog=CAT)
    assert refs[0].fkChains == [
        [ChainStep(fk="RecordTypeId", targetObject="RecordType", targetField="DeveloperName")]
    ]


@pytest.mark.parametrize(
    ("fmt", "source", "target"),
    [  # the pass examples on their objects
        ("{0000}", "Contract", "ContractNumber"),
        ("{00000000}", "Order", "Order_Number__c"),
        ("IBG-B-{YYYY}{MM}{DD}-{000000}", "Account", "Account_ID__c"),
        ("{Account.BillingCountryCode}-CSA-{YY}{MM}{DD}-{00}", "Contract", "Contract_Number__c"),
        ("{Account.BillingCountryCode}-QT-{YY}{MM}{DD}-{00}", "Quote", "Quote_No__c"),
        ("{Account.BillingCountryCode}-ORD-{YY}{MM}{DD}-{00}", "Order", "Order_Number__c"),
        ("{RecordType.RecordTypeCode}-{YY}{MM}{DD}-{00}", "Contract", "Contract_Number__c"),
    ],
)
def test_pass_examples_validate(fmt: str, source: str, target: str) -> None:
    for scope in ("global", "per_prefix"):
        refs = validate_format(fmt, source_object=source, catalog=CAT, target_field=target, scope=scope)
        cross_record = re.findall(r"\{\w+\.\w+\}", fmt)
        assert [ref.tokenLiteral for ref in refs] == cross_record, (fmt, scope, refs)


def test_case_7_rendered_length_over_max_length_is_rule_5() -> None:
    fmt = "IBG-B-{YYYY}{MM}{DD}-{000000}"  # 21 characters at 999999
    assert rule_of(fmt, "Contract", target_field="ContractNumber") == 5  # MaxLength 20
    validate_format(fmt, source_object="Contract", catalog=CAT, target_field="Contract_Number__c")
    # cross values count at their MaxLength: 3 + "-CSA-" + 6 + "-" + 5 = 20 fits 20; 21 does not
    validate_format(
        "{Account.BillingCountryCode}-CSA-{YY}{MM}{DD}-{00000}",
        source_object="Contract",
        catalog=CAT,
        target_field="ContractNumber",
    )
    assert (
        rule_of(
            "{Account.BillingCountryCode}-CSA-{YY}{MM}{DD}-{000000}",
            "Contract",
            target_field="ContractNumber",
        )
        == 5
    )
    assert rule_of("{Account.Name}-{0}", "Contract", target_field="Contract_Number__c") == 5
    # RecordTypeCode is VARCHAR(16) when the catalog gives no MaxLength: 16 + 10 > 20
    assert (
        rule_of("{RecordType.RecordTypeCode}-{YY}{MM}{DD}-{00}", "Contract", target_field="ContractNumber")
        == 5
    )
    # a value with no MaxLength cannot be bounded: fail closed
    assert rule_of("{Account.NoLength__c}-{0}", "Contract", target_field="Contract_Number__c") == 5


def test_rule_8_depth_cycle_terminal_and_self_reference() -> None:
    bcc = "{Account.BillingCountryCode}"
    fmt = bcc + "-{00}"
    deep = [
        {"fk": "OpportunityId", "targetObject": "Opportunity", "targetField": "AccountId"},
        {"fk": "AccountId", "targetObject": "Account", "targetField": "ParentId"},
        {"fk": "ParentId", "targetObject": "Account", "targetField": "BillingCountryCode"},
    ]
    assert rule_of(fmt, "Quote", overrides=[{"tokenLiteral": bcc, "fkChains": [deep]}]) == 8
    cycle = [
        {"fk": "AccountId", "targetObject": "Account", "targetField": "ParentId"},
        {"fk": "ParentId", "targetObject": "Account", "targetField": "BillingCountryCode"},
    ]
    assert rule_of(fmt, "Order", overrides=[{"tokenLiteral": bcc, "fkChains": [cycle]}]) == 8
    assert rule_of("{Opportunity.AccountId}-{00}", "Quote") == 8  # terminal is a lookup
    assert rule_of("{Quote.Name}-{00}", "Quote") == 8  # self-reference
    assert rule_of("{Account.Name.Id}-{00}", "Quote") == 4  # nested dots: Account has no lookup to Name
    assert rule_of("{A.B.C.D.E}-{00}", "Quote") == 8  # four hops
    broken = [
        {"fk": "OpportunityId", "targetObject": "Opportunity", "targetField": "Name"},
        {"fk": "AccountId", "targetObject": "Account", "targetField": "BillingCountryCode"},
    ]
    assert rule_of(fmt, "Quote", overrides=[{"tokenLiteral": bcc, "fkChains": [broken]}]) == 8
    assert rule_of(fmt, "Quote", overrides=[{"tokenLiteral": bcc, "fkChains": [[]]}]) == 8


def test_several_fks_demand_an_override() -> None:
    fmt = "{Account.BillingCountryCode}-{0000}"
    with pytest.raises(FormatError) as info:
        validate_format(fmt, source_object="Invoice", catalog=CAT)
    assert info.value.rule == 4
    assert "BillToId, ShipToId" in str(info.value) and "fkChains" in str(info.value)
    chain = [{"fk": "ShipToId", "targetObject": "Account", "targetField": "BillingCountryCode"}]
    refs = validate_format(
        fmt,
        source_object="Invoice",
        catalog=CAT,
        overrides=[{"tokenLiteral": "{Account.BillingCountryCode}", "fkChains": [chain]}],
    )
    assert refs[0].fkChains[0][0].fk == "ShipToId"


def test_bad_overrides_are_rejected() -> None:
    fmt = "{Account.BillingCountryCode}-{0000}"
    bcc = "{Account.BillingCountryCode}"
    assert rule_of(fmt, "Order", overrides=[{"tokenLiteral": "{Account.Name}"}]) == 4
    assert rule_of(fmt, "Order", overrides=[{"tokenLiteral": bcc, "colour": "red"}]) == 4
    assert rule_of(fmt, "Order", overrides=[{"tokenLiteral": bcc, "readStrategy": "dirty"}]) == 4
    assert rule_of(fmt, "Order", overrides=[{"tokenLiteral": bcc, "directField": "Nope"}]) == 4
    assert rule_of(fmt, "Contract", overrides=[{"tokenLiteral": bcc, "directField": "Calc__c"}]) == 6
    assert rule_of(fmt, "Order", overrides=[{"tokenLiteral": bcc, "targetField": "Name"}]) == 4
    wrong_fk = [{"fk": "OpportunityId", "targetObject": "Account", "targetField": "BillingCountryCode"}]
    assert rule_of(fmt, "Quote", overrides=[{"tokenLiteral": bcc, "fkChains": [wrong_fk]}]) == 4
    assert rule_of(fmt, "NoSuchObject") == 4
    assert rule_of(fmt, "Order", target_field="Nope") == 4


def test_rule_9_scope() -> None:
    assert rule_of("{0000}", "Account", scope="per_day") == 9
    assert rule_of("{YYYY}-{0000}", "Account", scope="per_day") == 9  # would repeat each day
    assert rule_of("{0000}", "Account", scope="weekly") == 9
    validate_format("{YY}{MM}{DD}-{0000}", source_object="Account", catalog=CAT, scope="per_day")
    validate_format("{0000}", source_object="Account", catalog=CAT, scope="per_prefix")
    long_key = "{Account.Name}-{0000}"  # a key past scope_key VARCHAR(64) is kept as a digest
    validate_format(long_key, source_object="Order", catalog=CAT, scope="per_prefix")
    validate_format(long_key, source_object="Order", catalog=CAT, scope="global")
    both_sides = "{Account.Name}-{0000}-{Account.BillingCountryCode}"  # counter place depends on data
    for scope in ("global", "per_day", "per_prefix"):
        assert rule_of(both_sides, "Order", scope=scope) == 9


def test_depth_2_fallback_matches_the_spec_json() -> None:
    """The documented example, byte for byte, from a Quote format plus an explicit override."""
    bcc = "{Account.BillingCountryCode}"
    override = {
        "tokenLiteral": bcc,
        "directField": "Account_Country_Code__c",
        "fkChains": [
            [{"fk": "AccountId", "targetObject": "Account", "targetField": "BillingCountryCode"}],
            [
                {"fk": "OpportunityId", "targetObject": "Opportunity", "targetField": "AccountId"},
                {"fk": "AccountId", "targetObject": "Account", "targetField": "BillingCountryCode"},
            ],
        ],
    }
    refs = validate_format(
        bcc + "-QT-{YY}{MM}{DD}-{00}",
        source_object="Quote",
        catalog=CAT,
        target_field="Quote_No__c",
        scope="per_prefix",
        overrides=[override],
    )
    expected = (
        '[{"directField":"Account_Country_Code__c","fkChains":['
        '[{"fk":"AccountId","targetField":"BillingCountryCode","targetObject":"Account"}],'
        '[{"fk":"OpportunityId","targetField":"AccountId","targetObject":"Opportunity"},'
        '{"fk":"AccountId","targetField":"BillingCountryCode","targetObject":"Account"}]],'
        '"readStrategy":"caller_txn","targetField":"BillingCountryCode",'
        '"targetObject":"Account","tokenLiteral":"{Account.BillingCountryCode}"}]'
    )
    assert canonicalize_token_refs(refs) == expected


def test_derived_defaults() -> None:
    f = parse_format("{Account.BillingCountryCode}-{RecordType.RecordTypeCode}-{00}")
    refs = derive_token_refs(f, "Contract", CAT)
    assert refs == [
        TokenRef(
            tokenLiteral="{Account.BillingCountryCode}",
            targetObject="Account",
            targetField="BillingCountryCode",
            fkChains=[[ChainStep(fk="AccountId", targetObject="Account", targetField="BillingCountryCode")]],
        ),
        TokenRef(
            tokenLiteral="{RecordType.RecordTypeCode}",
            targetObject="RecordType",
            targetField="RecordTypeCode",
            fkChains=[
                [ChainStep(fk="RecordTypeId", targetObject="RecordType", targetField="RecordTypeCode")]
            ],
        ),
    ]
    assert refs[0].readStrategy == "caller_txn" and refs[0].directField is None
    fresh = derive_token_refs(
        f,
        "Contract",
        CAT,
        overrides=[{"tokenLiteral": "{Account.BillingCountryCode}", "readStrategy": "fresh_read"}],
    )
    assert fresh[0].readStrategy == "fresh_read" and fresh[0].fkChains == refs[0].fkChains


# ---- 5b: random fkChains: every cyclic, too deep or non-scalar chain is rejected -------------

_STEPS = [
    ChainStep(fk=fk, targetObject=obj, targetField=fld)
    for fk, obj in [("AccountId", "Account"), ("OpportunityId", "Opportunity"), ("ParentId", "Account")]
    for fld in ["AccountId", "ParentId", "BillingCountryCode", "Name"]
]


@given(chain=st.lists(st.sampled_from(_STEPS), min_size=1, max_size=4))
def test_5b_random_chains(chain: list[ChainStep]) -> None:
    source = "Quote"
    objects = [source, *(s.targetObject for s in chain)]
    cyclic = len(set(objects)) != len(objects)
    terminal = CAT.get_field(chain[-1].targetObject, chain[-1].targetField)
    non_scalar = terminal is None or terminal.is_reference
    last = chain[-1]
    fmt = f"{{{last.targetObject}.{last.targetField}}}-{{0000}}"
    override = {
        "tokenLiteral": f"{{{last.targetObject}.{last.targetField}}}",
        "fkChains": [[vars(s).copy() for s in chain]],
    }
    try:
        validate_format(fmt, source_object=source, catalog=CAT, overrides=[override])
    except FormatError as exc:
        assert exc.rule in (4, 8)
        return
    assert not cyclic and not non_scalar and len(chain) <= 2
    for a, b in itertools.pairwise(chain):
        assert a.targetField == b.fk


def test_nested_dots_stand_for_the_one_chain_through_those_objects() -> None:
    refs = validate_format(
        "{Opportunity.Account.BillingCountryCode|XX}-{00}", source_object="Quote", catalog=CAT
    )
    assert [r.tokenLiteral for r in refs] == ["{Opportunity.Account.BillingCountryCode}"]
    assert [[(s.fk, s.targetObject, s.targetField) for s in c] for c in refs[0].fkChains] == [
        [("OpportunityId", "Opportunity", "AccountId"), ("AccountId", "Account", "BillingCountryCode")]
    ]
    assert refs[0].key == "Account.BillingCountryCode"
    assert rule_of("{Opportunity.Account.BillingCountryCode}-{00}", "Order") == 4  # no lookup to Opportunity
