"""The bounded JSON Lines reader and the record Id, without a database."""

from __future__ import annotations

import io

import pytest

from autonumber.errors import RecordError
from autonumber.jsonl import read_lines, rows


def _read(data: bytes, limit: int = 10, after: int = 0) -> list[tuple[int, str]]:
    return [(line.number, line.text) for line in read_lines(io.BytesIO(data), "f", limit, after)]


def test_lines_are_numbered_blank_ones_skipped_and_crlf_stripped() -> None:
    assert _read(b'{"a":1}\r\n\n  \n{"b":2}') == [(1, '{"a":1}'), (4, '{"b":2}')]
    assert _read(b"1\n2\n3\n", after=2) == [(3, "3")]


def test_the_bound_counts_bytes_without_the_newline() -> None:
    assert _read(b"x" * 10 + b"\n", limit=10) == [(1, "x" * 10)]
    assert _read(b"x" * 10, limit=10) == [(1, "x" * 10)]
    with pytest.raises(RecordError, match=r"^f:2: line longer than 10 bytes"):
        _read(b"ok\n" + b"x" * 11 + b"\n", limit=10)


def test_bad_lines_raise_or_go_to_the_rejected_callback() -> None:
    with pytest.raises(RecordError, match=r"^f:1: not UTF-8 text \(byte 0xff\)"):
        _read(b"\xff\n")
    refused: list[str] = []
    good = rows(
        read_lines(io.BytesIO(b'[1]\n{"a": 1}\n{oops\n'), "f"), lambda line, exc: refused.append(str(exc))
    )
    assert [row for _, row in good] == [{"a": 1}]
    assert refused[0].startswith("f:1: expected a JSON object") and refused[1].startswith("f:3: invalid JSON")
