"""One bench run: every backend side by side, every contestant at every caller count."""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from typing import Any

import autonumber
from autonumber.engine import DEFAULT_STRATEGY, STRATEGIES, Strategy

from . import django_peer, extras, http_rows, job, startup
from .contestants import (
    HOT_FIELD,
    Contestant,
    EngineContestant,
    NativeSequence,
    measure,
    supports_sequences,
)
from .database import backend_of, describe_server, recreate
from .harness import Log, run_cell

CALLERS = job.CALLERS
BATCH = 1000


@dataclass(frozen=True)
class BenchConfig:
    """What to measure and how long."""

    urls: Mapping[str, str]
    quick: bool = False
    callers: Sequence[int] = CALLERS
    extras: bool = True
    duration: float = field(default=0.0)
    warmup: float = field(default=0.0)
    counter: bool = True
    """The hot-counter rows (engine strategies against the counter peers)."""
    job: bool = True
    """The job rows: records.insert against the native-insert and django-sequences peers, and HTTP."""
    http_workers: int = http_rows.WORKERS
    cli: bool = True
    """The CLI start-up row: short `autonumber` commands timed as fresh processes."""

    @property
    def cell_seconds(self) -> float:
        """Measuring window per cell."""
        return self.duration or (0.6 if self.quick else 3.0)

    @property
    def warmup_seconds(self) -> float:
        """Warm-up per cell (pools filled, caches loaded)."""
        return self.warmup or (0.2 if self.quick else 0.5)


def default_strategy(backend: str) -> Strategy:
    """The strategy `autonumber.connect` uses on `backend` (the same on every backend today)."""
    return DEFAULT_STRATEGY


def machine() -> dict[str, Any]:
    """nproc, RAM, CPU model, Python and library versions."""
    info: dict[str, Any] = {
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            info["cpu"] = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), "")
        with open("/proc/meminfo", encoding="utf-8") as fh:
            kb = int(next(ln for ln in fh if ln.startswith("MemTotal")).split()[1])
            info["ram_gib"] = round(kb / 1024 / 1024, 1)
    except (OSError, StopIteration, ValueError):
        pass
    for pkg in ("autonumber", "SQLAlchemy", "PyMySQL", "psycopg", "Django", "django-sequences"):
        try:
            info[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            info[pkg] = None
    return info


@contextmanager
def _opened(make: Callable[[], Contestant]) -> Iterator[Contestant]:
    contestant = make()
    try:
        yield contestant
    finally:
        contestant.close()


def _contestants(url: str, backend: str, config: BenchConfig) -> list[tuple[str, Callable[[], Contestant]]]:
    """Factories, in table order; a peer that cannot run here is left out (recorded as skipped)."""
    out: list[tuple[str, Callable[[], Contestant]]] = []
    for strategy in STRATEGIES:
        out.append((f"engine:{strategy}", _engine(url, strategy, records=False)))
    record_strategies = [default_strategy(backend)] if config.quick else list(STRATEGIES)
    for strategy in record_strategies:
        out.append((f"records:{strategy}", _engine(url, strategy, records=True)))
    if supports_sequences(url):
        out.append(("peer:native-sequence", lambda: NativeSequence(url)))
    if django_peer.available() is None:
        out.append(("peer:django-sequences", lambda: django_peer.DjangoSequences(url, f"bench_{backend}")))
    return out


def _engine(url: str, strategy: str, *, records: bool) -> Callable[[], Contestant]:
    return lambda: EngineContestant(url, strategy, records=records)  # type: ignore[arg-type]


def _skipped(url: str) -> dict[str, str]:
    out: dict[str, str] = {}
    if not supports_sequences(url):
        out["peer:native-sequence"] = "the backend has no SEQUENCE objects"
    reason = django_peer.available()
    if reason is not None:
        out["peer:django-sequences"] = reason
    return out


def run_backend(url: str, config: BenchConfig, log: Log) -> dict[str, Any]:
    """Recreate the backend's bench database and measure every contestant on its hot counter."""
    backend = backend_of(url)
    recreate(url)
    result: dict[str, Any] = {
        "url": autonumber.db.mask(url),
        "server": describe_server(url),
        "default_strategy": default_strategy(backend),
        "cells": {},
        "verify": {},
        "skipped": _skipped(url),
    }
    for name, make in _contestants(url, backend, config):
        with _opened(make) as contestant:
            rows = []
            for callers in config.callers:
                cell = measure(contestant, callers, config.cell_seconds, config.warmup_seconds)
                row = cell.as_dict()
                rows.append(row)
                log(
                    f"  {backend:<10} {name:<24} {callers:>3} callers  {row['throughput']:>9.0f}/s  "
                    f"p99 {row['p99_ms']:>8.2f} ms  unique={row['unique']}"
                    + (f"  errors={row['errors']} ({row['first_error']})" if row["errors"] else "")
                )
            result["cells"][name] = rows
            result["verify"][name] = contestant.verify()
    result["batch"] = _batches(url, config, log, backend)
    return result


def _batches(url: str, config: BenchConfig, log: Log, backend: str) -> dict[str, Any]:
    """assign_batch(1000) from one caller, per strategy: numbers per second."""
    out: dict[str, Any] = {}
    records: list[dict[str, Any]] = [{}] * BATCH
    for strategy in STRATEGIES:
        p = autonumber.connect(url, strategy=strategy)
        try:

            def batch(p: autonumber.Platform = p) -> Hashable:
                return tuple(p.engine.assign_batch(HOT_FIELD, records))

            cell = run_cell(batch, 1, config.cell_seconds, config.warmup_seconds)
        finally:
            p.close()
        row = cell.as_dict()
        row["numbers_per_s"] = round(cell.throughput * BATCH, 1)
        out[strategy] = row
        log(f"  {backend:<10} assign_batch({BATCH}) {strategy:<10} {row['numbers_per_s']:>12,.0f} numbers/s")
    return out


def run(config: BenchConfig, log: Log = print) -> dict[str, Any]:
    """Measure every backend of `config`, then the extra benchmarks; return the result document."""
    started = time.perf_counter()
    doc: dict[str, Any] = {
        "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "quick": config.quick,
        "callers": list(config.callers),
        "cell_seconds": config.cell_seconds,
        "warmup_seconds": config.warmup_seconds,
        "machine": machine(),
        "backends": {},
        "extras": {},
    }
    for backend, url in config.urls.items():
        log(f"{backend}: {autonumber.db.mask(url)}")
        if config.counter:
            doc["backends"][backend] = run_backend(url, config, log)
        if config.job:
            if not config.counter:
                recreate(url)
            doc.setdefault("job", {})[backend] = job.run_job(
                url,
                backend,
                callers=tuple(config.callers),
                seconds=config.cell_seconds,
                warmup=config.warmup_seconds,
                log=log,
            )
            doc["job"][backend]["server"] = describe_server(url)
            doc.setdefault("http", {})[backend] = http_rows.run_http(
                url, backend, workers=config.http_workers, seconds=max(2.0, 2 * config.cell_seconds), log=log
            )
    if config.cli:
        doc["cli"] = startup.run_startup(log=log)
    if config.extras:
        for name in extras.EXTRAS:
            log(f"extra: bench_{name}")
            doc["extras"][name] = extras.run_extra(name, config.quick, config.urls)
    doc["seconds"] = round(time.perf_counter() - started, 1)
    doc["machine"]["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    return doc


__all__ = ["CALLERS", "BenchConfig", "Strategy", "run"]
