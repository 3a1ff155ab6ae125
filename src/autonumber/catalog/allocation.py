"""A field's allocation policy (docs/changing-rules.md, "Block allocation"): `single` reserves the
numbers each insert needs; `blocks:N` lets a process reserve N at a time and hand them out itself."""

from __future__ import annotations

SINGLE = "single"
BLOCKS = "blocks"
MAX_BLOCK = 100_000
"""The largest block: a process that dies leaves at most this many numbers as a gap."""
CHOICES = f"{SINGLE} or {BLOCKS}:N (N from 2 to {MAX_BLOCK})"


def block_size(allocation: str) -> int:
    """How many numbers one reservation takes: 1 for `single`, N for `blocks:N`; ValueError else."""
    if allocation == SINGLE:
        return 1
    kind, _, count = allocation.partition(":")
    if kind != BLOCKS or not count.isascii() or not count.isdigit() or not 2 <= int(count) <= MAX_BLOCK:
        raise ValueError(f"allocation {allocation!r} is not {CHOICES}")
    return int(count)


def check_allocation(allocation: str, numbering: str) -> None:
    """ValueError when `allocation` is malformed, or blocks are asked of a `gapless` field (a
    block's unused rest is a gap by design)."""
    if block_size(allocation) > 1 and numbering == "gapless":
        raise ValueError(f"allocation {allocation!r} is refused on a gapless field: an unused block is a gap")
