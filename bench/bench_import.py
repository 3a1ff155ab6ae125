"""Bulk import: `autonumber records insert-many Case --file cases.jsonl --quiet` against the script a
user would write instead, with each one's wall time and peak RSS, at several row counts.

Run: .venv/bin/python -m bench --only import [--quick] [--backend …] [--import-rows 100000 …]
  or .venv/bin/python -m bench.bench_import --rows 100000 --db URL [--db URL …]
Every --db is a SCRATCH database: all its tables are dropped.

The peers (each in a fresh process, so its peak RSS is its own):
- executemany: read the file line by line, `json.loads`, executemany INSERT of 5,000-row batches into
  a table whose number is the database's own sequence (AUTOINCREMENT / AUTO_INCREMENT / IDENTITY),
  all in one transaction: the 20-line script.
- copy (PostgreSQL only): the same rows by psycopg COPY into that table: the physical reference.
The import itself runs the real CLI entry point in its own process (all or nothing, batches of 5,000).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa

RESULTS = Path(__file__).resolve().parent / "results"
PEER_BATCH = 5_000
PEER_TABLE = "import_peer"


def write_file(path: Path, rows: int) -> None:
    """`{"Subject": "import N"}` per line, as the issue measured."""
    with path.open("w", encoding="utf-8") as out:
        for i in range(rows):
            out.write(f'{{"Subject": "import {i}"}}\n')


def _prepare(url: str) -> None:
    """Wipe the scratch database, bootstrap the core pack, create the peers' sequence table."""
    from autonumber.db import create_engine
    from autonumber.setup.bootstrap import bootstrap
    from autonumber.setup.report import wipe

    engine = create_engine(url)
    try:
        wipe(engine)
        bootstrap(engine)
        with engine.begin() as conn:
            sa.Table(
                PEER_TABLE,
                sa.MetaData(),
                sa.Column("number", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True),
                sa.Column("subject", sa.String(255)),
            ).create(conn)
    finally:
        engine.dispose()


def _peer(url: str, path: Path, how: str) -> int:
    """The user's script (runs in the measuring child); rows written."""
    engine = sa.create_engine(url)
    raw = engine.raw_connection()
    placeholder = "?" if engine.dialect.paramstyle == "qmark" else "%s"
    insert = f"INSERT INTO {PEER_TABLE} (subject) VALUES ({placeholder})"
    count = 0
    cursor = raw.cursor()
    with path.open(encoding="utf-8") as lines:
        if how == "copy":
            with cursor.copy(f"COPY {PEER_TABLE} (subject) FROM STDIN") as copy:
                for line in lines:
                    copy.write_row((json.loads(line)["Subject"],))
                    count += 1
        else:
            batch: list[tuple[str]] = []
            for line in lines:
                batch.append((json.loads(line)["Subject"],))
                if len(batch) == PEER_BATCH:
                    cursor.executemany(insert, batch)
                    count += len(batch)
                    batch = []
            if batch:
                cursor.executemany(insert, batch)
                count += len(batch)
    raw.commit()
    raw.close()
    engine.dispose()
    return count


def _import(url: str, path: Path) -> int:
    """The product's import through the CLI entry point (runs in the measuring child; its modules
    are loaded before the clock starts, as the peer's are: CLI start-up is a row of its own)."""
    import contextlib
    import io

    from autonumber.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            main(["records", "insert-many", "Case", "--file", str(path), "--quiet", "--db", url])
        except SystemExit as exc:
            if exc.code not in (0, None):
                raise RuntimeError(f"insert-many exited {exc.code}") from None
    return int(out.getvalue().split()[1])


def measure(url: str, path: Path, how: str) -> dict[str, Any]:
    """One measurement in this (fresh) process: seconds, rows/s, peak RSS."""
    if how == "import":
        import autonumber.bulk_import
        import autonumber.cli.import_cmd
        import autonumber.runtime  # noqa: F401 - loaded before the clock starts
    began = time.perf_counter()
    rows = _import(url, path) if how == "import" else _peer(url, path, how)
    seconds = time.perf_counter() - began
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "rows": rows,
        "seconds": round(seconds, 2),
        "rows_per_s": round(rows / seconds),
        "peak_rss_mb": round(rss_mb, 1),
    }


def _child(url: str, path: Path, how: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.bench_import", "--measure", how, "--db", url, "--file", str(path)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def bench_backend(url: str, sizes: list[int], workdir: Path) -> dict[str, Any]:
    """Each size: a fresh database, then the import, the executemany peer and (PostgreSQL) COPY."""
    backend = sa.make_url(url).get_backend_name()
    points = []
    for size in sizes:
        path = workdir / f"cases-{size}.jsonl"
        if not path.exists():
            write_file(path, size)
        point: dict[str, Any] = {"rows": size}
        for how in (
            ("import", "executemany", "copy") if backend == "postgresql" else ("import", "executemany")
        ):
            _prepare(url)
            point[how] = _child(url, path, how)
        point["vs_executemany"] = round(point["executemany"]["seconds"] / point["import"]["seconds"], 2)
        if "copy" in point:
            point["vs_copy"] = round(point["copy"]["seconds"] / point["import"]["seconds"], 2)
        points.append(point)
        print(f"  {backend} {size:>9,}: " + json.dumps(point), flush=True)
    return {"backend": backend, "points": points}


def run(quick: bool, urls: dict[str, str], sizes: list[int] | None = None) -> dict[str, Any]:
    """The import row on each scratch database (10k and 50k rows with quick, else 100k and 1M)."""
    chosen = sizes or ([10_000, 50_000] if quick else [100_000, 1_000_000])
    workdir = RESULTS / "import-files"
    workdir.mkdir(parents=True, exist_ok=True)
    doc = {
        "benchmark": "bulk_import",
        "sizes": chosen,
        "backends": [bench_backend(url, chosen, workdir) for url in urls.values()],
    }
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    (RESULTS / f"import-{stamp}.json").write_text(json.dumps(doc, indent=2) + "\n")
    return doc


def main() -> int:
    """`--measure` is the child; otherwise run the row on every --db."""
    p = argparse.ArgumentParser(prog="python -m bench.bench_import")
    p.add_argument("--db", action="append", required=True)
    p.add_argument("--rows", type=int, action="append")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--measure", choices=("import", "executemany", "copy"))
    p.add_argument("--file", type=Path)
    args = p.parse_args()
    if args.measure:
        print(json.dumps(measure(args.db[0], args.file, args.measure)))
        return 0
    run(args.quick, {str(i): url for i, url in enumerate(args.db)}, args.rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
