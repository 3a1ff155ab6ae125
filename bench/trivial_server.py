"""The trivial endpoint that shows the load generator is not the bottleneck of the HTTP rows.

A bare asyncio protocol (no framework, no parsing beyond the end of each request head) that answers
every GET with the same 200 on a kept-alive connection. Its rate under `wrk` is what this machine's
generator can drive while a server spends almost nothing per request; the POST rows are trusted
when it is at least 3× the best POST rate (bench/http_rows.py).
`python -m bench.trivial_server --port P` serves until terminated.
"""

from __future__ import annotations

import argparse
import asyncio
import socket

RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"
END = b"\r\n\r\n"


class Trivial(asyncio.Protocol):
    """Counts complete request heads in what arrives and writes one response per head."""

    def __init__(self) -> None:
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        heads = self.buffer.count(END)
        if heads and self.transport is not None:
            self.buffer = self.buffer[self.buffer.rindex(END) + len(END) :]
            self.transport.write(RESPONSE * heads)


async def serve(port: int) -> None:
    """Serve on 127.0.0.1:`port` until cancelled."""
    server = await asyncio.get_running_loop().create_server(Trivial, "127.0.0.1", port, backlog=1024)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    asyncio.run(serve(parser.parse_args().port))


if __name__ == "__main__":
    main()
