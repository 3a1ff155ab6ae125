"""Cross-record and taxonomy tokens (docs/cross-record.md): directField, then each FK chain in order.

Reads happen outside the reservation transaction: `caller_txn` through the caller's connection
(so rows it wrote earlier are visible), `fresh_read` on the fresh-read pool (committed data only).
A batch costs one query per chain step for the whole batch (at most CHUNK ids per query), and a
row read once is cached for the rest of the call, separately per read strategy (the two may see
different data).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from autonumber.catalog.cache import CatalogSnapshot, Rule
from autonumber.db.objects import key_column
from autonumber.errors import TokenResolveError
from autonumber.format import ChainStep, TokenRef, describe_chain

CHUNK = 1000
"""Ids per `IN (…)` query: well inside every backend's bound-parameter limit."""

Record = Mapping[str, Any]
Cache = dict[tuple[str, str, str], Any]
"""(object, field, Id) → the field's value, for rows read in this call."""
_ABSENT = object()


NO_TOKENS: Mapping[str, str] = MappingProxyType({})
"""The token values of a record whose rule has no cross-record token."""


def _present(value: Any) -> bool:
    return value is not None and str(value) != ""


@dataclass
class _Failure:
    """Why one chain did not yield a value for one record."""

    cause: str
    detail: str
    entered: bool  # the chain's first FK was set, so the walk really happened


class Resolver:
    """Resolves every cross-record token of a rule for a batch of records."""

    def __init__(self, fresh: Engine) -> None:
        self._fresh = fresh

    def resolve(
        self,
        snapshot: CatalogSnapshot,
        rule: Rule,
        records: Sequence[Record],
        conn: Connection | None,
    ) -> Sequence[Mapping[str, str]]:
        """Per record, the map `Object.Field` → value for every cross token of the rule.

        Raises TokenResolveError (fail closed) for the first record a token cannot resolve.
        A rule without cross tokens gets one empty, read-only map for every record.
        """
        if not rule.token_refs:
            return [NO_TOKENS] * len(records)
        out: list[dict[str, str]] = [{} for _ in records]
        caches: dict[str, Cache] = {}
        with ExitStack() as stack:
            fresh: list[Connection] = []  # opened on first need, shared by every fresh_read token

            def reader(ref: TokenRef) -> tuple[str, Connection]:
                if ref.readStrategy == "caller_txn" and conn is not None:
                    return "caller_txn", conn
                if not fresh:
                    fresh.append(stack.enter_context(self._fresh.connect()))
                return "fresh_read", fresh[0]

            defaults = {r.key: r.default for r in rule.format.cross_refs}
            for ref in rule.token_refs:
                strategy, connection = reader(ref)
                cache = caches.setdefault(strategy, {})
                values = _resolve_ref(snapshot, rule, ref, records, connection, cache, defaults.get(ref.key))
                for i, value in enumerate(values):
                    out[i][ref.key] = value
        return out


def _resolve_ref(
    snapshot: CatalogSnapshot,
    rule: Rule,
    ref: TokenRef,
    records: Sequence[Record],
    reader: Connection,
    cache: Cache,
    default: str | None = None,
) -> list[str]:
    """One token for every record: directField fast path, then each chain for those still open;
    the token's default (`{Object.Field|XX}`) when none yields a value, else TokenResolveError."""
    values: list[str | None] = [None] * len(records)
    tried: list[list[str]] = [[] for _ in records]
    failures: list[list[_Failure]] = [[] for _ in records]
    if ref.directField:
        for i, rec in enumerate(records):
            if _present(rec.get(ref.directField)):
                values[i] = str(rec[ref.directField])
            else:
                tried[i].append(f"directField {ref.directField}: empty")
    for chain in ref.fkChains:
        todo = [i for i, v in enumerate(values) if v is None]
        if not todo:
            break
        found = _walk(snapshot, rule.object_name, chain, [records[i] for i in todo], reader, cache)
        for j, i in enumerate(todo):
            outcome = found[j]
            if isinstance(outcome, _Failure):
                failures[i].append(outcome)
                tried[i].append(f"{describe_chain(chain)}: {outcome.cause} ({outcome.detail})")
            else:
                values[i] = outcome
    result: list[str] = []
    for i, value in enumerate(values):
        if value is None and default is not None:
            value = default  # fk null, row missing or an empty value: docs/cross-record.md
        if value is None:
            raise TokenResolveError(
                rule.field_id,
                ref.tokenLiteral,
                _cause(failures[i]),
                tried[i] or ["no chain declared"],
                record_id=records[i].get("Id"),
            )
        result.append(value)
    return result


def _cause(failures: Sequence[_Failure]) -> str:
    """The cause to report: that of the first chain actually walked, else "fk null"."""
    for failure in failures:
        if failure.entered:
            return failure.cause
    return "fk null"


def _walk(
    snapshot: CatalogSnapshot,
    source: str,
    chain: Sequence[ChainStep],
    records: Sequence[Record],
    reader: Connection,
    cache: Cache,
) -> list[str | _Failure]:
    """Follow one chain for many records: one query per step for all of them."""
    current: list[Any] = [rec.get(chain[0].fk) for rec in records]
    failed: list[_Failure | None] = [None] * len(records)
    for depth, step in enumerate(chain):
        last = depth == len(chain) - 1
        for i, fk in enumerate(current):
            if failed[i] is None and not _present(fk):
                where = f"{source if depth == 0 else chain[depth - 1].targetObject}.{step.fk}"
                failed[i] = _Failure("fk null", f"{where} is empty", depth > 0)
        wanted = {str(fk) for i, fk in enumerate(current) if failed[i] is None}
        _fetch(snapshot, step, wanted, reader, cache)
        for i, fk in enumerate(current):
            if failed[i] is not None:
                continue
            value = cache.get((step.targetObject, step.targetField, str(fk)), _ABSENT)
            if value is _ABSENT:
                failed[i] = _Failure("row missing", f"no {step.targetObject} {str(fk)!r}", True)
            elif not _present(value) and last:
                failed[i] = _Failure(
                    "target null", f"{step.targetObject} {str(fk)!r} has no {step.targetField}", True
                )
            elif not _present(value):
                failed[i] = _Failure(
                    "fk null", f"{step.targetObject} {str(fk)!r} has no {step.targetField}", True
                )
            else:
                current[i] = value
    return [f if f is not None else str(current[i]) for i, f in enumerate(failed)]


def _fetch(
    snapshot: CatalogSnapshot,
    step: ChainStep,
    ids: set[str],
    reader: Connection,
    cache: Cache,
) -> None:
    """Load `step.targetField` of the rows with these Ids into the cache; a miss is cached too."""
    table = snapshot.table(step.targetObject)
    missing = sorted(i for i in ids if (step.targetObject, step.targetField, i) not in cache)
    for start in range(0, len(missing), CHUNK):
        chunk = missing[start : start + CHUNK]
        pk = key_column(table)
        stmt = sa.select(pk, table.c[step.targetField]).where(pk.in_(_typed(pk, chunk)))
        for key in chunk:
            cache[(step.targetObject, step.targetField, key)] = _ABSENT
        for found_id, value in reader.execute(stmt):
            cache[(step.targetObject, step.targetField, str(found_id))] = value


def _typed(key: sa.Column[Any], ids: Sequence[str]) -> list[Any]:
    """Ids as the key column's type: an integer key (an adopted table) compares with integers."""
    if not isinstance(key.type, sa.Integer):
        return list(ids)
    return [int(i) for i in ids if i.lstrip("-").isdigit()]
