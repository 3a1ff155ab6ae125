"""Held numbers are remembered on a caller's connection only where the journal watches its engine."""

from __future__ import annotations

import sqlalchemy as sa

from autonumber.engine.journal import PENDING, Journal, Pending, Range, track, watch


def _pending(db: sa.Engine) -> Pending:
    return Pending(Journal(), db, [Range("field", "", 1, 1)])


def test_a_watched_engines_connection_keeps_what_it_holds_until_its_transaction_ends() -> None:
    db = sa.create_engine("sqlite://")
    watch(db)
    with db.connect() as conn:
        for _ in range(2):  # the second time from the engines already found watched
            with conn.begin():
                held = _pending(db)
                track(conn, held)
                assert conn.info[PENDING] == [held]
            assert PENDING not in conn.info  # committed: nothing to write


def test_a_connection_of_an_engine_nobody_watches_keeps_nothing() -> None:
    db = sa.create_engine("sqlite://")
    with db.connect() as conn, conn.begin():
        track(conn, _pending(db))
        assert PENDING not in conn.info
