"""The bounded JSON Lines reader and the record Id, without a database."""

from __future__ import annotations

import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autonumber.bulk import jsonl
from autonumber.bulk.jsonl import read_lines, rows
from autonumber.errors import RecordError


def _read(data: bytes, limit: int = 10, after: int = 0) -> list[tuple[int, str]]:
    return [(line.number, line.text) for line in read_lines(io.BytesIO(data), "f", limit, after)]


def test_lines_are_numbered_blank_ones_skipped_and_crlf_stripped() -> None:
    assert _read(b'{"a":1}\r\n\n  \n{"b":2}') == [(1, '{"a":1}'), (4, '{"b":2}')]
    assert _read(b"1\n2\n3\n", after=2) == [(3, "3")]
    (line,) = read_lines(io.BytesIO(b"x\n"), "f")
    assert type(line) is jsonl.Line and line == ("f", 1, "x") and str(line) == "f:1"


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


def test_a_block_with_a_bad_line_hands_on_the_good_lines_before_it_first() -> None:
    """The rows before a bad line are checked before that line fails: the first bad line of the
    input is named, whether the first problem is its JSON or a field value."""
    data = b'{"a": 1}\n{"b": 2}\n{oops\n{"c": 3}\n'
    blocks = rows(read_lines(io.BytesIO(data), "f")).blocks()
    lines, objects = next(blocks)
    assert [line.number for line in lines] == [1, 2] and objects == [{"a": 1}, {"b": 2}]
    with pytest.raises(RecordError, match=r"^f:3: invalid JSON"):
        next(blocks)
    refused: list[int] = []
    kept = list(rows(read_lines(io.BytesIO(data), "f"), lambda line, _: refused.append(line.number)).blocks())
    assert [[line.number for line in lines] for lines, _ in kept] == [[1, 2], [4]] and refused == [3]


def test_a_block_of_objects_is_one_block_of_rows() -> None:
    data = b"".join(b'{"n": %d}\n' % i for i in range(1, 101))
    (block,) = list(rows(read_lines(io.BytesIO(data), "f")).blocks())
    assert [line.number for line in block[0]] == list(range(1, 101))
    assert block[1] == [{"n": i} for i in range(1, 101)]


PIECES = st.sampled_from(
    [b"a", b"\xc3\xa9", b"\xe2\x9c\x93", b" ", b"\t", b"\r", b"\n", b"\n", b"\xff", b"{}"]
)


def _reference(data: bytes, limit: int, after: int) -> list[tuple[int, str]] | str:
    """Line by line, the obvious way: what the block reader must give (or the error it raises)."""
    out: list[tuple[int, str]] = []
    for number, raw in enumerate(data.split(b"\n"), 1):
        if len(raw) > limit:
            return f"f:{number}: line longer than {limit} bytes"
        if number <= after or not raw.strip():
            continue
        try:
            out.append((number, raw.decode("utf-8").rstrip("\r")))
        except UnicodeDecodeError:
            return f"f:{number}: not UTF-8"
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.lists(PIECES, max_size=60).map(b"".join),
    block=st.integers(1, 9),
    limit=st.integers(1, 12),
    after=st.integers(0, 3),
)
def test_the_block_reader_gives_what_reading_line_by_line_gives(
    data: bytes, block: int, limit: int, after: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Blocks split anywhere (inside a character too), lines too long or not UTF-8 anywhere."""
    monkeypatch.setattr(jsonl, "BLOCK_BYTES", block)
    expected = _reference(data, limit, after)
    try:
        got: list[tuple[int, str]] | str = _read(data, limit, after)
    except RecordError as exc:
        got = str(exc)
    if isinstance(expected, str):
        assert isinstance(got, str) and got.startswith(expected), (got, expected)
    else:
        assert got == expected
