"""Cross-record and taxonomy tokens (spec §3.5): directField, then each FK chain in order.

Reads happen outside the reservation transaction: `caller_txn` through the caller's connection
(so rows it wrote earlier are visible), `fresh_read` on the fresh-read pool (committed data only).
A batch costs one query per chain step for the whole batch, cached within the call.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from autonumber.catalog import CatalogSnapshot, Rule
from autonumber.errors import TokenResolveError
from autonumber.format import ChainStep, TokenRef

CHUNK = 1000
Record = Mapping[str, Any]


def describe_chain(chain: Sequence[ChainStep]) -> str:
    """`AccountId → Account.BillingCountryCode`."""
    return " → ".join(f"{s.fk} → {s.targetObject}.{s.targetField}" for s in chain)


def _present(value: Any) -> bool:
    return value is not None and str(value) != ""


class Resolver:
    """Resolves every cross-record token of a rule for a batch of records."""

    def __init__(self, fresh: Engine) -> None:
        self._fresh = fresh

    @contextmanager
    def _reader(self, ref: TokenRef, conn: Connection | None) -> Iterator[Connection]:
        if ref.readStrategy == "caller_txn" and conn is not None:
            yield conn
            return
        with self._fresh.connect() as own:
            yield own

    def resolve(
        self,
        snapshot: CatalogSnapshot,
        rule: Rule,
        records: Sequence[Record],
        conn: Connection | None,
        query_log: list[str] | None = None,
    ) -> list[dict[str, str]]:
        """Per record, the map `Object.Field` → value for every cross token of the rule."""
        out: list[dict[str, str]] = [{} for _ in records]
        for ref in rule.token_refs:
            with self._reader(ref, conn) as reader:
                values = _resolve_ref(snapshot, rule, ref, records, reader, query_log)
            key = f"{ref.targetObject}.{ref.targetField}"
            for i, value in enumerate(values):
                out[i][key] = value
        return out


def _resolve_ref(
    snapshot: CatalogSnapshot,
    rule: Rule,
    ref: TokenRef,
    records: Sequence[Record],
    reader: Connection,
    query_log: list[str] | None,
) -> list[str]:
    values: list[str | None] = [None] * len(records)
    causes: list[list[str]] = [[] for _ in records]
    if ref.directField:
        for i, rec in enumerate(records):
            if _present(rec.get(ref.directField)):
                values[i] = str(rec[ref.directField])
    cache: dict[tuple[str, str, str], dict[str, Any]] = {}
    for chain in ref.fkChains:
        todo = [i for i, v in enumerate(values) if v is None]
        if not todo:
            break
        found, why = _walk(snapshot, chain, [records[i] for i in todo], reader, cache, query_log)
        for j, i in enumerate(todo):
            if found[j] is not None:
                values[i] = found[j]
            else:
                causes[i].append(f"{describe_chain(chain)}: {why[j]}")
    result: list[str] = []
    for i, value in enumerate(values):
        if value is None:
            first = causes[i][0].rsplit(": ", 1)[1] if causes[i] else "fk null"
            raise TokenResolveError(
                rule.field_id,
                ref.tokenLiteral,
                first,
                causes[i] or ["no chain declared"],
                record_id=records[i].get("Id"),
            )
        result.append(value)
    return result


def _walk(
    snapshot: CatalogSnapshot,
    chain: Sequence[ChainStep],
    records: Sequence[Record],
    reader: Connection,
    cache: dict[tuple[str, str, str], dict[str, Any]],
    query_log: list[str] | None,
) -> tuple[list[str | None], list[str]]:
    """Follow one chain for many records: one query per step for all of them."""
    current: list[Any] = [rec.get(chain[0].fk) for rec in records]
    why = ["" for _ in records]
    for step in chain:
        for i, fk in enumerate(current):
            if not why[i] and not _present(fk):
                why[i] = "fk null"
        ids = {str(fk) for i, fk in enumerate(current) if not why[i]}
        rows = _fetch(snapshot, step, ids, reader, cache, query_log)
        for i, fk in enumerate(current):
            if why[i]:
                continue
            row = rows.get(str(fk))
            if row is None:
                why[i] = "row missing"
            elif not _present(row.get(step.targetField)):
                why[i] = "target null" if step is chain[-1] else "fk null"
            else:
                current[i] = row[step.targetField]
    return [None if why[i] else str(current[i]) for i in range(len(records))], why


def _fetch(
    snapshot: CatalogSnapshot,
    step: ChainStep,
    ids: set[str],
    reader: Connection,
    cache: dict[tuple[str, str, str], dict[str, Any]],
    query_log: list[str] | None,
) -> dict[str, dict[str, Any]]:
    table = snapshot.table(step.targetObject)
    missing = sorted(i for i in ids if (step.targetObject, step.targetField, i) not in cache)
    for start in range(0, len(missing), CHUNK):
        chunk = missing[start : start + CHUNK]
        stmt = sa.select(table.c.Id, table.c[step.targetField]).where(table.c.Id.in_(chunk))
        if query_log is not None:
            query_log.append(f"{step.targetObject}.{step.targetField}")
        for found in reader.execute(stmt):
            cache[(step.targetObject, step.targetField, found[0])] = {
                "Id": found[0],
                step.targetField: found[1],
            }
    out: dict[str, dict[str, Any]] = {}
    for i in ids:
        hit = cache.get((step.targetObject, step.targetField, i))
        if hit is not None:
            out[i] = hit
    return out
