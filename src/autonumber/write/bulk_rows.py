"""The per-row work of a streamed insert, done once per batch where it can be: a row check that
passes plain text through at C speed (anything else goes to the full check, which decides), and
the batch's record Ids made in one go, in index order (docs/import.md, "Speed")."""

from __future__ import annotations

import os
import struct
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import islice
from operator import itemgetter
from typing import Any, Protocol, runtime_checkable

import sqlalchemy as sa

from ..errors import RecordError

FullCheck = Callable[[Mapping[str, Any], Any], dict[str, Any]]
"""The records layer's own check of one row (it raises the RecordError naming the label)."""
Rejected = Callable[[Any, RecordError], None]
"""Hears a row refused by the checks (its label and why) when the caller imports the rest."""

COUNTER_BITS = 30
"""Bits of an Id's in-batch counter (the top of rand_b): a batch holds fewer than 2**29 rows."""


@runtime_checkable
class PairBlocks(Protocol):
    """A source of `(label, values)` pairs that hands them over a block at a time (jsonl.RowBlocks),
    each block's values new dicts nobody else holds: they are kept as the records, not copied."""

    def blocks(self) -> Iterator[tuple[list[Any], list[Any]]]: ...


class PairChunks:
    """`(label, values)` pairs taken as a list of labels and a list of values: a block source's
    blocks (the rest of one kept for the next take), any other source's pairs up to the count
    asked for (so a slow source is never waited on for more rows than a batch needs)."""

    def __init__(self, rows: Iterable[tuple[Any, Mapping[str, Any]]] | PairBlocks) -> None:
        self._blocks: Iterator[tuple[list[Any], list[Any]]] | None = None
        self._pairs: Iterator[tuple[Any, Mapping[str, Any]]] | None = None
        if isinstance(rows, PairBlocks):
            self._blocks = rows.blocks()
        else:
            self._pairs = iter(rows)
        self._rest: tuple[list[Any], list[Any]] = ([], [])

    @property
    def owned(self) -> bool:
        """Whether the values are a block source's new dicts, kept as the records (no copy)."""
        return self._blocks is not None

    def take(self, most: int) -> tuple[list[Any], list[Any]]:
        """Up to `most` pairs (at least one unless the source has ended)."""
        if self._pairs is not None:
            taken = list(islice(self._pairs, most))
            return [label for label, _ in taken], [data for _, data in taken]
        assert self._blocks is not None
        labels, datas = self._rest
        while not labels:
            block = next(self._blocks, None)
            if block is None:
                return [], []
            labels, datas = block
        if len(labels) > most:
            self._rest = (labels[most:], datas[most:])
            return labels[:most], datas[:most]
        self._rest = ([], [])
        return labels, datas


class RowCheck:
    """Checks the rows of one object against one catalog snapshot.

    Rows whose every field is an ordinary text column holding ASCII text without NUL that fits
    (an import's usual rows) are taken as they are, checked a column at a time for a whole chunk
    of rows; a chunk with any other row goes row by row, and such a row to `full`, the check
    every insert uses, which accepts it (converting its values) or raises the error naming the
    label."""

    def __init__(self, table: sa.Table, writable: frozenset[str], full: FullCheck) -> None:
        self.full = full
        self.text_limit: dict[str, int] = {}
        for column in table.c:
            if column.name in writable and isinstance(column.type, sa.String):
                self.text_limit[column.name] = column.type.length or sys.maxsize
        self.text_keys = frozenset(self.text_limit)

    def fill(
        self,
        chunks: PairChunks,
        labels: list[Any],
        records: list[dict[str, Any]],
        size: int,
        rejected: Rejected | None,
    ) -> None:
        """Take pairs until `records` holds `size` or the pairs end, appending each accepted row's
        record (without its Id, which the batch gives) and label. A refused row raises, or goes
        to `rejected` and is left out."""
        while len(records) < size:
            got, datas = chunks.take(size - len(records))
            if not got:
                return
            if self._all_plain(datas):
                labels += got
                records += datas if chunks.owned else map(dict, datas)
            else:
                self._one_by_one(got, datas, labels, records, rejected)

    def _all_plain(self, datas: list[Any]) -> bool:
        """Whether every row is a dict of the same plain text fields, checked a column at a time
        at C speed (one pass per check instead of a Python loop per row)."""
        if set(map(type, datas)) != {dict}:
            return False
        fields = datas[0].keys()
        if not self.text_keys.issuperset(fields) or set(map(len, datas)) != {len(fields)}:
            return False
        for name in fields:
            try:
                column = list(map(itemgetter(name), datas))
            except KeyError:  # rows with as many fields, but other ones
                return False
            if set(map(type, column)) != {str} or max(map(len, column)) > self.text_limit[name]:
                return False
            joined = "".join(column)
            if not joined.isascii() or "\x00" in joined:
                return False
        return True

    def _one_by_one(
        self,
        got: list[Any],
        datas: list[Any],
        labels: list[Any],
        records: list[dict[str, Any]],
        rejected: Rejected | None,
    ) -> None:
        limits, plain_keys, full = self.text_limit, self.text_keys.issuperset, self.full
        for label, data in zip(got, datas, strict=True):
            record = None
            if type(data) is dict and plain_keys(data):
                for key, value in data.items():
                    if type(value) is not str or len(value) > limits[key]:
                        break
                    if not value.isascii() or "\x00" in value:
                        break
                else:
                    record = dict(data)
            if record is None:
                try:
                    record = full(data, label)
                except RecordError as exc:
                    if rejected is None:
                        raise
                    rejected(label, exc)
                    continue
            labels.append(label)
            records.append(record)


def ordered_ids(n: int) -> list[str]:
    """`n` fresh record Ids in increasing order: UUID version 7 (RFC 9562) as 32 hex digits.

    The Unix time in ms leads, so an import appends to the right edge of the Id index instead of
    touching a random page of it per row (a random uuid4 Id made a 1M-row import several times
    slower on every backend). After it: 12 random bits per batch, a counter from a random start
    (the rows' order within the batch), and 32 random bits per row. Ids are unique, not secret.

    The batch's 16-byte values are laid out in one buffer, column by column, and turned into hex
    Ids in two C calls (hex with a separator every 16 bytes, then split): a quarter of the time of
    formatting each row's 128-bit integer."""
    if n >= 1 << (COUNTER_BITS - 1):
        raise ValueError(f"a batch of {n} rows is too large for one Id counter")
    ms = time.time_ns() // 1_000_000
    seed = int.from_bytes(os.urandom(6))
    rand_a, start = seed >> 36, (seed >> 7) & ((1 << (COUNTER_BITS - 1)) - 1)
    head = ((ms << 16) | (0x7 << 12) | rand_a).to_bytes(8, "big")
    first = (0b10 << COUNTER_BITS) | start
    counters = struct.pack(f">{n}I", *range(first, first + n))
    tails = os.urandom(4 * n)
    values = bytearray(16 * n)
    for k in range(8):
        values[k::16] = head[k : k + 1] * n
    for k in range(4):
        values[8 + k :: 16] = counters[k::4]
        values[12 + k :: 16] = tails[k::4]
    return values.hex(" ", 16).split(" ") if n else []
