"""The core rules of the standard pack (the data-spec generator extends this list)."""

from __future__ import annotations

from .rules import RuleSpec

QUOTE_COUNTRY_CHAINS = {
    "tokenLiteral": "{Account.BillingCountryCode}",
    "fkChains": [
        [{"fk": "AccountId", "targetObject": "Account", "targetField": "BillingCountryCode"}],
        [
            {"fk": "OpportunityId", "targetObject": "Opportunity", "targetField": "AccountId"},
            {"fk": "AccountId", "targetObject": "Account", "targetField": "BillingCountryCode"},
        ],
    ],
}

CORE_RULES: tuple[RuleSpec, ...] = (
    RuleSpec("Account", "Account_ID__c", "IBG-B-{YYYY}{MM}{DD}-{000000}"),
    RuleSpec("Case", "CaseNumber", "{00000000}"),
    RuleSpec("Order", "OrderNumber", "{00000000}"),
    RuleSpec("Contract", "ContractNumber", "{00000000}"),
    RuleSpec("Quote", "QuoteNumber", "{00000000}"),
    RuleSpec(
        "Contract",
        "Contract_Number__c",
        "{Account.BillingCountryCode}-{RecordType.RecordTypeCode}-{YY}{MM}{DD}-{00}",
        scope="per_prefix",
        overrides=(
            {
                "tokenLiteral": "{Account.BillingCountryCode}",
                "directField": "Account_Country_Code__c",
            },
        ),
    ),
    RuleSpec(
        "Quote",
        "Quote_No__c",
        "{Account.BillingCountryCode}-QT-{YY}{MM}{DD}-{00}",
        scope="per_prefix",
        overrides=(QUOTE_COUNTRY_CHAINS,),
    ),
    RuleSpec(
        "Order",
        "Order_Number__c",
        "{Account.BillingCountryCode}-ORD-{YY}{MM}{DD}-{00}",
        scope="per_prefix",
    ),
)
