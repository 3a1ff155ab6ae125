"""JSON Lines read as a stream with a bound on each line, so no input can make memory grow: a
file, stdin or an HTTP body holding one JSON object per line (NDJSON).

Every problem is a RecordError naming `source:line`; an over-long line is always fatal (the reader
stops at the bound, it never buffers the rest), a line that is not a JSON object is fatal unless
the caller takes rejected lines (`--errors`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from .errors import RecordError

MAX_LINE_BYTES = 1 << 20
"""The longest line read by default (1 MiB): far above any record, far below a memory problem."""


@dataclass(frozen=True)
class Line:
    """Where a row came from; `str()` is the `source:line` every error names."""

    source: str
    number: int
    text: str

    def __str__(self) -> str:
        return f"{self.source}:{self.number}"


Row = tuple[Line, dict[str, Any]]


def read_lines(
    stream: BinaryIO, source: str, max_bytes: int = MAX_LINE_BYTES, after: int = 0
) -> Iterator[Line]:
    """The non-blank lines of `stream` past line `after`, each decoded as UTF-8 text."""
    if max_bytes < 1:
        raise RecordError(f"the maximum line length must be at least 1 byte, got {max_bytes}")
    number = 0
    while True:
        raw = stream.readline(max_bytes + 1)
        if not raw:
            return
        number += 1
        if len(raw) > max_bytes and not raw.endswith(b"\n"):
            raise RecordError(
                f"{source}:{number}: line longer than {max_bytes} bytes (the maximum line length)"
            )
        if number <= after or not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RecordError(f"{source}:{number}: not UTF-8 text (byte 0x{raw[exc.start]:02x})") from None
        yield Line(source, number, text.rstrip("\r\n"))


def parse_object(text: str, where: object) -> dict[str, Any]:
    """One line's JSON object, or a RecordError naming `where`."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(f"{where}: invalid JSON: {exc.msg} (column {exc.colno})") from None
    except ValueError as exc:  # an integer longer than Python converts (4,300 digits)
        raise RecordError(f"{where}: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise RecordError(f"{where}: JSON nested too deeply") from None
    if not isinstance(value, dict):
        raise RecordError(f"{where}: expected a JSON object of field values, got {type(value).__name__}")
    return value


def rows(lines: Iterator[Line], rejected: Callable[[Line, RecordError], None] | None = None) -> Iterator[Row]:
    """`(line, object)` pairs; a line that is not a JSON object raises, or goes to `rejected`."""
    for line in lines:
        try:
            yield line, parse_object(line.text, line)
        except RecordError as exc:
            if rejected is None:
                raise
            rejected(line, exc)
