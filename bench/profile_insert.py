"""Profile `records.insert` (pyinstrument): N caller threads inserting Case records for a while.

    .venv/bin/python bench/profile_insert.py --url postgresql+psycopg://postgres@127.0.0.1:5432/autonumber_bench17

Prints the top entries by own time and by cumulative time, and writes bench/results/profile-*.txt.
The database is recreated (its name must contain 'bench').
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

from pyinstrument import Profiler

import autonumber

if not __package__:  # run as a file: import the `bench` package from the repository root
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench.database import recreate


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--callers", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--no-group-commit", action="store_true")
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    args = parser.parse_args()
    recreate(args.url)
    p = autonumber.connect(args.url, group_commit=not args.no_group_commit)
    stop = threading.Event()
    counts = [0] * args.callers

    def caller(i: int) -> None:
        while not stop.is_set():
            p.records.insert("Case", {"Subject": "profile"})
            counts[i] += 1

    for _ in range(20):
        p.records.insert("Case", {"Subject": "warm"})
    profiler = Profiler(interval=0.0005, async_mode="disabled")
    # pyinstrument samples the thread that started it: caller 0 runs here, the others alongside
    threads = [threading.Thread(target=caller, args=(i,)) for i in range(1, args.callers)]
    threading.Timer(args.seconds, stop.set).start()
    profiler.start()
    started = time.perf_counter()
    for t in threads:
        t.start()
    caller(0)
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    profiler.stop()
    p.close()
    rate = sum(counts) / elapsed
    text = profiler.output_text(unicode=False, color=False, show_all=False)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"profile-{int(time.time())}.txt"
    path.write_text(f"{rate:.0f} inserts/s, {args.callers} callers\n{text}", encoding="utf-8")
    print(f"{rate:.0f} inserts/s with {args.callers} caller(s); profile: {path}")
    print(text[:6000])


if __name__ == "__main__":
    main()
