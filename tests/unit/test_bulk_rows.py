"""The streamed insert's per-row helpers: the fast row check defers to the full one, batch Ids
are ordered UUIDv7s, bound tuples match what `execute` binds."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import sqlite

from autonumber.db.bulk import bound_columns, bound_tuples, by_fields, flat_rows, text_datetimes
from autonumber.errors import RecordError
from autonumber.write.bulk_rows import PairChunks, RowCheck, ordered_ids

TABLE = sa.Table(
    "Case",
    sa.MetaData(),
    sa.Column("Id", sa.String(64), primary_key=True),
    sa.Column("CreatedDate", sa.DateTime()),
    sa.Column("Subject", sa.String(5)),
    sa.Column("Count", sa.Integer()),
)


def _check() -> tuple[Callable[[Any, Any], dict[str, Any]], list[Any]]:
    """A one-row check: `RowCheck.fill` of that row alone."""
    calls: list[Any] = []

    def full(data: Mapping[str, Any], label: Any) -> dict[str, Any]:
        calls.append(label)
        return {"full": True}

    row_check = RowCheck(TABLE, frozenset({"Subject", "Count"}), full)

    def one(data: Any, label: Any) -> dict[str, Any]:
        records: list[dict[str, Any]] = []
        row_check.fill(PairChunks([(label, data)]), [], records, 1, None)
        return records[0]

    return one, calls


def test_plain_text_passes_as_a_copy_and_anything_else_goes_to_the_full_check() -> None:
    check, calls = _check()
    row = {"Subject": "abc"}
    out = check(row, "f:1")
    assert out == row and out is not row and calls == []
    for label, data in [
        ("long", {"Subject": "abcdef"}),  # longer than the column
        ("nul", {"Subject": "a\x00"}),
        ("accent", {"Subject": "é"}),
        ("number", {"Count": 3}),  # not a text column
        ("unknown", {"Nope": "x"}),
        ("system", {"Id": "x"}),
        ("list", [("Subject", "a")]),
    ]:
        assert check(data, label) == {"full": True}  # type: ignore[arg-type]
    assert calls == ["long", "nul", "accent", "number", "unknown", "system", "list"]


def test_fill_takes_rows_until_the_batch_is_full_and_leaves_refused_ones_out() -> None:
    def full(data: Mapping[str, Any], label: Any) -> dict[str, Any]:
        raise RecordError(f"{label}: refused")

    check = RowCheck(TABLE, frozenset({"Subject"}), full)
    pairs = iter([("1", {"Subject": "a"}), ("2", {"Subject": "toolong"}), ("3", {}), ("4", {"Subject": "b"})])
    labels: list[Any] = []
    records: list[dict[str, Any]] = []
    refused: list[str] = []
    check.fill(PairChunks(pairs), labels, records, 2, lambda label, exc: refused.append(str(exc)))
    assert (labels, records, refused) == (["1", "3"], [{"Subject": "a"}, {}], ["2: refused"])
    assert next(pairs) == ("4", {"Subject": "b"}), "the rest stays for the next batch"
    with pytest.raises(RecordError, match=r"^2: refused$"):
        check.fill(PairChunks([("1", {"Subject": "a"}), ("2", {"Subject": "é"})]), [], [], 5, None)


class _Blocks:
    """A block source (as jsonl.RowBlocks), recording how many blocks were taken."""

    def __init__(self, blocks: list[list[tuple[Any, Any]]]) -> None:
        self.given = 0
        self._blocks = blocks

    def blocks(self) -> Iterator[tuple[list[Any], list[Any]]]:
        for block in self._blocks:
            self.given += 1
            yield [label for label, _ in block], [data for _, data in block]


def test_a_block_source_fills_batches_across_its_blocks_and_keeps_the_rest_of_one() -> None:
    full_calls: list[Any] = []

    def full(data: Mapping[str, Any], label: Any) -> dict[str, Any]:
        full_calls.append(label)
        return {"Subject": "full"}

    check = RowCheck(TABLE, frozenset({"Subject", "Count"}), full)
    rows = [(i, {"Subject": f"s{i}"}) for i in range(7)]
    rows[5] = (5, {"Count": 5})  # not text: this chunk goes row by row, this row to the full check
    chunks_first = rows[0][1]
    source = _Blocks([rows[:3], [], rows[3:7]])
    chunks = PairChunks(source)
    batches = []
    for _ in range(3):
        labels: list[Any] = []
        records: list[dict[str, Any]] = []
        check.fill(chunks, labels, records, 4, None)
        batches.append((labels, records))
    assert [labels for labels, _ in batches] == [[0, 1, 2, 3], [4, 5, 6], []]
    subjects = [r["Subject"] for r in batches[0][1] + batches[1][1]]
    assert subjects == ["s0", "s1", "s2", "s3", "s4", "full", "s6"]
    assert full_calls == [5] and source.given == 3
    assert batches[0][1][0] is chunks_first, "a block source's plain dicts are kept, not copied"


@pytest.mark.parametrize(
    ("rows", "plain"),
    [
        ([{"Subject": "a"}, {"Subject": "bcd"}], True),
        ([{"Subject": "a", "Count": "1"}, {"Count": "2", "Subject": "b"}], False),  # Count is not text
        ([{"Subject": "a"}, {"Subject": "abcdef"}], False),  # the second is longer than the column
        ([{"Subject": "a"}, {"Subject": "\x00"}], False),
        ([{"Subject": "a"}, {"Subject": "é"}], False),
        ([{"Subject": "a"}, {"Subject": 1}], False),
        ([{"Subject": "a"}, {"Nope": "b"}], False),
        ([{"Subject": "a"}, {}], False),
        ([{}, {}], True),
        ([{"Subject": "a"}, ["Subject"]], False),
    ],
)
def test_a_chunk_is_taken_a_column_at_a_time_only_when_every_row_is_plain_text(
    rows: list[Any], plain: bool
) -> None:
    calls: list[Any] = []

    def full(data: Any, label: Any) -> dict[str, Any]:
        calls.append(label)
        return {"full": label}

    check = RowCheck(TABLE, frozenset({"Subject"}), full)
    assert check._all_plain(rows) is plain
    records: list[dict[str, Any]] = []
    check.fill(PairChunks(list(enumerate(rows))), [], records, 10, None)
    assert records == [{"full": i} if i in calls else row for i, row in enumerate(rows)]
    assert not any(record is row for record, row in zip(records, rows, strict=True))
    assert not plain or calls == []


def test_ordered_ids_are_increasing_unique_uuid7_across_batches() -> None:
    batches = [ordered_ids(n) for n in (1, 5_000, 0, 3)]
    assert [len(b) for b in batches] == [1, 5_000, 0, 3]
    every = [i for batch in batches for i in batch]
    assert len(set(every)) == len(every)
    for batch in batches:
        assert batch == sorted(batch)
    for record_id in every:
        parsed = uuid.UUID(hex=record_id)
        assert len(record_id) == 32 and parsed.version == 7 and parsed.variant == uuid.RFC_4122
    with pytest.raises(ValueError, match="too large"):
        ordered_ids(1 << 29)


def test_an_ids_fields_are_the_time_one_batch_value_a_counter_and_a_random_tail() -> None:
    before = time.time_ns() // 1_000_000
    values = [int(i, 16) for i in ordered_ids(3_000)]
    after = time.time_ns() // 1_000_000
    assert {v >> 80 for v in values} <= set(range(before, after + 1))  # one time per batch
    assert len({(v >> 64) & 0xFFF for v in values}) == 1  # rand_a, one per batch
    counters = [(v >> 32) & ((1 << 30) - 1) for v in values]
    assert counters == list(range(counters[0], counters[0] + 3_000))
    assert len({v & 0xFFFFFFFF for v in values}) > 2_900  # 32 random bits per row


def test_bound_tuples_apply_the_dialect_processor_once_per_repeated_value() -> None:
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    rows = [{"Id": "a", "CreatedDate": at, "Subject": "x"}, {"Id": "b", "CreatedDate": at, "Subject": None}]
    ((fields, group),) = by_fields(rows).items()
    got = bound_tuples(sqlite.dialect(), TABLE, fields, group)
    assert fields == ("CreatedDate", "Id", "Subject")
    assert got == [("2026-01-02 03:04:05.000000", "a", "x"), ("2026-01-02 03:04:05.000000", "b", None)]
    assert flat_rows(bound_columns(sqlite.dialect(), TABLE, fields, group)) == [v for row in got for v in row]
    assert flat_rows([]) == []


def test_by_fields_groups_rows_by_the_fields_they_set() -> None:
    rows = [{"a": 1}, {"a": 2, "b": 1}, {"b": 3, "a": 4}, {"a": 5}]
    assert by_fields(rows) == {("a",): [rows[0], rows[3]], ("a", "b"): [rows[1], rows[2]]}


def test_text_datetimes_are_psycopgs_text_made_once_per_value() -> None:
    stamp = datetime(2026, 12, 3, 17, 5, 1, 250, tzinfo=UTC)
    columns = [["a", "b", "c"], [stamp, stamp, None], ["x", None, "z"], [1, 2, 3]]
    out = text_datetimes(TABLE, ["Id", "CreatedDate", "Subject", "Count"], columns)
    assert out == [("a", str(stamp), "x", 1), ("b", str(stamp), None, 2), ("c", None, "z", 3)]
    assert out[0][1] is out[1][1]
    assert text_datetimes(TABLE, ["Id", "Subject"], [["a"], ["x"]]) == [("a", "x")]
    assert text_datetimes(TABLE, ["Id", "Subject"], [[], []]) == []
