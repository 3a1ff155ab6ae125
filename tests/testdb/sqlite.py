"""SQLite: the snapshot is a bootstrapped file; a copy is a file copy."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from sqlalchemy.engine import make_url

from autonumber.db import create_engine
from autonumber.setup.bootstrap import bootstrap

from .servers import today

_snapshot: dict[str, Path] = {}


def snapshot_dir(path: Path) -> None:
    """Where this session keeps its bootstrapped SQLite file (a session temp directory)."""
    _snapshot["dir"] = path


def restore(url: str) -> bool:
    target = Path(make_url(url).database or "")
    if not str(target) or str(target) == ":memory:" or "dir" not in _snapshot:
        return False
    if target.exists() and target.stat().st_size > 0:
        return False
    if any(Path(f"{target}{s}").exists() for s in ("-wal", "-shm", "-journal")):
        return False
    snapshot = _snapshot["dir"] / f"platform-{today()}.db"
    if not snapshot.exists():
        building = snapshot.with_suffix(".building")
        building.unlink(missing_ok=True)
        engine = create_engine(f"sqlite:///{building}")
        try:
            bootstrap(engine)
        finally:
            engine.dispose()
        with sqlite3.connect(building) as conn:  # fold any WAL left over into the file
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        if any(Path(f"{building}{s}").exists() for s in ("-wal", "-journal")):
            return False
        building.rename(snapshot)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(snapshot, target)
    return True
