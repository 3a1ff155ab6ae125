"""JSON Lines read as a stream with a bound on each line, so no input can make memory grow: a
file, stdin or an HTTP body holding one JSON object per line (NDJSON).

Every problem is a RecordError naming `source:line`; an over-long line is always fatal (the reader
stops at the bound, it never buffers the rest), a line that is not a JSON object is fatal unless
the caller takes rejected lines (`--errors`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from itertools import chain, repeat
from operator import itemgetter
from typing import Any, BinaryIO, NamedTuple

import orjson

from ..errors import RecordError

MAX_LINE_BYTES = 1 << 20
"""The longest line read by default (1 MiB): far above any record, far below a memory problem."""
BLOCK_BYTES = 1 << 16
"""Bytes read at a time."""


class Line(NamedTuple):
    """Where a row came from; `str()` is the `source:line` every error names (a tuple: an import
    makes one per row, and a tuple is the cheapest object to make)."""

    source: str
    number: int
    text: str

    def __str__(self) -> str:
        return f"{self.source}:{self.number}"


Row = tuple[Line, dict[str, Any]]
Refused = Callable[[Line, RecordError], None]
"""Hears a line that is not a JSON object, with why, when the caller imports the rest."""


class LineBlocks:
    """The lines of a stream, taken one by one (iterate) or a list per block read (`blocks`): an
    import takes them by block, with no Python call per line between reading and checking."""

    def __init__(self, blocks: Iterator[list[Line]]) -> None:
        self._blocks = blocks

    def __iter__(self) -> Iterator[Line]:
        return chain.from_iterable(self._blocks)

    def blocks(self) -> Iterator[list[Line]]:
        """The lines a list at a time, never an empty one."""
        return self._blocks


def read_lines(stream: BinaryIO, source: str, max_bytes: int = MAX_LINE_BYTES, after: int = 0) -> LineBlocks:
    """The non-blank lines of `stream` past line `after`, each decoded as UTF-8 text.

    Read in blocks; the whole lines of a block are decoded and split at C speed (a block that is
    not UTF-8, or that could hold an over-long line, is taken line by line to name the line). A
    line not ended within `max_bytes` fails as soon as the bytes read so far show it, so memory
    holds at most a block and one bounded line."""
    return LineBlocks(_line_blocks(stream, source, max_bytes, after))


def _line_blocks(stream: BinaryIO, source: str, max_bytes: int, after: int) -> Iterator[list[Line]]:
    if max_bytes < 1:
        raise RecordError(f"the maximum line length must be at least 1 byte, got {max_bytes}")
    read = getattr(stream, "read1", stream.read)
    number = 0
    carry = b""
    while True:
        block = read(BLOCK_BYTES)
        if not block:
            last = list(_decoded([carry], source, number, max_bytes, after)) if carry else []
            if last:
                yield last
            return
        data = carry + block if carry else block
        cut = data.rfind(b"\n")
        whole, carry = (b"", data) if cut < 0 else (data[:cut], data[cut + 1 :])
        if cut >= 0:  # the block's whole lines first: the first bad line is the one named
            lines = _decoded_block(whole, source, number, max_bytes, after)
            if lines:
                yield lines
            number += whole.count(b"\n") + 1
        if len(carry) > max_bytes:
            raise _too_long(source, number + 1, max_bytes)


_BLANK = " \t\n\r\x0b\x0c"
"""What `bytes.strip()` strips: a line of only these is blank."""
_FIRST = itemgetter(0)
_TEXT = itemgetter(2)


def _decoded_block(whole: bytes, source: str, number: int, max_bytes: int, after: int) -> list[Line]:
    """Lines `number + 1`… of `whole` (lines joined by newlines), decoded in one go. A block whose
    every line opens with `{` (none blank) and holds no carriage return, past `after`, is made
    into Lines at C speed; any other goes line by line."""
    try:
        text = whole.decode("utf-8") if len(whole) <= max_bytes else None
    except UnicodeDecodeError:
        text = None
    if text is None:
        return list(_decoded(whole.split(b"\n"), source, number, max_bytes, after))
    texts = text.split("\n")
    if number + len(texts) <= after:
        return []
    if number >= after and "\r" not in text and _all_open_objects(texts):
        numbers = range(number + 1, number + 1 + len(texts))
        return list(map(tuple.__new__, repeat(Line), zip(repeat(source), numbers, texts)))
    lines = []
    for line_text in texts:
        number += 1
        if number > after and line_text.strip(_BLANK):
            lines.append(Line(source, number, line_text.rstrip("\r")))
    return lines


def _all_open_objects(texts: list[str]) -> bool:
    try:
        return set(map(_FIRST, texts)) == {"{"}
    except IndexError:  # an empty line
        return False


def _decoded(pieces: list[bytes], source: str, number: int, max_bytes: int, after: int) -> Iterator[Line]:
    """Lines `number + 1`… of `pieces` (each without its newline) as Lines, checked."""
    for raw in pieces:
        number += 1
        if len(raw) > max_bytes:
            raise _too_long(source, number, max_bytes)
        if number <= after or not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RecordError(f"{source}:{number}: not UTF-8 text (byte 0x{raw[exc.start]:02x})") from None
        yield Line(source, number, text.rstrip("\r"))


def _too_long(source: str, number: int, max_bytes: int) -> RecordError:
    return RecordError(f"{source}:{number}: line longer than {max_bytes} bytes (the maximum line length)")


def parse_object(text: str, where: object) -> dict[str, Any]:
    """One line's JSON object, or a RecordError naming `where`. orjson parses it (eight times
    faster); what orjson refuses goes to `json`, which decides as before: an integer past 64 bits,
    NaN and a lone surrogate escape are values there, and its error messages are the ones shown."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        value = _stdlib_loads(text, where)
    if type(value) is not dict:
        raise RecordError(f"{where}: expected a JSON object of field values, got {type(value).__name__}")
    return value


