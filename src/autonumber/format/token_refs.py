"""Token refs (docs/setup.md): the shape of `auto_number_token_refs`, its validation and THE one
canonicalizer.

Plain frozen dataclasses checked by hand, not pydantic models: every command that loads the
catalog reads them, and pydantic cost such a command about 7 MB and 0.1 s of imports."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Literal, cast

from autonumber.api_names import API_NAME_PATTERN

_NAME = re.compile(API_NAME_PATTERN)
_LITERAL = re.compile(rf"\{{{API_NAME_PATTERN}(?:\.{API_NAME_PATTERN}){{1,3}}\}}")

ReadStrategy = Literal["caller_txn", "fresh_read"]
READ_STRATEGIES: tuple[ReadStrategy, ...] = ("caller_txn", "fresh_read")


class TokenRefError(ValueError):
    """Token refs of the wrong shape: `where` is the path to the bad part (`0.fkChains.0.0.fk`)."""

    def __init__(self, where: Sequence[str | int], message: str) -> None:
        self.where = ".".join(str(p) for p in where)
        self.message = message
        super().__init__(f"token refs invalid at {self.where or 'the top'}: {message}")


@dataclass(frozen=True)
class ChainStep:
    """One hop: follow `fk` on the current row to `targetObject`, then read `targetField`."""

    fk: str
    targetObject: str
    targetField: str

    def __post_init__(self) -> None:
        for f in fields(self):
            _name(getattr(self, f.name), (f.name,))

    def stored(self) -> dict[str, str]:
        """The stored JSON shape."""
        return {"fk": self.fk, "targetObject": self.targetObject, "targetField": self.targetField}


@dataclass(frozen=True)
class TokenRef:
    """How one cross-record token is resolved: ordered fkChains, read strategy, direct fast path."""

    tokenLiteral: str
    targetObject: str
    targetField: str
    fkChains: list[list[ChainStep]]
    readStrategy: ReadStrategy = "caller_txn"
    directField: str | None = None

    def __post_init__(self) -> None:
        _text(self.tokenLiteral, _LITERAL, ("tokenLiteral",))
        _name(self.targetObject, ("targetObject",))
        _name(self.targetField, ("targetField",))
        chains = _list(self.fkChains, ("fkChains",))
        for i, chain in enumerate(chains):
            for j, step in enumerate(_list(chain, ("fkChains", i))):
                if not isinstance(step, ChainStep):
                    raise TokenRefError(("fkChains", i, j), "should be a chain step")
        if self.readStrategy not in READ_STRATEGIES:
            raise TokenRefError(("readStrategy",), "should be 'caller_txn' or 'fresh_read'")
        if self.directField is not None:
            _name(self.directField, ("directField",))

    @property
    def key(self) -> str:
        """`Object.Field`, the key render() takes the resolved value under."""
        return f"{self.targetObject}.{self.targetField}"

    def stored(self) -> dict[str, Any]:
        """The stored JSON shape: every field, `directField` only when set."""
        out: dict[str, Any] = {
            "tokenLiteral": self.tokenLiteral,
            "targetObject": self.targetObject,
            "targetField": self.targetField,
            "fkChains": [[step.stored() for step in chain] for chain in self.fkChains],
            "readStrategy": self.readStrategy,
        }
        if self.directField is not None:
            out["directField"] = self.directField
        return out

    @classmethod
    def from_data(cls, data: Any, where: tuple[str | int, ...] = ()) -> TokenRef:
        """A token ref from decoded JSON (or a mapping): TokenRefError naming the bad part."""
        given = _fields(
            data,
            where,
            required=("tokenLiteral", "targetObject", "targetField", "fkChains"),
            optional=("readStrategy", "directField"),
        )
        chains = [
            [
                _step(step, (*where, "fkChains", i, j))
                for j, step in enumerate(_list(chain, (*where, "fkChains", i)))
            ]
            for i, chain in enumerate(_list(given["fkChains"], (*where, "fkChains")))
        ]
        try:
            return cls(**{**given, "fkChains": chains})
        except TokenRefError as exc:
            raise TokenRefError((*where, exc.where), exc.message) from None


def _step(data: Any, where: tuple[str | int, ...]) -> ChainStep:
    if isinstance(data, ChainStep):
        return data
    given = _fields(data, where, required=("fk", "targetObject", "targetField"), optional=())
    try:
        return ChainStep(**given)
    except TokenRefError as exc:
        raise TokenRefError((*where, exc.where), exc.message) from None


def _fields(
    data: Any, where: tuple[str | int, ...], *, required: tuple[str, ...], optional: tuple[str, ...]
) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        raise TokenRefError(where, "should be an object")
    for key in data:
        if key not in required and key not in optional:
            raise TokenRefError((*where, str(key)), "is not a known key")
    for key in required:
        if key not in data:
            raise TokenRefError((*where, key), "is required")
    return {str(k): v for k, v in data.items()}


def _list(value: Any, where: tuple[str | int, ...]) -> list[Any]:
    if not isinstance(value, (list, tuple)):
        raise TokenRefError(where, "should be a list")
    return list(value)


def _text(value: Any, pattern: re.Pattern[str], where: tuple[str | int, ...]) -> str:
    if not isinstance(value, str):
        raise TokenRefError(where, "should be a string")
    if pattern.fullmatch(value) is None:
        raise TokenRefError(where, f"{value!r} does not match {pattern.pattern}")
    return value


def _name(value: Any, where: tuple[str | int, ...]) -> str:
    return _text(value, _NAME, where)


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


def _plain(value: Any) -> Any:
    """Turn TokenRefs (anywhere in the structure) into their stored JSON shape."""
    if isinstance(value, (TokenRef, ChainStep)):
        return value.stored()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def canonicalize_token_refs(value: Any) -> str:
    """The canonical text of token refs: keys sorted at every level, array order kept, no spaces.

    Accepts TokenRef lists, plain dicts/lists, or JSON text (str or bytes). TokenRefs are
    dumped without `directField` when it is unset; plain input is kept exactly as given.
    """
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8")
    data = json.loads(value) if isinstance(value, str) else _plain(value)
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def load_token_refs(value: str | bytes | Sequence[Any]) -> list[TokenRef]:
    """Decode stored token refs (JSON text or decoded data) into validated TokenRefs."""
    if isinstance(value, (str, bytes)):
        try:
            value = cast(Sequence[Any], json.loads(value))
        except ValueError as exc:
            raise TokenRefError((), f"not JSON ({exc})") from None
    return [TokenRef.from_data(item, (i,)) for i, item in enumerate(_list(value, ()))]
