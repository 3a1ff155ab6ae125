"""A TCP proxy on loopback in front of a database server that cuts connections around COMMIT.

Not a test module. The proxy relays bytes both ways; once `arm()`ed, every `every`-th COMMIT it
sees is cut, alternately *before* it reaches the server (the transaction rolls back) and *after*
the server answered it (the transaction is stored, the client never hears so). The cuts are
counted, not timed, so a run is the same on a fast or a loaded machine.

COMMIT is recognised in the first bytes of a client message: MySQL's COM_QUERY and PostgreSQL's
simple and extended query messages all carry the statement text within 16 bytes of the start.

`down()` cuts every connection and refuses new ones; `stall()` cuts them and accepts new ones that
then hear nothing: a server that refuses, resets or hangs.

For a deterministic test, `cut_next(where)` cuts the very next COMMIT and then takes the proxy
*down* (every connection cut, new ones closed at once) until `up()`: the database is unreachable
right after the COMMIT, so the client cannot ask what happened. `cut_next(where, marker)` cuts the
next message holding `marker` anywhere instead: a statement that commits by itself (psycopg's
autocommit, a MariaDB text that ends in COMMIT).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import sqlalchemy as sa

BEFORE, AFTER = "before", "after"


class _Pair:
    """One client connection and its upstream connection."""

    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.client = client
        self.upstream = upstream
        self.drop_reply = False
        self.then_down = False

    def close(self) -> None:
        for s in (self.client, self.upstream):
            with suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            with suppress(OSError):
                s.close()


class FaultProxy:
    """Relay 127.0.0.1:<port> to `upstream`; cut every `every`-th COMMIT once armed."""

    def __init__(self, upstream: tuple[str, int], every: int = 5) -> None:
        self.upstream = upstream
        self.every = every
        self.cuts = {BEFORE: 0, AFTER: 0}
        self._armed = False
        self._commits = 0
        self._next: str | None = None
        self._marker: bytes | None = None
        self._down = False
        self._stalled = False
        self._held: list[socket.socket] = []
        self._lock = threading.Lock()
        self._pairs: list[_Pair] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._stopped = threading.Event()
        self._acceptor = threading.Thread(target=self._accept, daemon=True)
        self._acceptor.start()

    def arm(self, armed: bool = True) -> None:
        """Start (or stop) cutting COMMITs."""
        with self._lock:
            self._armed = armed

    def cut_next(self, where: str, marker: bytes | None = None) -> None:
        """Cut the next COMMIT (or the next message holding `marker`) `where` (BEFORE/AFTER),
        armed or not, then go down until `up()`."""
        with self._lock:
            self._next, self._marker = where, marker

    def up(self) -> None:
        """Relay new connections again after `down()`, `stall()` or `cut_next`."""
        with self._lock:
            self._down = self._stalled = False
            held, self._held = self._held, []
        for client in held:
            client.close()

    def down(self) -> None:
        """Cut every connection and refuse new ones until `up()`."""
        with self._lock:
            self._down = True
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            pair.close()

    def stall(self) -> None:
        """Cut every connection; accept new ones but never relay a byte (a server that hangs),
        until `up()`."""
        self.down()
        with self._lock:
            self._down, self._stalled = False, True

    def url(self, database_url: str) -> str:
        """`database_url` pointed at the proxy (PostgreSQL without TLS, so COMMIT can be seen)."""
        url = sa.engine.make_url(database_url).set(host="127.0.0.1", port=self.port)
        if url.get_backend_name() == "postgresql":
            url = url.update_query_dict({"sslmode": "disable"})
        return url.render_as_string(hide_password=False)

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self._stopped.is_set():  # the wake-up connection of close()
                client.close()
                return
            if self._down:
                client.close()
                continue
            if self._stalled:
                with self._lock:
                    self._held.append(client)
                continue
            try:
                upstream = socket.create_connection(self.upstream, timeout=30)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            for s in (client, upstream):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            pair = _Pair(client, upstream)
            with self._lock:
                self._pairs.append(pair)
            threading.Thread(target=self._client_to_server, args=(pair,), daemon=True).start()
            threading.Thread(target=self._server_to_client, args=(pair,), daemon=True).start()

    def _cut(self, data: bytes) -> tuple[str | None, bool]:
        """What to do with a client message: None (relay it), BEFORE or AFTER; and whether the
        proxy then goes down."""
        with self._lock:
            if self._next is not None and self._marker is not None and self._marker in data:
                where, self._next = self._next, None
                self.cuts[where] += 1
                return where, True
        if b"COMMIT" not in data[:16].upper():
            return None, False
        with self._lock:
            if self._next is not None and self._marker is None:
                where, self._next = self._next, None
                self.cuts[where] += 1
                return where, True
            if not self._armed:
                return None, False
            self._commits += 1
            if self._commits % self.every:
                return None, False
            where = BEFORE if (self._commits // self.every) % 2 else AFTER
            self.cuts[where] += 1
            return where, False

    def _client_to_server(self, pair: _Pair) -> None:
        try:
            while data := pair.client.recv(65536):
                where, down = self._cut(data)
                if where == BEFORE:
                    if down:
                        self.down()
                    break
                if where == AFTER:
                    pair.drop_reply, pair.then_down = True, down
                pair.upstream.sendall(data)
        except OSError:
            pass
        if not pair.drop_reply:
            pair.close()

    def _server_to_client(self, pair: _Pair) -> None:
        try:
            while data := pair.upstream.recv(65536):
                if pair.drop_reply:  # the server answered the COMMIT: it is stored
                    if pair.then_down:
                        self.down()
                    break
                pair.client.sendall(data)
        except OSError:
            pass
        pair.close()

    def close(self) -> None:
        """Stop accepting and cut every open connection."""
        self._stopped.set()
        with suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=5):
            pass  # wakes accept(), which closing the listener does not do on Linux
        self._acceptor.join(10)
        with suppress(OSError):
            self._listener.close()
        with self._lock:
            pairs, self._pairs = self._pairs, []
            held, self._held = self._held, []
        for pair in pairs:
            pair.close()
        for client in held:
            client.close()


@contextmanager
def fault_proxy(database_url: str, every: int = 5) -> Iterator[FaultProxy]:
    """A FaultProxy in front of the server of `database_url`, closed on exit."""
    url = sa.engine.make_url(database_url)
    default_port = 5432 if url.get_backend_name() == "postgresql" else 3306
    proxy = FaultProxy((url.host or "127.0.0.1", url.port or default_port), every=every)
    try:
        yield proxy
    finally:
        proxy.close()
