"""`autonumber bench`: a thin shell over `autonumber.bench` (tables, JSON, plots, docs section)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from autonumber.errors import ConfigError

DEFAULT_URLS = {
    "sqlite": "sqlite:///bench/results/bench.db",
    "mysql": "mysql+pymysql://root@127.0.0.1:3306/autonumber_bench",
    "postgresql": "postgresql+psycopg://postgres@127.0.0.1:5432/autonumber_bench",
}


def bench(
    backend: Annotated[
        list[str] | None,
        typer.Option("--backend", "-b", help="sqlite, mysql or postgresql; repeat it; default: all three."),
    ] = None,
    quick: Annotated[bool, typer.Option("--quick", help="Short cells (under 3 minutes in all).")] = False,
    sqlite_url: Annotated[str, typer.Option("--sqlite-url", help="SQLite file the bench recreates.")] = (
        DEFAULT_URLS["sqlite"]
    ),
    mysql_url: Annotated[
        str,
        typer.Option(
            "--mysql-url",
            envvar="AUTONUMBER_BENCH_MYSQL_URL",
            help="MariaDB/MySQL database the bench DROPS and recreates (name must contain 'bench').",
        ),
    ] = DEFAULT_URLS["mysql"],
    pg_url: Annotated[
        str,
        typer.Option(
            "--pg-url",
            envvar="AUTONUMBER_BENCH_PG_URL",
            help="PostgreSQL database the bench DROPS and recreates (name must contain 'bench').",
        ),
    ] = DEFAULT_URLS["postgresql"],
    callers: Annotated[
        list[int] | None, typer.Option("--callers", help="Caller counts; default 1 8 32 100.")
    ] = None,
    seconds: Annotated[
        float, typer.Option("--seconds", help="Measuring window per cell (0: 0.6 quick, 3 full).")
    ] = 0.0,
    results: Annotated[Path, typer.Option("--results", help="Directory of the JSON results.")] = Path(
        "bench/results"
    ),
    docs: Annotated[
        Path | None,
        typer.Option("--docs", help="Write plots and the generated section of performance.md here."),
    ] = Path("docs"),
    extras: Annotated[bool, typer.Option("--extras/--no-extras", help="Also run bench/bench_*.py.")] = True,
    only: Annotated[
        str,
        typer.Option(
            "--only",
            help="all; counter (the hot-counter rows); job (records.insert against the native-insert "
            "and django-sequences peers, and the HTTP rows).",
        ),
    ] = "all",
    http_workers: Annotated[
        int, typer.Option("--http-workers", min=1, help="Uvicorn workers of both HTTP servers.")
    ] = 2,
) -> None:
    """Measure the engine's strategies and the peers on one hot counter, side by side, per backend.

    Example: autonumber bench --quick --backend postgresql
    """
    from autonumber.bench import CALLERS, BenchConfig, run
    from autonumber.bench.analysis import summarise
    from autonumber.bench.docs import write_docs
    from autonumber.bench.report import plot, terminal, write_json

    urls = {"sqlite": sqlite_url, "mysql": mysql_url, "postgresql": pg_url}
    chosen = backend or list(urls)
    unknown = [b for b in chosen if b not in urls]
    if unknown:
        raise ConfigError(f"unknown --backend {', '.join(unknown)}; use sqlite, mysql or postgresql")
    if only not in ("all", "counter", "job"):
        raise ConfigError(f"unknown --only {only}; use all, counter or job")
    config = BenchConfig(
        urls={b: urls[b] for b in chosen},
        quick=quick,
        callers=tuple(callers or CALLERS),
        extras=extras and only == "all",
        duration=seconds,
        counter=only != "job",
        job=only != "counter",
        http_workers=http_workers,
    )
    doc = summarise(run(config, log=typer.echo))
    typer.echo(terminal(doc))
    path = write_json(doc, results)
    typer.echo(f"results: {path}")
    if docs is not None:
        try:
            plots = plot(doc, docs)
        except ImportError:
            typer.echo("plots skipped: matplotlib is not installed (pip install 'autonumber[bench]')")
            plots = []
        for p in plots:
            typer.echo(f"plot: {p}")
        typer.echo(f"docs: {write_docs(doc, docs / 'performance.md', [p.name for p in plots])}")
