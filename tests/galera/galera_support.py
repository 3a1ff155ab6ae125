"""Helpers of the Galera tests: the cluster handle, the wipe, the caller processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

import galera_cluster

IN_CI = os.environ.get("CI", "").lower() == "true"
WORKER = Path(__file__).with_name("galera_worker.py")
SYNC_WAIT = {"init_command": "SET SESSION wsrep_sync_wait = 1"}
"""Connect args of the tests' own reads: a read waits until the node has applied every write the
cluster had committed when the read began (read-your-writes across nodes)."""
WORKER_TIMEOUT_S = 150.0


@dataclass(frozen=True)
class Cluster:
    """The running cluster: node URLs (node 1 first) and node control."""

    urls: list[str]

    def url(self, node: int, **query: str | int) -> str:
        """Node `node`'s URL, with extra query parameters (driver options such as read_timeout)."""
        base = self.urls[node - 1]
        if not query:
            return base
        return base + "?" + "&".join(f"{k}={v}" for k, v in query.items())

    def engine(self, node: int) -> sa.engine.Engine:
        """A plain engine on `node` whose reads see every write committed cluster-wide before them."""
        return sa.create_engine(self.urls[node - 1], connect_args=SYNC_WAIT, poolclass=sa.pool.NullPool)

    kill = staticmethod(galera_cluster.kill_node)
    start = staticmethod(galera_cluster.start_node)


def wipe(cluster: Cluster) -> None:
    """Drop every table through node 1 (DDL is replicated in total order to the other nodes)."""
    engine = cluster.engine(1)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text("SET FOREIGN_KEY_CHECKS=0"))
            for name in sa.inspect(conn).get_table_names():
                conn.execute(sa.text(f"DROP TABLE IF EXISTS `{name}`"))
            conn.execute(sa.text("SET FOREIGN_KEY_CHECKS=1"))
    finally:
        engine.dispose()
    for node in (2, 3):
        engine = cluster.engine(node)
        try:
            with engine.connect() as conn:
                left = sa.inspect(conn).get_table_names()
        finally:
            engine.dispose()
        assert left == [], f"node {node} still has tables after the wipe: {left}"


def start_worker(*args: str | int | Path) -> subprocess.Popen[str]:
    """Start one caller process (tests/galera/galera_worker.py)."""
    return subprocess.Popen(
        [sys.executable, str(WORKER), *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )


def finish_workers(procs: Sequence[subprocess.Popen[str]]) -> list[dict[str, Any]]:
    """Wait for the callers and parse each one's JSON report; a crashed or hung caller fails."""
    out: list[dict[str, Any]] = []
    for proc in procs:
        try:
            stdout, stderr = proc.communicate(timeout=WORKER_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
            pytest.fail(f"caller {proc.args!r} hung for {WORKER_TIMEOUT_S:.0f}s\n{stderr[-3000:]}")
        assert proc.returncode == 0, (
            f"caller {proc.args!r} crashed (exit {proc.returncode}):\n{stderr[-3000:]}"
        )
        out.append(json.loads(stdout))
    return out


def run_setup(engine: sa.engine.Engine) -> None:
    """`setup apply` of the default spec."""
    from autonumber.setup.apply import apply
    from autonumber.setup.generate import load_spec

    apply(engine, load_spec())


def setup_cluster(cluster: Cluster) -> None:
    """Bootstrap the core pack through node 1 and check that every node shows the same state.

    `bootstrap` runs the first phases of `setup apply` (same code, same lock) for the core objects
    only: the full spec creates ~140 tables, which the insert tests do not need.
    """
    from autonumber.setup.bootstrap import bootstrap

    engine = autonumber_engine(cluster, 1)
    try:
        bootstrap(engine)
    finally:
        engine.dispose()
    first = state_of(cluster, 1)
    assert first["counters"], "the setup created no counter rows"
    for node in (2, 3):
        assert state_of(cluster, node) == first, f"node {node} differs from node 1 after the setup"


def autonumber_engine(cluster: Cluster, node: int) -> sa.engine.Engine:
    """An engine built by autonumber's dialect layer (UTC session, READ COMMITTED) with sync-wait reads."""
    from autonumber.db import create_engine

    return create_engine(cluster.urls[node - 1], pool_size=2, connect_args=SYNC_WAIT)


def state_of(cluster: Cluster, node: int) -> dict[str, list[tuple[Any, ...]]]:
    """What the setup decides, as read on one node: rule columns, counters, record-type codes."""
    from autonumber.db.tables import counter_table, system_field, system_record_type

    rule_cols = [c for c in system_field.c if not c.name.lower().endswith("date")]
    engine = cluster.engine(node)
    try:
        with engine.connect() as conn:
            fields = conn.execute(sa.select(*rule_cols).order_by(system_field.c.Id)).all()
            counters = conn.execute(
                sa.select(
                    counter_table.c.field_id, counter_table.c.scope_key, counter_table.c.next_value
                ).order_by(counter_table.c.field_id, counter_table.c.scope_key)
            ).all()
            types = conn.execute(
                sa.select(
                    system_record_type.c.Id,
                    system_record_type.c.DeveloperName,
                    system_record_type.c.RecordTypeCode,
                ).order_by(system_record_type.c.Id)
            ).all()
    finally:
        engine.dispose()
    return {
        "fields": [tuple(r) for r in fields],
        "counters": [tuple(r) for r in counters],
        "record_types": [tuple(r) for r in types],
    }


def verify_node(cluster: Cluster, node: int) -> list[str]:
    """`setup verify` (V1–V6) against one node; [] when it passes."""
    from autonumber.rules.verify import verify

    engine = autonumber_engine(cluster, node)
    try:
        return [str(f) for f in verify(engine)]
    finally:
        engine.dispose()


def case_numbers(cluster: Cluster, node: int) -> list[str]:
    """Every stored Case.CaseNumber, read on one node."""
    engine = cluster.engine(node)
    try:
        with engine.connect() as conn:
            return [str(v) for v in conn.execute(sa.text("SELECT CaseNumber FROM `Case`")).scalars()]
    finally:
        engine.dispose()
