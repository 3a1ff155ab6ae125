"""The bench harness: it must catch duplicates and failures, and `python -m bench` must run end to end."""

from __future__ import annotations

import importlib.util
import itertools
import json
import threading
from pathlib import Path

import pytest

import autonumber
from bench.cli import config_of, main, parser
from bench.docs import write_docs
from bench.harness import percentile, run_cell
from bench.startup import COMMANDS, label


def test_percentile_is_nearest_rank() -> None:
    samples = [float(i) for i in range(1, 101)]
    assert percentile(samples, 0.5) == 50.0
    assert percentile(samples, 0.99) == 99.0
    assert percentile([], 0.99) == 0.0


def test_a_cell_counts_duplicates_and_errors() -> None:
    counter = itertools.count()
    lock = threading.Lock()

    def flaky() -> int:
        with lock:
            n = next(counter)
        if n % 10 == 0:
            raise RuntimeError("boom")
        return n % 50  # repeats after 50 calls

    cell = run_cell(flaky, callers=4, duration=0.2, warmup=0.05)
    assert cell.errors > 0 and cell.first_error == "RuntimeError: boom"
    assert cell.duplicates > 0
    assert cell.as_dict()["unique"] is False


def test_a_cell_of_unique_values_is_unique() -> None:
    counter = itertools.count()
    lock = threading.Lock()

    def ok() -> int:
        with lock:
            return next(counter)

    cell = run_cell(ok, callers=8, duration=0.2, warmup=0.05)
    assert cell.ops > 0 and cell.duplicates == 0 and cell.errors == 0
    assert cell.as_dict()["unique"] is True


def test_missed_targets_read_as_one_row_per_backend_and_kind() -> None:
    from bench.job_report import missed_rows

    def target(name: str, value: float, met: bool, backend: str = "mysql") -> dict[str, object]:
        return {"backend": backend, "target": name, "value": value, "goal": "≥ 1×", "met": met}

    rows = missed_rows(
        [
            target("caller txn ÷ native insert @1×8", 0.46, False),
            target("caller txn ÷ native insert @1×32", 1.2, True),
            target("caller txn ÷ native insert @1×100", 0.59, False),
            target("caller txn ÷ native insert @1×8", 0.7, False, "postgresql"),
            target("HTTP POST ÷ FastAPI", 1.8, False),
        ]
    )
    assert rows == [
        ["MariaDB", "caller txn ÷ native insert", "@1×8 0.46 (≥ 1×); @1×100 0.59 (≥ 1×)"],
        ["PostgreSQL", "caller txn ÷ native insert", "@1×8 0.70 (≥ 1×)"],
        ["MariaDB", "HTTP POST ÷ FastAPI", "1.80 (≥ 1×)"],
    ]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_bench_command_writes_json_plots_and_docs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "performance.md").write_text("# Performance\n\nhand-written text\n", encoding="utf-8")
    args = [
        "--quick", "--backend", "sqlite", "--callers", "1", "--callers", "4",
        "--seconds", "0.2", "--no-extras",
        "--sqlite-url", f"sqlite:///{tmp_path / 'bench.db'}",
        "--results", str(tmp_path / "results"), "--docs", str(docs),
    ]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "engine:combining" in out
    (path,) = (tmp_path / "results").glob("*.json")
    doc = json.loads(path.read_text(encoding="utf-8"))
    cells = doc["backends"]["sqlite"]["cells"]
    assert {"engine:cas", "engine:atomic", "engine:combining"} <= set(cells)
    assert all(row["unique"] for rows in cells.values() for row in rows)
    text = (docs / "performance.md").read_text(encoding="utf-8")
    assert "hand-written text" in text and "<!-- bench:end -->" in text
    plots = [Path(line.removeprefix("plot: ")).name for line in out.splitlines() if line.startswith("plot: ")]
    write_docs(doc, docs / "performance.md", plots)  # a second run's rewrite, without measuring again
    again = (docs / "performance.md").read_text(encoding="utf-8")
    assert again == text
    assert again.count("<!-- bench:begin") == 1 and again.count("<!-- bench-cli:begin") == 1
    job = doc["job"]["sqlite"]
    assert {"records.insert", "peer:native-insert", "peer:odoo-sequence"} <= set(job["cells"])
    assert all(row["unique"] and not row["errors"] for rows in job["cells"].values() for row in rows)
    assert all(v["stored_duplicates"] == 0 for v in job["stored"].values())
    assert {(r["label"], r["work_ms"]) for r in job["cells"]["records.insert"]} == {
        ("1×1", 0.0),
        ("1×4", 0.0),
        ("1×4", 2.0),
        ("1×4", 10.0),
    }
    # SQLite numbers a caller's record on the caller's connection, blocks or not: no blocks row
    assert "records.insert (blocks, peer's connections)" in job["skipped"]
    assert "<!-- bench-job:end -->" in text and "records.insert" in text
    startup = doc["cli"]["rows"]
    assert [r["command"] for r in startup] == [label(args) for args, _ in COMMANDS]
    assert startup[0]["command"] == "autonumber --help"
    assert all(r["errors"] == 0 and 0 < r["best_s"] <= r["median_s"] for r in startup)
    targets = {t["target"] for t in doc["cli_targets"]}
    assert targets == {f"{r['command']} median start-up, s" for r in startup}
    assert "<!-- bench-cli:end -->" in text and "autonumber --help" in text


