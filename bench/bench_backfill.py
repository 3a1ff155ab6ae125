"""Backfill: `autonumber field add … --backfill` numbering rows that exist, in rows/s, against the one
UPDATE a DBA would write instead (ROW_NUMBER() over CreatedDate, Id; SQLite and PostgreSQL).

Run: .venv/bin/python -m bench.bench_backfill --rows 1000000 --db sqlite:///scratch.db [--db URL …]
Every --db is a SCRATCH database: all its tables are dropped. Prints one line per run and writes
bench/results/backfill.json.

- backfill: `autonumber.backfill.backfill` on a field just added (batches of --batch-size, one
  transaction and one reservation each, resumable), the rows inserted beforehand without numbers.
- peer (not MariaDB): one `UPDATE … FROM (SELECT Id, ROW_NUMBER() OVER (ORDER BY CreatedDate, Id))`
  in one transaction on a second column: no counter, not resumable, no concurrent writer safety.
"""

from __future__ import annotations

import argparse
import json
import os
import platform as host
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa

RESULTS = Path(__file__).resolve().parent / "results"
FILL = 20_000


def _prepare(url: str, rows: int) -> None:
    """Wipe, bootstrap the core pack, add a plain peer column, insert `rows` accounts without numbers."""
    from autonumber.db import create_engine
    from autonumber.setup.bootstrap import bootstrap
    from autonumber.setup.report import wipe

    engine = create_engine(url)
    try:
        wipe(engine)
        bootstrap(engine)
        with engine.begin() as conn:
            conn.execute(
                sa.text('ALTER TABLE "Account" ADD COLUMN "Peer_No__c" VARCHAR(30)'.replace('"', _q(url)))
            )
        table = sa.Table("Account", sa.MetaData(), autoload_with=engine)
        start = datetime(2026, 1, 1, tzinfo=UTC).replace(tzinfo=None)
        for at in range(0, rows, FILL):
            batch = [
                {"Id": uuid.uuid4().hex, "CreatedDate": start + timedelta(seconds=i // 3), "Name": f"a{i}"}
                for i in range(at, min(rows, at + FILL))
            ]
            with engine.begin() as conn:
                conn.execute(sa.insert(table), batch)
    finally:
        engine.dispose()


def _q(url: str) -> str:
    return "`" if url.startswith("mysql") else '"'


def _backfill(url: str, batch_size: int) -> dict[str, Any]:
    import autonumber
    from autonumber.backfill import backfill
    from autonumber.db import create_engine
    from autonumber.rules import RuleRequest, RuleSpec, commit_requests

    engine = create_engine(url)
    try:
        commit_requests(engine, [RuleRequest("add", RuleSpec("Account", "Member_No__c", "MB-{00000000}"))])
    finally:
        engine.dispose()
    with autonumber.connect(url) as p:
        began, cpu = time.perf_counter(), time.process_time()
        result = backfill(p, "Account.Member_No__c", batch_size=batch_size)
        seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    return {
        "rows": result.rows,
        "batches": result.batches,
        "seconds": seconds,
        "rows_per_s": result.rows / seconds,
        "client_cpu_seconds": cpu,
        "load_average": os.getloadavg()[0],
    }


def _peer(url: str) -> dict[str, Any] | None:
    """The single UPDATE; None on the MySQL family (no UPDATE … FROM)."""
    if url.startswith("mysql"):
        return None
    from autonumber.db import create_engine

    engine = create_engine(url)
    sql = (
        'UPDATE "Account" SET "Peer_No__c" = \'P-\' || CAST(n.rn AS VARCHAR(20)) FROM '
        '(SELECT "Id", ROW_NUMBER() OVER (ORDER BY "CreatedDate", "Id") AS rn FROM "Account") AS n '
        'WHERE "Account"."Id" = n."Id"'
    )
    try:
        began = time.perf_counter()
        with engine.begin() as conn:
            rows = conn.execute(sa.text(sql)).rowcount
        seconds = time.perf_counter() - began
    finally:
        engine.dispose()
    return {"rows": rows, "seconds": seconds, "rows_per_s": rows / seconds}


def run(urls: list[str], rows: int, batch_size: int, path: Path) -> list[dict[str, Any]]:
    """Prepare, backfill and run the peer on every database; print a line each and rewrite the
    JSON after each database (a long run keeps what it measured)."""
    out: list[dict[str, Any]] = []
    for url in urls:
        backend = sa.engine.make_url(url).get_backend_name()
        _prepare(url, rows)
        mine = _backfill(url, batch_size)
        peer = _peer(url)
        print(
            f"{backend}: backfill {mine['rows']} rows in {mine['seconds']:.1f} s = "
            f"{mine['rows_per_s']:,.0f} rows/s (batches of {batch_size}; client CPU "
            f"{mine['client_cpu_seconds']:.1f} s, load average {mine['load_average']:.1f})"
            + (
                f"; peer single UPDATE {peer['seconds']:.1f} s = {peer['rows_per_s']:,.0f} rows/s"
                if peer
                else ""
            ),
            flush=True,
        )
        out.append(
            {"backend": backend, "rows": rows, "batch_size": batch_size, "backfill": mine, "peer": peer}
        )
        _write(path, out)
    return out


def _write(path: Path, runs: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {"when": datetime.now(UTC).isoformat(), "cpus": os.cpu_count(), "machine": host.machine()}
    path.write_text(json.dumps({"meta": meta, "runs": runs}, indent=2) + "\n")
    print(f"wrote {path}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--batch-size", type=int, default=1_000)
    parser.add_argument("--db", action="append", required=True, help="a SCRATCH database URL (repeatable)")
    parser.add_argument("--out", type=Path, default=RESULTS / "backfill.json")
    args = parser.parse_args(argv)
    run(args.db, args.rows, args.batch_size, args.out)


if __name__ == "__main__":
    main()
