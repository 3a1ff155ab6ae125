"""JSON Lines read as a stream with a bound on each line, so no input can make memory grow: a
file, stdin or an HTTP body holding one JSON object per line (NDJSON).

Every problem is a RecordError naming `source:line`; an over-long line is always fatal (the reader
stops at the bound, it never buffers the rest), a line that is not a JSON object is fatal unless
the caller takes rejected lines (`--errors`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO, NamedTuple

import orjson

from .errors import RecordError

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


def read_lines(
    stream: BinaryIO, source: str, max_bytes: int = MAX_LINE_BYTES, after: int = 0
) -> Iterator[Line]:
    """The non-blank lines of `stream` past line `after`, each decoded as UTF-8 text.

    Read in blocks; the whole lines of a block are decoded and split at C speed (a block that is
    not UTF-8, or that could hold an over-long line, is taken line by line to name the line). A
    line not ended within `max_bytes` fails as soon as the bytes read so far show it, so memory
    holds at most a block and one bounded line."""
    if max_bytes < 1:
        raise RecordError(f"the maximum line length must be at least 1 byte, got {max_bytes}")
    read = getattr(stream, "read1", stream.read)
    number = 0
    carry = b""
    while True:
        block = read(BLOCK_BYTES)
        if not block:
            if carry:
                yield from _decoded([carry], source, number, max_bytes, after)
            return
        data = carry + block if carry else block
        cut = data.rfind(b"\n")
        whole, carry = (b"", data) if cut < 0 else (data[:cut], data[cut + 1 :])
        if cut >= 0:  # the block's whole lines first: the first bad line is the one named
            yield from _decoded_block(whole, source, number, max_bytes, after)
            number += whole.count(b"\n") + 1
        if len(carry) > max_bytes:
            raise _too_long(source, number + 1, max_bytes)


_BLANK = " \t\n\r\x0b\x0c"
"""What `bytes.strip()` strips: a line of only these is blank."""


def _decoded_block(whole: bytes, source: str, number: int, max_bytes: int, after: int) -> Iterator[Line]:
    """Lines `number + 1`… of `whole` (lines joined by newlines), decoded in one go."""
    try:
        texts = whole.decode("utf-8").split("\n") if len(whole) <= max_bytes else None
    except UnicodeDecodeError:
        texts = None
    if texts is None:
        yield from _decoded(whole.split(b"\n"), source, number, max_bytes, after)
        return
    make = tuple.__new__  # Line's own __new__ is a Python function: one call less per line
    for text in texts:
        number += 1
        if number > after and text.strip(_BLANK):
            yield make(Line, (source, number, text.rstrip("\r")))


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


def rows(lines: Iterator[Line], rejected: Callable[[Line, RecordError], None] | None = None) -> Iterator[Row]:
    """`(line, object)` pairs; a line that is not a JSON object raises, or goes to `rejected`."""
    loads, refused = orjson.loads, orjson.JSONDecodeError
    for line in lines:
        try:  # the usual line, without parse_object's call
            value = loads(line.text)
        except refused:
            value = None
        if type(value) is dict:
            yield line, value
            continue
        try:
            yield line, parse_object(line.text, line)
        except RecordError as exc:
            if rejected is None:
                raise
            rejected(line, exc)
