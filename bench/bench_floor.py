"""What SQLite itself spends on one record, below any Python layer: the statements of the native
peer against those of the job, run on the driver (`sqlite3`) with nothing else in the loop.

- `peer` — the native peer's row: `INSERT` into a table keyed by its rowid (one page written);
- `job row` — a Case-shaped row: a 32-hex text key, a timestamp, the subject and a UNIQUE number
  (the table, its key's index and the number's index written);
- `job row + counter` — the same row and the counter's `UPDATE … RETURNING` before it in the same
  transaction: what `records.insert` asks of SQLite for one record.

Each in its own transaction (`BEGIN IMMEDIATE` … `COMMIT`, WAL, `synchronous=NORMAL`, as the
product opens SQLite), on a fresh file. The ratio `peer ÷ job row + counter` bounds what any
code above the driver can reach against the peer on one caller.

Run: .venv/bin/python -m bench.bench_floor [--rows N] [--repeats R] [--dir DIR]
Prints µs per record (best of the repeats) and writes bench/results/floor-sqlite.json.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
SCHEMA = (
    "CREATE TABLE peer (number INTEGER PRIMARY KEY, subject VARCHAR(80) NOT NULL, "
    "created DATETIME DEFAULT CURRENT_TIMESTAMP NOT NULL)",
    'CREATE TABLE "Case" ("Id" VARCHAR(64) NOT NULL PRIMARY KEY, "CreatedDate" DATETIME, '
    '"Subject" VARCHAR(255), "CaseNumber" VARCHAR(30))',
    'CREATE UNIQUE INDEX ux_case_number ON "Case" ("CaseNumber")',
    "CREATE TABLE counter (field_id VARCHAR(255) NOT NULL, scope_key VARCHAR(64) NOT NULL, "
    "next_value BIGINT NOT NULL, PRIMARY KEY (field_id, scope_key))",
    "INSERT INTO counter VALUES ('Case.CaseNumber', '', 1)",
)
CASE_INSERT = 'INSERT INTO "Case" VALUES (?, ?, ?, ?)'
BUMP = (
    "UPDATE counter SET next_value = next_value + 1 "
    "WHERE field_id = 'Case.CaseNumber' AND scope_key = '' RETURNING next_value"
)


def _open(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    for statement in SCHEMA:
        conn.execute(statement)
    return conn


def _writers(conn: sqlite3.Connection) -> dict[str, Callable[[int], None]]:
    stamp = "2026-01-01 00:00:00.000000"

    def peer(i: int) -> None:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO peer (subject) VALUES ('bench')")
        conn.execute("COMMIT")

    def job_row(i: int) -> None:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(CASE_INSERT, (f"{i:032x}", stamp, "bench", f"R{i:08d}"))
        conn.execute("COMMIT")

    def job_row_and_counter(i: int) -> None:
        conn.execute("BEGIN IMMEDIATE")
        ((value,),) = conn.execute(BUMP).fetchall()
        conn.execute(CASE_INSERT, (f"{1 << 100 | value:032x}", stamp, "bench", f"{value:08d}"))
        conn.execute("COMMIT")

    return {"peer": peer, "job row": job_row, "job row + counter": job_row_and_counter}


def measure(rows: int, repeats: int, directory: Path) -> dict[str, float]:
    """µs per record of each shape, the best of `repeats` runs of `rows` records each."""
    conn = _open(directory / "floor.db")
    try:
        best: dict[str, float] = {}
        writers = _writers(conn)
        start = 0
        for _ in range(repeats):  # the shapes alternate, so a change in the machine's load falls on all
            for name, write in writers.items():
                began = time.perf_counter()
                for i in range(start, start + rows):
                    write(i)
                spent = (time.perf_counter() - began) / rows * 1e6
                best[name] = round(min(best.get(name, spent), spent), 1)
            start += rows
        return best
    finally:
        conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5000, help="records per run of each shape")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", type=Path, help="where the database file goes (default: a temporary one)")
    args = parser.parse_args()
    if args.rows < 1 or args.repeats < 1:
        raise SystemExit("--rows and --repeats must be at least 1")
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        got = measure(args.rows, args.repeats, Path(tmp))
    floor = got["job row + counter"]
    for name, us in got.items():
        print(f"sqlite  {name:18} {us:8.1f} µs/record  peer ÷ this {got['peer'] / us:5.2f}")
    print(f"the job's statements alone reach {got['peer'] / floor:.2f}× the peer's rate on one caller")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "floor-sqlite.json"
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    out.write_text(json.dumps({"measured_at": stamp, "sqlite": sqlite3.sqlite_version, "us": got}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
