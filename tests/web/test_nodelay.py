"""Every `serve` path turns Nagle's algorithm off, including the listener Uvicorn binds for
`--workers N` (its socket says proto 0, so asyncio alone leaves Nagle on: ~40 ms per keep-alive
request)."""

from __future__ import annotations

import asyncio
import socket

from autonumber.web.server import NoDelay


def _nodelay_of_accepted(protocol: type[asyncio.Protocol]) -> int:
    """TCP_NODELAY of a connection accepted by `protocol` on a listener bound as Uvicorn binds it."""
    seen: list[int] = []

    class Probe(protocol):  # type: ignore[valid-type, misc]
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            sock = transport.get_extra_info("socket")
            seen.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    async def accept_one() -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # proto 0, like uvicorn's
        listener.bind(("127.0.0.1", 0))
        server = await asyncio.get_running_loop().create_server(Probe, sock=listener)
        port = listener.getsockname()[1]
        async with server:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            for _ in range(100):
                if seen:
                    break
                await asyncio.sleep(0.01)
            writer.close()

    asyncio.run(accept_one())
    assert len(seen) == 1
    return seen[0]


def test_a_listener_bound_as_uvicorn_binds_it_leaves_nagle_on_without_no_delay() -> None:
    assert _nodelay_of_accepted(asyncio.Protocol) == 0


def test_no_delay_turns_nagle_off_on_such_a_listener() -> None:
    assert _nodelay_of_accepted(NoDelay) != 0
