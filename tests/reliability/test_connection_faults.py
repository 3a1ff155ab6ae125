"""Connection faults: reservation sessions killed on the server while 16 callers insert.

Every insert either succeeds or raises a clear error (an AutonumberError or a database error about
the lost connection, never a bug like AttributeError); no number is ever handed out twice; once the
killing stops, the pools recover (pre-ping) and every insert succeeds again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from rel_support import kill_session, live_sessions, make_platform, number, stored_numbers, track_server_ids

from autonumber.db import create_engine
from autonumber.engine import STRATEGIES
from autonumber.errors import AutonumberError
from autonumber.runtime import Platform

CALLERS = 16
KILL_FOR = 2.5
KILL_EVERY = 0.03
RECOVERY_INSERTS = 40
LOST_CONNECTION = (
    "lost connection",
    "server has gone away",
    "terminating connection",
    "server closed the connection",
    "connection is closed",
    "connection already closed",
    "consuming input failed",
    "query execution was interrupted",
    "connection was killed",
    "broken pipe",
    "connection reset",
    "can't reconnect",
    "eof",
)


def _clear(exc: BaseException) -> bool:
    """An error a caller can act on: ours, or the driver saying the connection went away."""
    if isinstance(exc, AutonumberError):
        return True
    if isinstance(exc, sa.exc.DBAPIError):
        text = str(exc).lower()
        return exc.connection_invalidated or any(s in text for s in LOST_CONNECTION)
    return False


@pytest.fixture(params=STRATEGIES)
def platform(request: pytest.FixtureRequest, server_db_url: str) -> Iterator[tuple[Platform, set[int]]]:
    # group commit off: every insert reserves on a reservation session, the sessions killed here
    p = make_platform(
        server_db_url, strategy=request.param, pool_size=CALLERS, reservation_pool_size=8, group_commit=False
    )
    ids = track_server_ids(p.reservation_db)
    yield p, ids
    p.close()


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_killed_reservation_sessions_never_hand_out_a_number_twice(
    platform: tuple[Platform, set[int]], server_db_url: str
) -> None:
    p, ids = platform
    stop = threading.Event()
    lock = threading.Lock()
    handed: list[str] = []
    failures: list[BaseException] = []

    def caller() -> None:
        while not stop.is_set():
            try:
                value = p.records.insert("Case", {"Subject": "fault"})["CaseNumber"]
            except Exception as exc:
                with lock:
                    failures.append(exc)
                continue
            with lock:
                handed.append(value)

    threads = [threading.Thread(target=caller) for _ in range(CALLERS)]
    for t in threads:
        t.start()
    admin_engine = create_engine(server_db_url)
    killed = 0
    try:
        with admin_engine.connect() as raw:
            admin = raw.execution_options(isolation_level="AUTOCOMMIT")
            deadline = time.monotonic() + KILL_FOR
            while time.monotonic() < deadline:
                for server_id in live_sessions(admin, ids):
                    kill_session(admin, server_id)
                    killed += 1
                time.sleep(KILL_EVERY)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
        admin_engine.dispose()
    assert not any(t.is_alive() for t in threads), "a caller hung after its connection was killed"

    unclear = [f"{type(e).__name__}: {e}" for e in failures if not _clear(e)]
    assert not unclear, f"{len(unclear)} unclear errors, first: {unclear[0]}"
    assert killed > 0, "no reservation session was ever seen to kill"
    assert handed, "no insert succeeded while sessions were being killed"

    # the pools recover without a process restart
    for _ in range(RECOVERY_INSERTS):
        handed.append(p.records.insert("Case", {"Subject": "after"})["CaseNumber"])

    numbers = [number(v) for v in handed]
    assert len(numbers) == len(set(numbers)), "a number was handed out twice"
    stored = stored_numbers(p)
    assert len(stored) == len(set(stored)), "a number was stored twice"
    assert set(stored) == set(handed), "stored numbers differ from the ones returned to callers"
