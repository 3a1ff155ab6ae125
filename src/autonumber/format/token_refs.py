"""Token refs (docs/setup.md): the pydantic model of `auto_number_token_refs` and THE one canonicalizer."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from autonumber.api_names import API_NAME_PATTERN

_NAME = rf"^{API_NAME_PATTERN}$"
_LITERAL = rf"^\{{{API_NAME_PATTERN}(?:\.{API_NAME_PATTERN}){{1,3}}\}}$"

ReadStrategy = Literal["caller_txn", "fresh_read"]


class ChainStep(BaseModel):
    """One hop: follow `fk` on the current row to `targetObject`, then read `targetField`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fk: str = Field(pattern=_NAME)
    targetObject: str = Field(pattern=_NAME)
    targetField: str = Field(pattern=_NAME)


class TokenRef(BaseModel):
    """How one cross-record token is resolved: ordered fkChains, read strategy, direct fast path."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tokenLiteral: str = Field(pattern=_LITERAL)
    targetObject: str = Field(pattern=_NAME)
    targetField: str = Field(pattern=_NAME)
    fkChains: list[list[ChainStep]]
    readStrategy: ReadStrategy = "caller_txn"
    directField: str | None = Field(default=None, pattern=_NAME)

    @property
    def key(self) -> str:
        """`Object.Field`, the key render() takes the resolved value under."""
        return f"{self.targetObject}.{self.targetField}"


def describe_chain(chain: Sequence[ChainStep], arrow: str = " → ") -> str:
    """The walk of one chain: `OpportunityId → Opportunity.AccountId → Account.BillingCountryCode`.

    A step that does not follow the field the step before it read names its own FK after a comma;
    the `format check` report passes `arrow="->"`.
    """
    out, read = "", None
    for step in chain:
        if read is None:
            out = step.fk
        elif step.fk != read:
            out += f", {step.fk}"
        out += f"{arrow}{step.targetObject}.{step.targetField}"
        read = step.targetField
    return out


_TOKEN_REFS = TypeAdapter(list[TokenRef])


def _plain(value: Any) -> Any:
    """Turn TokenRef models (anywhere in the structure) into their stored JSON shape."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def canonicalize_token_refs(value: Any) -> str:
    """The canonical text of token refs: keys sorted at every level, array order kept, no spaces.

    Accepts TokenRef lists, plain dicts/lists, or JSON text (str or bytes). TokenRef models are
    dumped without `directField` when it is unset; plain input is kept exactly as given.
    """
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8")
    data = json.loads(value) if isinstance(value, str) else _plain(value)
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def load_token_refs(value: str | bytes | Sequence[Any]) -> list[TokenRef]:
    """Decode stored token refs (JSON text or decoded data) into validated models."""
    if isinstance(value, (str, bytes)):
        return _TOKEN_REFS.validate_json(value)
    return _TOKEN_REFS.validate_python(list(value))
