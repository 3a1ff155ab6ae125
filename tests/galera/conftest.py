"""The three-node MariaDB Galera cluster for the tests marked `galera`.

`galera` (session scope) brings the cluster up once with scripts/galera-cluster.sh, in a directory
of this run's own (unless $AUTONUMBER_GALERA_DIR names one), and ALWAYS
tears it down at the end of the session, even when a test failed or the start itself failed
half-way. Under CI=true a cluster that cannot start FAILS the tests; elsewhere they skip with the
reason. `galera_db` (per test) empties the cluster's database first (DDL on node 1 replicates).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest
from galera_support import IN_CI, Cluster, wipe

import galera_cluster


@pytest.fixture(scope="session")
def galera(request: pytest.FixtureRequest) -> Cluster:
    """Start the cluster once per session; stop it and remove its directory at the end, always."""
    # each run its own cluster directory (in netns mode also its own namespaces and subnet), so two
    # runs on one machine, or a run beside a cluster started by hand, never share one
    os.environ.setdefault("AUTONUMBER_GALERA_DIR", f"/tmp/autonumber-galera-run{os.getpid()}")
    request.addfinalizer(_down)  # registered BEFORE up(): a half-started cluster is torn down too
    try:
        galera_cluster.up()
    except (RuntimeError, OSError) as exc:
        message = f"the Galera cluster did not start: {str(exc).strip()[-2000:]}"
        if IN_CI:
            pytest.fail(f"{message} (CI=true: the galera tests must run, not skip)")
        pytest.skip(message)
    return Cluster(galera_cluster.node_urls())


def _down() -> None:
    galera_cluster.down()


@pytest.fixture
def galera_db(galera: Cluster) -> Cluster:
    """The cluster with an empty `autonumber_test` database on every node."""
    wipe(galera)
    return galera


@pytest.fixture
def workers() -> Iterator[list[subprocess.Popen[str]]]:
    """Caller processes started by a test; any still running at the end are killed."""
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
