#!/usr/bin/env python3
"""A TCP proxy that delays every byte by a fixed time, each way: a slow link without netem.

scripts/galera-cluster.sh `slow` runs one inside a node's network namespace and redirects the
node's group-communication connections to it with an iptables REDIRECT rule; the proxy reads
each connection's original destination (SO_ORIGINAL_DST), connects there itself (as root, which
the rule does not redirect) and forwards both directions, every chunk released `--delay-ms` after
it arrived, in order. Standard library only: it runs under the system Python as root.

    python3 scripts/delay_proxy.py --port 14567 --delay-ms 100 --pidfile /tmp/x/delay-proxy.pid
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import struct
import time

SO_ORIGINAL_DST = 80  # linux/netfilter_ipv4.h: where a REDIRECTed connection was going
CHUNK = 65536


def original_destination(sock: socket.socket) -> tuple[str, int]:
    """The address a REDIRECTed connection was sent to before the rule turned it here."""
    raw = sock.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
    port, packed = struct.unpack_from("!2xH4s", raw)
    return socket.inet_ntoa(packed), port


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    """Copy reader to writer, each chunk written `delay` seconds after it was read; EOF last."""
    due: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def release() -> None:
        while True:
            at, data = await due.get()
            wait = at - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                break
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()

    releaser = asyncio.create_task(release())
    try:
        while data := await reader.read(CHUNK):
            due.put_nowait((time.monotonic() + delay, data))
        due.put_nowait((time.monotonic() + delay, b""))
        await releaser
    finally:
        releaser.cancel()


async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter, delay: float) -> None:
    """One redirected connection: connect to where it was going and delay both directions."""
    sock = client_w.get_extra_info("socket")
    try:
        host, port = original_destination(sock)
        server_r, server_w = await asyncio.open_connection(host, port)
    except OSError:
        client_w.close()
        return
    try:
        await asyncio.gather(pump(client_r, server_w, delay), pump(server_r, client_w, delay))
    except (OSError, asyncio.IncompleteReadError):
        pass  # a reset on either side ends the connection, as it would without the proxy
    finally:
        client_w.close()
        server_w.close()


async def serve(port: int, delay: float, pidfile: str | None) -> None:
    """Listen on 127.0.0.1:`port`; write the pid file once listening (the caller waits for it)."""
    server = await asyncio.start_server(lambda r, w: handle(r, w, delay), "127.0.0.1", port)
    if pidfile:
        with open(pidfile, "w") as f:
            f.write(f"{os.getpid()}\n")
    async with server:
        await server.serve_forever()


def main() -> None:
    p = argparse.ArgumentParser(description="Delay every byte of REDIRECTed TCP connections, each way.")
    p.add_argument("--port", type=int, required=True, help="port the REDIRECT rule sends connections to")
    p.add_argument("--delay-ms", type=float, required=True, help="delay of each direction, milliseconds")
    p.add_argument("--pidfile", help="write this process's pid here once listening")
    args = p.parse_args()
    if args.delay_ms < 0:
        p.error("--delay-ms must not be negative")
    asyncio.run(serve(args.port, args.delay_ms / 1000, args.pidfile))


if __name__ == "__main__":
    main()
