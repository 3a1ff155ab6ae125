"""Drive the three-node MariaDB Galera test cluster (scripts/galera-cluster.sh) from Python.

Plain functions, no pytest fixtures. Every call runs the script with subprocess and raises
RuntimeError carrying the script's output when it fails.

Two network modes (the script's header): ``netns`` puts every node in its own network namespace,
so the partition tests can cut and heal the links between nodes; ``loopback`` runs them all on
127.0.0.1 (node i on port 331i). `up` chooses netns when this process may create namespaces (root,
``ip netns`` works) unless ``$AUTONUMBER_GALERA_NET`` says otherwise; `mode()` says which ran. User
``app``/``app`` owns everything; the database is ``autonumber_test``. The cluster directory is
``$AUTONUMBER_GALERA_DIR`` or ``/tmp/autonumber-galera``.
"""

from __future__ import annotations

import os
import shutil
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


def _env() -> dict[str, str]:
    """The running cluster's `env` lines: mode, client address, nI=HOST:PORT."""
    lines = _run("env", timeout=60.0).splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


def mode() -> str:
    """`netns` or `loopback`: how the running cluster's nodes are networked."""
    return _env()["mode"]


def node_urls() -> list[str]:
    """SQLAlchemy URLs of the three nodes, node 1 first."""
    env = _env()
    return [f"mysql+pymysql://{USER}:{PASSWORD}@{env[f'n{i}']}/{DATABASE}" for i in NODES]


def netns_available() -> bool:
    """Whether this process can create network namespaces (root and a working `ip netns`)."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        return False
    probe = f"anprobe{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, check=False, timeout=30)
    subprocess.run(["ip", "netns", "del", probe], capture_output=True, check=False, timeout=30)
    return made.returncode == 0


def up() -> None:
    """Start the cluster (a no-op when it is already up and healthy); netns mode where possible."""
    net = os.environ.get("AUTONUMBER_GALERA_NET") or ("netns" if netns_available() else "loopback")
    _run("up", timeout=UP_TIMEOUT_S, net=net)


def isolate(i: int) -> None:
    """Cut node i from both other nodes (netns mode); its clients still reach it."""
    _check_node(i)
    _run("isolate", str(i), timeout=60.0)


def cut(a: int, b: int) -> None:
    """Drop every packet between nodes a and b (netns mode)."""
    _check_node(a)
    _check_node(b)
    _run("cut", str(a), str(b), timeout=60.0)


def lossy(i: int, percent: int) -> None:
    """Drop `percent` % of the packets between node i and the others, each way (netns mode)."""
    _check_node(i)
    _run("lossy", str(i), str(int(percent)), timeout=60.0)


def slow(i: int, ms: int) -> None:
    """Delay every byte between node i and the others `ms` ms each way (netns mode, a proxy)."""
    _check_node(i)
    _run("slow", str(i), str(int(ms)), timeout=60.0)


def heal() -> None:
    """Remove every cut, every loss and every delay (netns mode)."""
    _run("heal", timeout=60.0)


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


def node_cpu_seconds() -> list[float]:
    """CPU seconds (user + system) each node's mariadbd has used since it started, node 1 first:
    the bench's per-node cost of a number (read from /proc; 0.0 for a node that is down)."""
    folder = Path(os.environ.get("AUTONUMBER_GALERA_DIR", "/tmp/autonumber-galera"))
    tick = os.sysconf("SC_CLK_TCK")
    out = []
    for i in NODES:
        try:
            pid = (folder / f"n{i}" / "run" / "node.pid").read_text().strip()
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            out.append(0.0)
            continue
        out.append((int(fields[11]) + int(fields[12])) / tick)  # utime, stime (fields 14, 15)
    return out


def _check_node(i: int) -> None:
    if i not in NODES:
        raise ValueError(f"node must be 1, 2 or 3, not {i!r}")


def _exec(*args: str, timeout: float, net: str | None = None) -> subprocess.CompletedProcess[str]:
    cmd = ["bash", str(SCRIPT), *args]
    env = os.environ.copy()
    if net is not None:
        env["AUTONUMBER_GALERA_NET"] = net
    try:
        return subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        out = _text(exc.stdout) + _text(exc.stderr)
        raise RuntimeError(f"{' '.join(cmd)} timed out after {timeout:.0f}s\n{out}") from exc


def _run(*args: str, timeout: float, net: str | None = None) -> str:
    proc = _exec(*args, timeout=timeout, net=net)
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