def _stdlib_loads(text: str, where: object) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(f"{where}: invalid JSON: {exc.msg} (column {exc.colno})") from None
    except ValueError as exc:  # an integer longer than Python converts (4,300 digits)
        raise RecordError(f"{where}: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise RecordError(f"{where}: JSON nested too deeply") from None


class RowBlocks:
    """`(line, object)` pairs, one by one (iterate) or as a block's lines and objects (`blocks`);
    every object is a new dict made for the taker (a bulk_rows.PairBlocks)."""

    def __init__(self, blocks: Iterator[tuple[list[Line], list[dict[str, Any]]]]) -> None:
        self._blocks = blocks

    def __iter__(self) -> Iterator[Row]:
        for lines, objects in self._blocks:
            yield from zip(lines, objects, strict=True)

    def blocks(self) -> Iterator[tuple[list[Line], list[dict[str, Any]]]]:
        """The pairs a block at a time, as two lists of the same length, never empty."""
        return self._blocks


def rows(lines: Iterable[Line], rejected: Refused | None = None) -> RowBlocks:
    """`(line, object)` pairs; a line that is not a JSON object raises, or goes to `rejected`.
    A block of LineBlocks is parsed in one pass; one with a bad line goes line by line, its good
    lines before the bad one handed on first, so the first bad line of the input is the one named."""
    blocks = lines.blocks() if isinstance(lines, LineBlocks) else ([line] for line in lines)
    return RowBlocks(_row_blocks(blocks, rejected))


def _row_blocks(
    blocks: Iterator[list[Line]], rejected: Refused | None
) -> Iterator[tuple[list[Line], list[dict[str, Any]]]]:
    loads, refused = orjson.loads, orjson.JSONDecodeError
    for block in blocks:
        try:
            objects = list(map(loads, map(_TEXT, block)))
        except refused:
            objects = None
        if objects is not None and set(map(type, objects)) == {dict}:
            yield block, objects
        else:
            yield from _one_by_one(block, rejected)


def _one_by_one(
    block: list[Line], rejected: Refused | None
) -> Iterator[tuple[list[Line], list[dict[str, Any]]]]:
    lines: list[Line] = []
    objects: list[dict[str, Any]] = []
    for line in block:
        try:
            value = parse_object(line.text, line)
        except RecordError as exc:
            if lines:
                yield lines, objects
                lines, objects = [], []
            if rejected is None:
                raise
            rejected(line, exc)
            continue
        lines.append(line)
        objects.append(value)
    if lines:
        yield lines, objects
