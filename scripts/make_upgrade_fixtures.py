"""Make the upgrade-test fixtures: a database produced by an earlier release, on each backend.

For each release commit: `git archive` it into a temporary directory, build a venv there with that
release installed (not this checkout), run its `autonumber setup apply`, fill it with
scripts/release_fill.py (Cases; Accounts and per_prefix Contracts for SG, SGT, US), and dump the
database as SQL into tests/upgrade/fixtures/<release>-<backend>.sql.gz (sqlite3 .dump, mariadb-dump,
pg_dump). Needs git, the database servers and their client tools; takes a few minutes.

    python scripts/make_upgrade_fixtures.py [--release 0.1.0] [--backend sqlite]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import tempfile
import venv
from pathlib import Path

import sqlalchemy as sa
from db_clients import client_args  # scripts/, next to this file

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "upgrade" / "fixtures"
RELEASES = {"0.1.0": "2bc4f5c", "0.2.0": "aff42aa", "0.3.0": "15c7baa"}
MYSQL_URL = os.environ.get("AUTONUMBER_FIXTURE_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/i25_fixture")
PG_URL = os.environ.get(
    "AUTONUMBER_FIXTURE_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/i25_fixture"
)


def run(*args: str | Path, quiet: bool = False) -> str:
    """Run a command; its stdout (stderr passes through, or is dropped when `quiet`); fail loudly."""
    done = subprocess.run(
        [str(a) for a in args],
        check=True,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL if quiet else None,
    )
    return done.stdout


def release_venv(commit: str, where: Path) -> Path:
    """The release's source from git (never this work tree) installed into its own venv."""
    src = where / "src"
    src.mkdir()
    archive = subprocess.run(["git", "-C", ROOT, "archive", commit], check=True, stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", src], input=archive.stdout, check=True)
    env_dir = where / "venv"
    venv.create(env_dir, with_pip=True)
    run(env_dir / "bin" / "pip", "install", "-q", str(src), quiet=True)
    return env_dir / "bin"


def fresh(backend: str, tmp: Path) -> str:
    """An empty database on `backend`."""
    if backend == "sqlite":
        return f"sqlite:///{tmp / 'release.db'}"
    url = MYSQL_URL if backend == "mysql" else PG_URL
    parsed = sa.make_url(url)
    admin = sa.create_engine(parsed.set(database="postgres" if backend == "postgresql" else ""))
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(sa.text(f"DROP DATABASE IF EXISTS {parsed.database}"))
        conn.execute(sa.text(f"CREATE DATABASE {parsed.database}"))
    admin.dispose()
    return url


def dump(backend: str, url: str) -> str:
    """The database as SQL text, loadable into an empty database of the same backend."""
    parsed = sa.make_url(url)
    if backend == "sqlite":
        return run("sqlite3", str(parsed.database), ".dump")
    if backend == "mysql":
        return run(
            "mariadb-dump", *client_args(url), "--skip-dump-date", "--skip-comments", str(parsed.database)
        )
    return run("pg_dump", *client_args(url), "--no-owner", "--no-privileges", str(parsed.database))


def make(release: str, backends: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix=f"autonumber-{release}-") as name:
        tmp = Path(name)
        bin_dir = release_venv(RELEASES[release], tmp)
        for backend in backends:
            url = fresh(backend, tmp)
            run(bin_dir / "autonumber", "setup", "apply", "--db", url)
            numbers = json.loads(run(bin_dir / "python", ROOT / "scripts" / "release_fill.py", url))
            out = FIXTURES / f"{release}-{backend}.sql.gz"
            out.write_bytes(gzip.compress(dump(backend, url).encode(), mtime=0))
            (FIXTURES / f"{release}-{backend}.json").write_text(json.dumps(numbers, indent=1) + "\n")
            print(f"{out.relative_to(ROOT)}: {numbers}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", action="append", choices=sorted(RELEASES))
    parser.add_argument("--backend", action="append", choices=["sqlite", "mysql", "postgresql"])
    args = parser.parse_args()
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for release in args.release or sorted(RELEASES):
        make(release, args.backend or ["sqlite", "mysql", "postgresql"])


if __name__ == "__main__":
    main()
