"""Drive the three-node MariaDB Galera test cluster (scripts/galera-cluster.sh) from Python.

Plain functions, no pytest fixtures. Every call runs the script with subprocess and raises
RuntimeError carrying the script's output when it fails.

Node i (1..3) listens on 127.0.0.1:331i; user ``app``/``app`` owns everything; the database is
``autonumber_test``. The cluster directory is ``$AUTONUMBER_GALERA_DIR`` or
``/tmp/autonumber-galera``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "galera-cluster.sh"
NODES = (1, 2, 3)
USER = "app"
PASSWORD = "app"
DATABASE = "autonumber_test"
HOST = "127.0.0.1"

# Generous: `up` takes ~10-15 s here, but the script's own waits are 120 s each.
UP_TIMEOUT_S = 600.0
NODE_TIMEOUT_S = 300.0


def node_port(i: int) -> int:
    """SQL port of node i (1..3)."""
    _check_node(i)
    return 3310 + i


def node_urls() -> list[str]:
    """SQLAlchemy URLs of the three nodes, node 1 first."""
    return [f"mysql+pymysql://{USER}:{PASSWORD}@{HOST}:{node_port(i)}/{DATABASE}" for i in NODES]


def up() -> None:
    """Start the cluster (a no-op when it is already up and healthy)."""
    _run("up", timeout=UP_TIMEOUT_S)


def down() -> None:
    """Stop every node and remove the cluster directory."""
    _run("down", timeout=NODE_TIMEOUT_S)


def kill_node(i: int) -> None:
    """SIGKILL node i (the others go on; node i's clients get connection errors)."""
    _check_node(i)
    _run("kill", str(i), timeout=NODE_TIMEOUT_S)


def start_node(i: int) -> None:
    """Restart node i and wait until it has rejoined (IST/SST) and is Synced."""
    _check_node(i)
    _run("start", str(i), timeout=NODE_TIMEOUT_S)


def is_up() -> bool:
    """True when all three nodes are Synced with cluster size 3."""
    try:
        _run("status", timeout=60.0)
    except RuntimeError:
        return False
    return True


def status() -> str:
    """The script's status report (one line per node), whatever the cluster's state."""
    proc = _exec("status", timeout=60.0)
    return proc.stdout


def _check_node(i: int) -> None:
    if i not in NODES:
        raise ValueError(f"node must be 1, 2 or 3, not {i!r}")


def _exec(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    cmd = ["bash", str(SCRIPT), *args]
    try:
        return subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env=os.environ.copy(),
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        out = _text(exc.stdout) + _text(exc.stderr)
        raise RuntimeError(f"{' '.join(cmd)} timed out after {timeout:.0f}s\n{out}") from exc


def _run(*args: str, timeout: float) -> str:
    proc = _exec(*args, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(
            f"scripts/galera-cluster.sh {' '.join(args)} failed (exit {proc.returncode})\n"
            f"{proc.stdout}{proc.stderr}"
        )
    return proc.stdout


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    if isinstance(data, bytes):
        return data.decode(errors="replace")
    return data
