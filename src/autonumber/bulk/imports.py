"""Importing a JSON Lines stream into one object: all or nothing, or batch by batch with resume.

All or nothing (the default) writes every batch in one transaction. `commit_every` commits each
batch with its numbers; a checkpoint file records progress so `resume` continues after the last
committed line. The checkpoint is written, and flushed to disk, just BEFORE each batch's COMMIT:
`{"done": <last line of the previous batch>, "pending": <last line of this batch>, "probe": <an Id
of this batch>}`. After a kill nobody knows whether the pending COMMIT landed, so resume asks the
database whether the probe Id exists: if it does the batch is stored and the import continues
after `pending`, else after `done`. No row is written twice and none is lost, and the product's
tables are not changed for it (the Ids are fresh, platform-generated version 7 UUIDs).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import (
    AutonumberError,
    CommitOutcomeUnknown,
    DatabaseUnavailable,
    ImportInterrupted,
    ImportOutcomeUnknown,
    RecordError,
)
from ..write.records import BATCH_SIZE, Records
from ..write.rows import Batch
from .collection import YoungCollections, paused_collection, quick_switches
from .jsonl import Line, rows


@dataclass(frozen=True)
class ImportOptions:
    """How an import runs; `commit_every` (rows per committed batch) replaces `batch_size`."""

    batch_size: int = BATCH_SIZE
    commit_every: int | None = None
    checkpoint: Path | None = None
    resume: bool = False
    keep_going: bool = False
    """Refused lines go to the `rejected` callback and the rest is imported (`--errors`)."""


@dataclass
class ImportSummary:
    """What an import did, for the summary line and the HTTP answer."""

    object_name: str
    inserted: int = 0
    rejected: int = 0
    resumed_after: int = 0
    last_line: int = 0
    seconds: float = 0.0
    started: float = field(default_factory=time.monotonic)

    @property
    def rate(self) -> float:
        """Rows stored per second so far."""
        elapsed = time.monotonic() - self.started
        return self.inserted / elapsed if elapsed > 0 else 0.0

    def line(self) -> str:
        """One line for a human (the CLI's `--quiet` summary and its last progress line)."""
        text = f"inserted {self.inserted} {self.object_name} records in {self.seconds:.1f} s"
        text += f" ({self.rate:,.0f} rows/s)"
        if self.rejected:
            text += f"; {self.rejected} lines rejected"
        if self.resumed_after:
            text += f"; resumed after line {self.resumed_after}"
        return text


class Checkpoint:
    """The progress file of a `commit_every` import (see the module docstring)."""

    def __init__(self, path: Path, object_name: str) -> None:
        self.path = path
        self.object_name = object_name
        self.done = 0

    def start_after(self, records: Records) -> int:
        """The last line already stored by an earlier run. No checkpoint file means the run was
        stopped before its first COMMIT (the file is written before each): start at line 1."""
        try:
            state = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return 0
        except (OSError, ValueError) as exc:
            raise RecordError(f"cannot read the checkpoint file {self.path}: {exc}") from None
        if not isinstance(state, dict) or state.get("object") != self.object_name:
            raise RecordError(f"{self.path} is not a checkpoint of an import into {self.object_name}")
        done, pending, probe = state.get("done"), state.get("pending"), state.get("probe")
        if not isinstance(done, int) or (pending is not None and not isinstance(pending, int)):
            raise RecordError(f"{self.path}: malformed checkpoint")
        if pending is not None and isinstance(probe, str) and records.exists(self.object_name, probe):
            done = pending
        self.done = done
        return done

    def fresh(self) -> int:
        """A new import: refused while an unfinished one's checkpoint is there (resume it)."""
        try:
            state = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return 0
        if isinstance(state, dict) and not state.get("finished"):
            raise RecordError(
                f"{self.path} holds the progress of an unfinished import: add --resume to continue "
                "it, or delete the file to start again"
            )
        return 0

    def before_commit(self, batch: Batch) -> None:
        """Record the batch about to commit; flushed to disk before the COMMIT is sent."""
        pending = batch.labels[-1].number
        probe = batch.last_id
        self._write({"object": self.object_name, "done": self.done, "pending": pending, "probe": probe})
        self.done = pending

    def finish(self, last_line: int) -> None:
        """The import ended: every line up to `last_line` is stored."""
        self._write({"object": self.object_name, "done": max(self.done, last_line), "finished": True})

    def _write(self, state: dict[str, Any]) -> None:
        temporary = self.path.with_name(self.path.name + ".tmp")
        with temporary.open("w", encoding="utf-8") as out:
            out.write(json.dumps(state) + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, self.path)


def run_import(
    records: Records,
    object_name: str,
    lines: Callable[[int], Iterable[Line]],
    options: ImportOptions,
    *,
    stored: Callable[[Batch], None] = lambda _: None,
    rejected: Callable[[Line, RecordError], None] = lambda _line, _exc: None,
    summary: ImportSummary | None = None,
) -> ImportSummary:
    """Import the lines `lines(after)` yields past line `after`; `stored` hears each written batch
    (committed, in `commit_every` mode; provisional until this returns, otherwise). `summary` is
    filled in as the import goes (a caller reads how far a failed import got)."""
    summary = summary or ImportSummary(object_name)
    checkpoint = _checkpoint(records, object_name, options)
    after = 0
    if checkpoint is not None:
        after = checkpoint.start_after(records) if options.resume else checkpoint.fresh()
    summary.resumed_after = after

    def refuse(line: Line, exc: RecordError) -> None:
        summary.rejected += 1
        rejected(line, exc)

    keep = refuse if options.keep_going else None
    pending = [after]  # the last line of the batch being committed

    def before_commit(batch: Batch) -> None:
        pending[0] = batch.labels[-1].number
        if checkpoint is not None:
            checkpoint.before_commit(batch)

    stream = records.insert_stream(
        object_name,
        rows(lines(after), keep),
        batch_size=options.commit_every or options.batch_size,
        commit_each=options.commit_every is not None,
        rejected=keep,
        before_commit=before_commit,
    )
    collections = YoungCollections()
    try:
        with paused_collection(), quick_switches():
            for batch in stream:
                summary.inserted += len(batch)
                summary.last_line = batch.labels[-1].number
                stored(batch)
                collections.after(len(batch))
    except (CommitOutcomeUnknown, DatabaseUnavailable) as exc:
        known = _what_is_stored(exc, summary, options, pending[0])
        if known is exc:
            raise
        raise known from exc
    if checkpoint is not None:
        checkpoint.finish(summary.last_line)
    summary.seconds = time.monotonic() - summary.started
    return summary


def _what_is_stored(
    exc: CommitOutcomeUnknown | DatabaseUnavailable,
    summary: ImportSummary,
    options: ImportOptions,
    pending: int,
) -> AutonumberError:
    """The error of an import the database failed: which lines are stored and, when a COMMIT was
    cut, which may be, with the one Id that settles them and how (docs/import.md)."""
    batched = options.commit_every is not None
    through = max(summary.last_line, summary.resumed_after) if batched else summary.resumed_after
    stored = summary.inserted if batched else 0
    resume = options.checkpoint is not None
    if isinstance(exc, CommitOutcomeUnknown) and exc.record_ids:
        unknown = (through + 1, pending if batched else summary.last_line)
        how = (
            "run the import again with --resume: it looks that Id up and continues after the lines stored"
            if resume
            else f"look that Id up before importing lines {unknown[0]}- again: if it is stored, "
            f"continue after line {unknown[1]}"
        )
        return ImportOutcomeUnknown(summary.object_name, stored, through, unknown, exc.record_ids[-1], how)
    if isinstance(exc, CommitOutcomeUnknown) or not batched:
        return exc
    how = "run the import again with --resume" if resume else f"import from line {through + 1} again"
    return ImportInterrupted(summary.object_name, stored, through, how, exc.__cause__ or exc)


def _checkpoint(records: Records, object_name: str, options: ImportOptions) -> Checkpoint | None:
    if options.commit_every is None:
        if options.resume:
            raise RecordError("--resume continues a --commit-every import; give --commit-every too")
        return None
    if options.commit_every < 1:
        raise RecordError(f"--commit-every must be at least 1, got {options.commit_every}")
    if records.catalog.current().is_adopted(object_name):
        raise RecordError(f"{object_name} is an adopted table: --commit-every needs platform-generated Ids")
    if options.checkpoint is None:
        if options.resume:
            raise RecordError("--resume needs the checkpoint file of the import (--checkpoint FILE)")
        return None  # committed batch by batch, but nothing to resume from (an HTTP import)
    return Checkpoint(options.checkpoint, object_name)
