"""A streamed insert's batch sent on a thread of its own while the next batch is read and checked.

The server stores a batch while the import's Python reads the next one, instead of each waiting
for the other (docs/import.md, "Speed"). Only a backend whose bulk write splits into "format
now" and "send later" takes part (`Dialect.bulk_sender`). The send touches only the transaction's
driver connection, and nothing else uses that connection until the send is settled: the next
batch's write, the COMMIT and a ROLLBACK all come after `settle`, or after the context ends.
The importing thread goes on only once the send has handed its rows over (written them to the
server, or to SQLite at once): until then both threads would take turns at Python's lock, and the
server would wait for rows the send could not write.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor, wait
from types import TracebackType

from ..db.bulk import Send


class BatchSender:
    """One send in flight at a time, on one thread made when the first send starts."""

    def __init__(self) -> None:
        self._pool: ThreadPoolExecutor | None = None
        self._sending: Future[None] | None = None

    def start(self, send: Send) -> None:
        """Run `send` on the sender's thread once the send before it is settled; return once it
        has handed its rows over (or ended). While the rows go out, the send's Python needs the
        lock often (a packet at a time) and the caller's would keep taking it back: on MariaDB
        the server sat idle 4 ms per batch waiting for its rows (docs/performance.md)."""
        self.settle()
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="autonumber-batch-send")
        handed = threading.Event()

        def run() -> None:
            try:
                send(handed.set)
            finally:
                handed.set()

        self._sending = self._pool.submit(run)
        handed.wait()

    def settle(self) -> None:
        """Wait for the send in flight, if any; its error is raised here."""
        sending, self._sending = self._sending, None
        if sending is not None:
            sending.result()

    def settle_if_done(self) -> None:
        """Settle a send that has already ended: a batch that failed on its way stops the import
        before the next batch reserves its numbers."""
        if self._sending is not None and self._sending.done():
            self.settle()

    def __enter__(self) -> BatchSender:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        """Settle the send in flight before the caller commits or rolls back. On the caller's
        error, the send's own error wins when it has one: it is about earlier rows, and the
        caller's is often its consequence (a reservation that found the connection gone). An
        interruption (Ctrl-C, a generator closed) is never replaced. The thread ends here."""
        try:
            if error is None:
                self.settle()
            elif self._sending is not None:
                sending, self._sending = self._sending, None
                wait([sending])
                failed = sending.exception()
                if failed is not None and isinstance(error, Exception):
                    raise failed from error
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