def test_only_cli_measures_no_database() -> None:
    config = config_of(parser().parse_args(["--only", "cli"]))
    assert config.cli and not config.counter and not config.job and not config.extras
    assert dict(config.urls) == {}
    full = config_of(parser().parse_args(["--quick", "--backend", "sqlite"]))
    assert full.cli and full.counter and full.job and full.extras and list(full.urls) == ["sqlite"]


def test_the_installed_package_holds_no_benchmark() -> None:
    import autonumber

    assert importlib.util.find_spec("autonumber.bench") is None
    assert not list(Path(autonumber.__file__).parent.rglob("*bench*"))


WRK_OUTPUT = """Running 5s test @ http://127.0.0.1:8000/cases
  2 threads and 100 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    90.12ms   20.01ms 301.55ms   80.00%
    Req/Sec   560.12     80.10   700.00     70.00%
  Latency Distribution
     50%   85.10ms
     75%   99.00ms
     90%  120.00ms
     99%    1.20s
  5600 requests in 5.01s, 1.10MB read
  Socket errors: connect 0, read 2, write 0, timeout 1
  Non-2xx or 3xx responses: 4
Requests/sec:   1117.76
Transfer/sec:    224.00KB
"""


def test_wrk_output_is_parsed_with_units_and_failures() -> None:
    from bench.http_rows import parse_wrk

    row = parse_wrk(WRK_OUTPUT)
    assert row["throughput"] == 1117.76 and row["requests"] == 5600
    assert row["p50_ms"] == 85.1 and row["p99_ms"] == 1200.0
    assert row["errors"] == 4 + 3  # non-2xx plus socket errors: a failed request is never a result


def test_pairs_alternate_both_sides_and_take_the_median_ratio(tmp_path: Path) -> None:
    from bench.pairs import SIDES, run_pairs

    # the warm-up takes each side's first, slow calls (connect, compile); a window of 0.6 s then
    # holds hundreds of SQLite inserts even on a loaded machine (0.3 s once saw none during a full
    # suite run: a stall of the disk the other workers' servers share)
    out = run_pairs(f"sqlite:///{tmp_path / 'pairs.db'}", "sqlite", [1, 2], rounds=3, seconds=0.6, warmup=0.3)
    assert list(out["cells"]) == ["1", "2"]
    for cell in out["cells"].values():
        ours, peer = cell[SIDES[0]], cell[SIDES[1]]
        assert len(ours) == len(peer) == 3 and min(ours) > 0 and min(peer) > 0
        assert cell["ratios"] == [round(a / b, 3) for a, b in zip(ours, peer, strict=True)]
        assert cell["median_ratio"] == sorted(cell["ratios"])[1]


def test_the_cell_cpu_bench_measures_both_sides_and_counts_shared_reservations(tmp_path: Path) -> None:
    from bench.bench_cpu import measure_cell

    rows = measure_cell(f"sqlite:///{tmp_path / 'cell.db'}", callers=2, work_ms=0.0, seconds=0.6)
    assert list(rows) == ["records.insert (peer's connections)", "peer:native-insert"]
    for row in rows.values():
        assert row["records_per_s"] > 0 and row["cpu_us_per_record"] > 0 and row["core_share"] > 0
    # SQLite numbers a record in a caller's transaction by the counter's UPDATE and its INSERT in
    # that transaction: no reservation of its own, so none is counted (nor for the peer)
    assert all("callers_per_reservation" not in row for row in rows.values())


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_the_cell_cpu_bench_counts_the_callers_a_postgresql_reservation_served(db_url: str) -> None:
    """On a server a record in a caller's transaction is numbered by a reservation of its own,
    which concurrent callers may share (the combiner): each caller is counted once."""
    import sqlalchemy as sa

    from bench.bench_cpu import measure_cell

    test_url = sa.engine.make_url(db_url)
    url = test_url.set(database=f"{test_url.database}_cellbench")
    try:
        rows = measure_cell(url.render_as_string(hide_password=False), callers=4, work_ms=1.0, seconds=0.6)
        shared = rows["records.insert (peer's connections)"]["callers_per_reservation"]
        assert 1.0 <= shared <= 4.0
    finally:
        admin = sa.create_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{url.database}" WITH (FORCE)'))
        admin.dispose()


