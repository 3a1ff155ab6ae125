"""`python -m bench`: measure, then print the tables, write the JSON, the plots and the docs sections.

python -m bench --quick --backend postgresql
python -m bench --only cli
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

from .analysis import summarise
from .docs import write_docs
from .report import plot, terminal, write_json
from .runner import CALLERS, BenchConfig, run

DEFAULT_URLS = {
    "sqlite": "sqlite:///bench/results/bench.db",
    "mysql": "mysql+pymysql://root@127.0.0.1:3306/autonumber_bench",
    "postgresql": "postgresql+psycopg://postgres@127.0.0.1:5432/autonumber_bench",
}
SERVERS = (
    ("--mysql-url", "mysql", "MariaDB/MySQL", "AUTONUMBER_BENCH_MYSQL_URL"),
    ("--pg-url", "postgresql", "PostgreSQL", "AUTONUMBER_BENCH_PG_URL"),
)
ONLY = {
    "all": "every row, then the bench_*.py extras",
    "counter": "the hot-counter rows",
    "job": "records.insert against the native-insert and django-sequences peers, and the HTTP rows",
    "cli": "the CLI start-up row (no database)",
    "import": "bulk import (records insert-many) against the executemany and COPY peers, with peak RSS",
}


def parser() -> argparse.ArgumentParser:
    """The options `make bench`, `make bench-quick` and `make bench-job` pass."""
    p = argparse.ArgumentParser(
        prog="python -m bench",
        description="Measure the engine's strategies and the peers side by side, per backend.",
        epilog="--only: " + "; ".join(f"{k}: {v}" for k, v in ONLY.items()),
    )
    p.add_argument(
        "-b", "--backend", action="append", choices=list(DEFAULT_URLS), help="repeat it; default: all three"
    )
    p.add_argument("--quick", action="store_true", help="short cells (under 3 minutes in all)")
    p.add_argument("--sqlite-url", default=DEFAULT_URLS["sqlite"], help="SQLite file the bench recreates")
    for option, backend, server, env in SERVERS:
        p.add_argument(
            option,
            default=os.environ.get(env, DEFAULT_URLS[backend]),
            help=f"{server} database the bench DROPS and recreates (name must contain 'bench'; env {env})",
        )
    p.add_argument("--callers", type=int, action="append", help="caller count; repeat it; default 1 8 32 100")
    p.add_argument(
        "--seconds", type=float, default=0.0, help="measuring window per cell (0: 0.6 quick, 3 full)"
    )
    p.add_argument(
        "--results", type=Path, default=Path("bench/results"), help="directory of the JSON results"
    )
    p.add_argument(
        "--docs",
        type=Path,
        default=Path("docs"),
        help="write plots and the generated sections of performance.md here",
    )
    p.add_argument("--no-docs", dest="docs", action="store_const", const=None, help="write no docs or plots")
    p.add_argument(
        "--extras",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also run bench/bench_*.py (with --only all)",
    )
    p.add_argument("--only", choices=list(ONLY), default="all", help="which rows to measure")
    p.add_argument("--import-rows", type=int, action="append", help="row counts of --only import; repeat it")
    p.add_argument("--http-workers", type=int, default=2, help="Uvicorn workers of both HTTP servers")
    return p


def config_of(args: argparse.Namespace) -> BenchConfig:
    """The run the options ask for."""
    urls = {"sqlite": args.sqlite_url, "mysql": args.mysql_url, "postgresql": args.pg_url}
    chosen = args.backend or list(urls)
    only: str = args.only
    return BenchConfig(
        urls={} if only == "cli" else {b: urls[b] for b in chosen},
        quick=args.quick,
        callers=tuple(args.callers or CALLERS),
        extras=args.extras and only == "all",
        duration=args.seconds,
        counter=only in ("all", "counter"),
        job=only in ("all", "job"),
        http_workers=args.http_workers,
        cli=only in ("all", "cli"),
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the bench; exit 0 (a missed target is a finding, not a failure)."""
    p = parser()
    args = p.parse_args(argv)
    if args.http_workers < 1:
        p.error("--http-workers must be at least 1")
    if args.only == "import":
        from . import bench_import

        urls = {"sqlite": args.sqlite_url, "mysql": args.mysql_url, "postgresql": args.pg_url}
        chosen = {b: urls[b] for b in args.backend or list(urls)}
        bench_import.run(args.quick, chosen, args.import_rows)
        return 0
    doc = summarise(run(config_of(args)))
    print(terminal(doc))
    print(f"results: {write_json(doc, args.results)}")
    if args.docs is not None:
        try:
            plots = plot(doc, args.docs)
        except ImportError:
            print("plots skipped: matplotlib is not installed (pip install -e '.[bench]')")
            plots = []
        for path in plots:
            print(f"plot: {path}")
        print(f"docs: {write_docs(doc, args.docs / 'performance.md', [path.name for path in plots])}")
    return 0
