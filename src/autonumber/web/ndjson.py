"""The bulk endpoint's NDJSON body (Content-Type application/x-ndjson), read as a stream.

The request body is handed to the import, on a worker thread, as a file-like object that pulls
the next chunk from the event loop only when the reader needs it: at most one chunk and one line
(bounded by the maximum line length) are in memory, whatever the body's size.
"""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from typing import Any

import anyio.from_thread
from fastapi.routing import APIRoute
from starlette.routing import Match
from starlette.types import Scope

NDJSON = "application/x-ndjson"


def _content_type(scope: Scope) -> str:
    for name, value in scope.get("headers", ()):
        if name == b"content-type":
            return str(value.decode("latin-1").split(";")[0].strip().lower())
    return ""


class NdjsonRoute(APIRoute):
    """Matches only a request whose body is NDJSON: the JSON bulk route with the same path answers
    every other request."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child = super().matches(scope)
        if match is not Match.NONE and _content_type(scope) != NDJSON:
            return Match.NONE, {}
        return match, child


class BodyReader(io.RawIOBase):
    """A blocking byte stream over an async body, for code on a worker thread started by anyio."""

    def __init__(self, chunks: AsyncIterator[bytes]) -> None:
        self._chunks = chunks
        self._pending = b""
        self._done = False

    def readable(self) -> bool:
        return True

    async def _next(self) -> bytes:
        return await self._chunks.__anext__()

    def readinto(self, buffer: Any) -> int:
        while not self._pending and not self._done:
            try:
                self._pending = anyio.from_thread.run(self._next)
            except StopAsyncIteration:
                self._done = True
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size


def body_stream(chunks: AsyncIterator[bytes]) -> io.BufferedReader:
    """A buffered (readline-capable) stream over the request body's chunks."""
    return io.BufferedReader(BodyReader(chunks), buffer_size=1 << 16)