def test_the_odoo_peer_numbers_each_record_once_in_its_transaction(db_url: str) -> None:
    """The Odoo-style peer on every backend: prefix + padded value of the database's sequence (SQLite:
    the definition row's counter), one number per stored row, none twice across threads."""
    from bench.odoo_peer import PADDING, PREFIX, OdooSequence

    peer = OdooSequence(db_url, pool_max=4)
    try:
        op = peer.op_for(4, work=0.001)
        got: list[object] = []
        threads = [threading.Thread(target=lambda: got.extend(op() for _ in range(25))) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        peer.end_cell()
        assert len(got) == 100 and len(set(got)) == 100
        assert all(str(n).startswith(PREFIX) and len(str(n)) == len(PREFIX) + PADDING for n in got)
        assert peer.verify() == {"stored_rows": 100, "stored_duplicates": 0}
    finally:
        peer.close()


def test_the_import_bench_times_the_cli_and_the_same_shape_script_as_whole_processes(tmp_path: Path) -> None:
    """Both contestants write every line once, the script's numbers from its counter row, and the
    point carries the ratio and the memory difference the goals are read from."""
    import sqlalchemy as sa

    from bench import bench_import

    url, rows = f"sqlite:///{tmp_path / 'import.db'}", 12_345
    point = bench_import.bench_backend(url, [rows], tmp_path, floor=False)["points"][0]
    assert point["import"]["rows"] == point["script"]["rows"] == point["executemany"]["rows"] == rows
    assert point["vs_script"] == round(point["script"]["seconds"] / point["import"]["seconds"], 2)
    assert point["rss_over_script_mb"] == round(
        point["import"]["peak_rss_mb"] - point["script"]["peak_rss_mb"], 1
    )
    bench_import._prepare(url)
    assert bench_import.measure(url, tmp_path / f"cases-{rows}.jsonl", "script")["rows"] == rows
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        numbers = conn.execute(sa.text("SELECT CaseNumber FROM import_script_case")).scalars().all()
        counter = conn.execute(sa.text("SELECT next_number FROM import_counter")).scalar_one()
    engine.dispose()
    assert sorted(numbers) == [f"{n:08d}" for n in range(1, rows + 1)] and counter == rows + 1
    assert "import ÷ script speed" in bench_import.markdown(
        [{"backends": [{"backend": "sqlite", "points": [point]}]}]
    )


def test_the_import_bench_takes_a_backend_name_or_a_url_and_refuses_anything_else(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import argparse

    from bench.bench_import import scratch_url
    from bench.cli import DEFAULT_URLS

    parser = argparse.ArgumentParser(prog="bench_import")
    assert scratch_url(parser, "sqlite") == DEFAULT_URLS["sqlite"]
    assert scratch_url(parser, "sqlite:///elsewhere.db") == "sqlite:///elsewhere.db"
    with pytest.raises(SystemExit) as exited:
        scratch_url(parser, "nonsense")
    assert exited.value.code == 2
    assert (
        "--db 'nonsense': neither a database URL nor one of sqlite, mysql, postgresql"
        in capsys.readouterr().err
    )


def test_the_sqlite_floor_bench_times_each_shape_on_the_driver(tmp_path: Path) -> None:
    """The peer's row, the job's row and the job's row with its counter, each in its own
    transaction: every shape wrote its rows, and the job's counter adds a statement to its row."""
    import sqlite3

    from bench.bench_floor import measure

    got = measure(rows=40, repeats=2, directory=tmp_path)
    assert set(got) == {"peer", "job row", "job row + counter"} and min(got.values()) > 0
    with sqlite3.connect(tmp_path / "floor.db") as conn:
        counts = [conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in ("peer", "Case")]
        (after,) = conn.execute("SELECT next_value FROM counter").fetchone()
    assert counts == [80, 160] and after == 1 + 80  # 2 repeats × 40 rows; the counter moved once per row


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_the_blocks_contestant_numbers_from_blocks_and_gives_the_field_back(db_url: str) -> None:
    """The blocks contestant gives the job's field `blocks:BLOCK` while it runs (its records'
    numbers come from one block: consecutive, one reservation) and `single` again when it closes,
    for the contestants after it that share the field."""
    from bench.job import BLOCK, BLOCKS, make
    from support import bootstrap_url

    bootstrap_url(db_url)
    contestant = make(BLOCKS, db_url, "postgresql")
    try:
        assert contestant.platform.catalog.current().rule("Case.CaseNumber").block_size == BLOCK
        op = contestant.op_for(2, work=0.001)
        numbers = sorted(int(str(op())) for _ in range(5))
    finally:
        contestant.close()
    assert numbers == list(range(numbers[0], numbers[0] + 5))
    with autonumber.connect(db_url) as p:
        assert p.catalog.current().rule("Case.CaseNumber").block_size == 1
        assert p.records.insert("Case", {"Subject": "after"})["CaseNumber"] == f"{numbers[0] + BLOCK:08d}"
