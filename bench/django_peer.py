"""The django-sequences peer: lock the counter row inside the caller's transaction, insert, commit.

Django is configured in-process once, with one database alias per backend. Django keeps one
connection per thread, so callers hand their transaction to a fixed set of worker threads (at
most SESSIONS, like every other contestant's pool) that keep their connection for the cell.
"""

from __future__ import annotations

import importlib
import queue
import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import URL

from autonumber.db import create_engine, parse_url

from .contestants import SESSIONS, Contestant
from .database import stored_numbers
from .harness import Op

ROW_TABLE = "bench_django_row"
SEQUENCE = "autonumber_bench"


def available() -> str | None:
    """None when Django and django-sequences import; otherwise why the peer is skipped."""
    try:
        importlib.import_module("django")
        importlib.import_module("sequences")
    except ImportError as exc:
        return f"{exc.name} is not installed (pip install django django-sequences)"
    return None


def django_database(url: URL) -> dict[str, Any]:
    """A Django DATABASES entry for a SQLAlchemy URL."""
    backend = url.get_backend_name()
    if backend == "sqlite":
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": url.database,
            "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 30},
        }
    engine = {"mysql": "mysql", "mariadb": "mysql", "postgresql": "postgresql"}[backend]
    return {
        "ENGINE": f"django.db.backends.{engine}",
        "NAME": url.database,
        "USER": url.username or "",
        "PASSWORD": url.password or "",
        "HOST": url.host or "",
        "PORT": str(url.port or ""),
        "CONN_MAX_AGE": None,
    }


_setup_lock = threading.Lock()
_current = threading.local()


class Router:
    """Send the ORM to the alias of the running peer: django-sequences' ORM path (SQLite) queries
    `Sequence.objects` without `.using()`, so without this it would use the `default` database."""

    def db_for_read(self, model: Any, **hints: Any) -> str | None:
        return getattr(_current, "alias", None)

    def db_for_write(self, model: Any, **hints: Any) -> str | None:
        return getattr(_current, "alias", None)


def register(alias: str, url: str) -> None:
    """Configure Django (once per process) and add `alias` for `url`; migrate django-sequences."""
    django = importlib.import_module("django")
    settings = importlib.import_module("django.conf").settings
    call_command = importlib.import_module("django.core.management").call_command
    connections = importlib.import_module("django.db").connections

    parsed = parse_url(url)
    entry = django_database(parsed)
    with _setup_lock:
        if parsed.get_backend_name() in ("mysql", "mariadb"):
            import pymysql

            pymysql.install_as_MySQLdb()
        if not settings.configured:
            settings.configure(
                DATABASES={"default": {}, alias: entry},
                DATABASE_ROUTERS=[f"{__name__}.Router"],
                INSTALLED_APPS=["sequences"],
                USE_TZ=True,
                DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
            )
            django.setup()
        else:
            connections.settings[alias] = connections.configure_settings({"default": {}, alias: entry})[alias]
    call_command("migrate", "sequences", database=alias, verbosity=0)
    connections[alias].close()


class _Workers:
    """A fixed set of threads, each keeping its own Django connection until `close()`."""

    def __init__(self, n: int, alias: str) -> None:
        self.alias = alias
        self.jobs: queue.SimpleQueue[tuple[Callable[[], Hashable], Future[Hashable]] | None] = (
            queue.SimpleQueue()
        )
        self._connected = threading.Barrier(n + 1)
        self.threads = [threading.Thread(target=self._loop, daemon=True) for _ in range(n)]
        for t in self.threads:
            t.start()
        self._connected.wait(120)  # every worker holds its connection before the cell starts

    def _loop(self) -> None:
        connections = importlib.import_module("django.db").connections
        try:
            try:
                connections[self.alias].ensure_connection()
            finally:
                self._connected.wait(120)
            while (job := self.jobs.get()) is not None:
                fn, fut = job
                try:
                    fut.set_result(fn())
                except BaseException as exc:
                    fut.set_exception(exc)
        finally:
            connections[self.alias].close()

    def call(self, fn: Callable[[], Hashable]) -> Hashable:
        fut: Future[Hashable] = Future()
        self.jobs.put((fn, fut))
        return fut.result()

    def close(self) -> None:
        for _ in self.threads:
            self.jobs.put(None)
        for t in self.threads:
            t.join()


class DjangoSequences(Contestant):
    """`sequences.get_next_value` inside `transaction.atomic()` that also inserts a row (and spends
    the cell's `work` before COMMIT); at most `sessions` connections, or one per caller if None."""

    name = "peer:django-sequences"
    family = "peer"

    def __init__(self, url: str, alias: str, *, sessions: int | None = SESSIONS) -> None:
        register(alias, url)
        self.alias = alias
        self.sessions = sessions
        self.db = create_engine(url)
        rows = sa.Table(
            ROW_TABLE,
            sa.MetaData(),
            sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True),
            sa.Column("value", sa.BigInteger(), nullable=False),
        )
        rows.create(self.db, checkfirst=True)
        self.rows = rows
        self.workers: _Workers | None = None
        self.work = 0.0

    def _one(self) -> Hashable:
        db = importlib.import_module("django.db")
        get_next_value = importlib.import_module("sequences").get_next_value
        _current.alias = self.alias
        with db.transaction.atomic(using=self.alias):
            value = int(get_next_value(SEQUENCE, using=self.alias))
            with db.connections[self.alias].cursor() as cursor:
                cursor.execute(f"INSERT INTO {ROW_TABLE} (value) VALUES (%s)", [value])
            if self.work:
                time.sleep(self.work)
        return value

    def op_for(self, callers: int, work: float = 0.0) -> Op:
        self.work = work
        self.workers = _Workers(callers if self.sessions is None else min(callers, self.sessions), self.alias)
        workers = self.workers
        return lambda: workers.call(self._one)

    def end_cell(self) -> dict[str, Any]:
        if self.workers is not None:
            self.workers.close()
            self.workers = None
        return {}

    def verify(self) -> dict[str, Any]:
        return stored_numbers(self.db, self.rows.c.value)

    def close(self) -> None:
        self.end_cell()
        self.db.dispose()
