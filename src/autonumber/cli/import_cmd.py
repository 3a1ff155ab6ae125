"""The work behind `records insert-many`: open the source, stream it through `run_import`, show
progress on stderr and print what was stored (after the COMMIT, so nothing printed is unstored)."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable
from contextlib import ExitStack
from pathlib import Path
from typing import IO, BinaryIO

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from autonumber.bulk.imports import ImportOptions, ImportSummary, run_import
from autonumber.bulk.jsonl import Line, read_lines
from autonumber.errors import RecordError
from autonumber.write.rows import Batch

PLAIN_EVERY = 5.0
"""Seconds between two plain progress lines when stderr is not a terminal."""
SPOOL_BYTES = 8 << 20
"""Records waiting for an all-or-nothing COMMIT stay in memory up to this size, then on disk."""


class ImportProgress:
    """Rows and rows/s on stderr: a Rich bar (over the file's bytes, with ETA) on a terminal, a plain
    line every PLAIN_EVERY seconds elsewhere."""

    def __init__(self, object_name: str, stream: BinaryIO, total_bytes: int | None) -> None:
        self.console = Console(stderr=True, highlight=False)
        self.stream = stream
        self.object_name = object_name
        self.rows = 0
        self.started = self.last = time.monotonic()
        self.bar: Progress | None = None
        self.task: TaskID | None = None
        if self.console.is_terminal:
            columns = (
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.fields[rows]:,} rows, {task.fields[rate]:,.0f} rows/s"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
            )
            self.bar = Progress(*columns, console=self.console, transient=True)
            self.task = self.bar.add_task(f"inserting {object_name}", total=total_bytes, rows=0, rate=0.0)
            self.bar.start()

    def advance(self, rows: int) -> None:
        """`rows` more are stored."""
        self.rows += rows
        now = time.monotonic()
        rate = self.rows / max(now - self.started, 1e-9)
        if self.bar is not None and self.task is not None:
            self.bar.update(self.task, completed=self._position(), rows=self.rows, rate=rate)
        elif now - self.last >= PLAIN_EVERY:
            self.last = now
            self.console.print(
                f"{self.object_name}: {self.rows:,} rows written, {rate:,.0f} rows/s", markup=False
            )

    def _position(self) -> int:
        try:
            return self.stream.tell()
        except OSError:
            return 0

    def close(self) -> None:
        """Remove the bar."""
        if self.bar is not None:
            self.bar.stop()


def _source(stack: ExitStack, file: str) -> tuple[BinaryIO, str, int | None]:
    """The binary stream of `file` (`-`: stdin), its name for errors, its size when it has one."""
    if file == "-":
        return sys.stdin.buffer, "<stdin>", None
    try:
        stream: BinaryIO = stack.enter_context(open(file, "rb"))  # noqa: SIM115 - closed by the stack
    except OSError as exc:
        raise RecordError(f"cannot read {file}: {exc.strerror or exc}") from None
    size = Path(file).stat().st_size if Path(file).is_file() else None
    return stream, file, size or None


def _emit_batch(out: IO[str], batch: Batch) -> None:
    for record in batch.records():
        out.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")


def run_file_import(
    url: str,
    object_name: str,
    file: str,
    options: ImportOptions,
    *,
    errors: Path | None,
    max_line_bytes: int,
    quiet: bool,
) -> None:
    """Import `file` into `object_name` on `url` and print the records (or, `quiet`, a summary)."""
    from autonumber.commands.session import platform

    with ExitStack() as stack:
        stream, source, size = _source(stack, file)
        rejects = _errors_file(stack, errors, append=options.resume)

        def rejected(line: Line, exc: RecordError) -> None:
            if rejects is not None:
                rejects.write(json.dumps({"line": line.number, "error": str(exc), "text": line.text}) + "\n")

        def lines(after: int) -> Iterable[Line]:
            return read_lines(stream, source, max_line_bytes, after)

        streaming = options.commit_every is not None  # each batch is committed: print it at once
        out: IO[str] = sys.stdout
        if not streaming and not quiet:
            out = stack.enter_context(tempfile.SpooledTemporaryFile(SPOOL_BYTES, mode="w+", encoding="utf-8"))
        progress = ImportProgress(object_name, stream, size)
        stack.callback(progress.close)

        def stored(batch: Batch) -> None:
            if not quiet:
                _emit_batch(out, batch)
            progress.advance(len(batch))

        p = stack.enter_context(platform(url))
        summary = run_import(p.records, object_name, lines, options, stored=stored, rejected=rejected)
        progress.close()
        _finish(out, summary, quiet=quiet)


def _errors_file(stack: ExitStack, path: Path | None, *, append: bool) -> IO[str] | None:
    if path is None:
        return None
    try:
        return stack.enter_context(path.open("a" if append else "w", encoding="utf-8"))
    except OSError as exc:
        raise RecordError(f"cannot write {path}: {exc.strerror or exc}") from None


def _finish(out: IO[str], summary: ImportSummary, *, quiet: bool) -> None:
    """The spooled records (all or nothing: they are stored now), then the summary line."""
    if out is not sys.stdout:
        out.seek(0)
        shutil.copyfileobj(out, sys.stdout)
    sys.stdout.flush()
    if quiet:
        typer.echo(summary.line())
    else:
        typer.echo(summary.line(), err=True)
