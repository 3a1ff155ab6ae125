"""J1: one canonicalizer, idempotent through decode; the TokenRef model's stored shape."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autonumber.format import (
    ChainStep,
    TokenRef,
    TokenRefError,
    canonicalize_token_refs,
    describe_chain,
    load_token_refs,
)

_NAME = st.builds(
    lambda head, tail: head + tail,
    st.sampled_from("AaZz"),
    st.text(alphabet="AZaz09_", max_size=6),
)
_STEP = st.builds(ChainStep, fk=_NAME, targetObject=_NAME, targetField=_NAME)


@st.composite
def token_refs(draw: st.DrawFn) -> TokenRef:
    obj, fld = draw(_NAME), draw(_NAME)
    return TokenRef(
        tokenLiteral=f"{{{obj}.{fld}}}",
        targetObject=obj,
        targetField=fld,
        fkChains=draw(st.lists(st.lists(_STEP, min_size=1, max_size=2), min_size=1, max_size=3)),
        readStrategy=draw(st.sampled_from(["caller_txn", "fresh_read"])),
        directField=draw(st.none() | _NAME),
    )


_SCALAR = st.none() | st.booleans() | st.integers() | st.text()
_JSON = st.recursive(
    _SCALAR,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
).filter(lambda v: isinstance(v, (list, dict)))  # a str argument is read as JSON text


@given(value=st.lists(token_refs(), max_size=4))
def test_j1_token_refs(value: list[TokenRef]) -> None:
    once = canonicalize_token_refs(value)
    assert canonicalize_token_refs(json.loads(once)) == once
    assert canonicalize_token_refs(once) == once
    assert canonicalize_token_refs(once.encode()) == once
    assert load_token_refs(once) == value  # nothing lost on the way through the database


@given(value=_JSON)
def test_j1_any_json(value: Any) -> None:
    once = canonicalize_token_refs(value)
    assert canonicalize_token_refs(json.loads(once)) == once
    assert json.loads(once) == value


def test_canonical_form() -> None:
    messy = '[ {"b": 1, "a": {"d": [3, 1], "c": "é"}} ]'
    assert canonicalize_token_refs(messy) == '[{"a":{"c":"é","d":[3,1]},"b":1}]'
    ref = TokenRef(
        tokenLiteral="{A.B}",
        targetObject="A",
        targetField="B",
        fkChains=[[ChainStep(fk="AId", targetObject="A", targetField="B")]],
    )
    text = canonicalize_token_refs([ref])
    assert "directField" not in text and '"readStrategy":"caller_txn"' in text
    assert " " not in text
    with pytest.raises(ValueError):
        canonicalize_token_refs([float("nan")])


def test_model_rejects_bad_shapes() -> None:
    good = {
        "tokenLiteral": "{A.B}",
        "targetObject": "A",
        "targetField": "B",
        "fkChains": [[{"fk": "AId", "targetObject": "A", "targetField": "B"}]],
    }
    load_token_refs([good])
    step = good["fkChains"][0][0]
    for bad, where in [
        ({**good, "readStrategy": "dirty"}, "0.readStrategy"),
        ({**good, "extra": 1}, "0.extra"),
        ({**good, "tokenLiteral": "A.B"}, "0.tokenLiteral"),
        ({**good, "tokenLiteral": "{A.B}\n"}, "0.tokenLiteral"),
        ({**good, "targetField": 7}, "0.targetField"),
        ({**good, "directField": "B C"}, "0.directField"),
        ({k: v for k, v in good.items() if k != "fkChains"}, "0.fkChains"),
        ({**good, "fkChains": [{"fk": "AId"}]}, "0.fkChains.0"),
        ({**good, "fkChains": [[{**step, "fk": "1bad"}]]}, "0.fkChains.0.0.fk"),
        ({**good, "fkChains": [[{**step, "via": "x"}]]}, "0.fkChains.0.0.via"),
        ({**good, "fkChains": [["AId"]]}, "0.fkChains.0.0"),
    ]:
        with pytest.raises(TokenRefError) as raised:
            load_token_refs([bad])
        assert raised.value.where == where, (bad, str(raised.value))
    for text in ["{not json", '{"a": 1}']:
        with pytest.raises(TokenRefError):
            load_token_refs(text)


def test_describe_chain() -> None:
    opp = ChainStep(fk="OpportunityId", targetObject="Opportunity", targetField="AccountId")
    acc = ChainStep(fk="AccountId", targetObject="Account", targetField="BillingCountryCode")
    owner = ChainStep(fk="OwnerId", targetObject="User", targetField="Country")
    assert describe_chain([acc]) == "AccountId → Account.BillingCountryCode"
    assert describe_chain([acc], arrow="->") == "AccountId->Account.BillingCountryCode"
    assert describe_chain([opp, acc]) == (
        "OpportunityId → Opportunity.AccountId → Account.BillingCountryCode"
    )
    assert describe_chain([opp, owner]) == (  # a broken link names the FK it follows
        "OpportunityId → Opportunity.AccountId, OwnerId → User.Country"
    )
    assert describe_chain([]) == ""
