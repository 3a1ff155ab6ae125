"""Block allocation (docs/engine.md, "Block allocation"): a field with `blocks:N` reserves N values
of a counter in one reservation and hands them out from this process, so writers on different
Galera nodes (or many processes) touch the counter row once per block instead of once per number.

Every value still comes from a committed reservation, journaled as one `reserved` range owned by
this process, so values stay unique; they are not in creation order across processes. A block's
rest that is never handed out (the process exits, the rule changes, a per-period scope rolls over)
is a gap: journaled as `failed` with its reason when this process can tell, else reported by the gap
audit from the `reserved` line and the owner that is gone.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from autonumber.catalog.cache import Rule

from .journal import FAILED, Range
from .reservation import Reservation

CacheKey = tuple[str, tuple[tuple[str, str], ...]]
Reserve = Callable[[Rule, int, Mapping[str, str]], Reservation]
Release = Callable[[list[tuple[Range, str, str]]], None]


@dataclass
class _Block:
    """The values [next, end) of one reservation, still to hand out."""

    rule: Rule
    scope_key: str
    assigned_at: datetime
    reserved_mono: float
    next: int
    end: int

    def now(self, mono: float) -> datetime:
        """The database clock now, estimated from the reservation's sample and local elapsed time."""
        return self.assigned_at + timedelta(seconds=max(0.0, mono - self.reserved_mono))

    def rest(self) -> Range:
        return Range(self.rule.counter_id, self.scope_key, self.next, self.end - self.next)


@dataclass(frozen=True)
class Piece:
    """`count` values from `first` handed out of one block, under one scope key and clock estimate."""

    scope_key: str
    assigned_at: datetime
    first: int
    count: int


class Blocks:
    """The blocks this process holds, one per (field, cross values); thread-safe: one lock per
    counter, so a refill is one reservation that every waiting thread then draws from."""

    def __init__(
        self, reserve: Reserve, release: Release, mono: Callable[[], float] = time.monotonic
    ) -> None:
        self._reserve = reserve
        self._release = release
        self._mono = mono
        self._blocks: dict[CacheKey, _Block] = {}
        self._locks: dict[CacheKey, threading.Lock] = {}
        self._guard = threading.Lock()

    def _lock(self, key: CacheKey) -> threading.Lock:
        # the counter's lock is made once; afterwards a dict read (atomic under Python's lock)
        # finds it, so concurrent callers of one counter do not queue on the guard as well
        lock = self._locks.get(key)
        if lock is None:
            with self._guard:
                lock = self._locks.setdefault(key, threading.Lock())
        return lock

    def take(self, rule: Rule, n: int, cross: Mapping[str, str]) -> list[Piece]:
        """`n` values for one (field, cross values) group, from the held block and refills."""
        key = (rule.field_id, tuple(sorted(cross.items())))
        pieces: list[Piece] = []
        with self._lock(key):
            while n > 0:
                block = self._usable(key, rule, cross)
                if block is None:
                    res = self._reserve(rule, max(rule.block_size, n), cross)
                    block = _Block(
                        rule, res.scope_key, res.assigned_at, self._mono(), res.first, res.first + res.count
                    )
                    self._blocks[key] = block
                count = min(n, block.end - block.next)
                pieces.append(Piece(block.scope_key, block.now(self._mono()), block.next, count))
                block.next += count
                n -= count
        return pieces

    def _usable(self, key: CacheKey, rule: Rule, cross: Mapping[str, str]) -> _Block | None:
        """The held block if it can still serve `rule`; a stale one's rest is released as a gap."""
        block = self._blocks.get(key)
        if block is None:
            return None
        if block.next < block.end:
            if block.rule is not rule:
                reason = "unused rest of a block: the rule changed"
            elif rule.scope != "global" and rule.scope_key(block.now(self._mono()), cross) != block.scope_key:
                reason = "unused rest of a block: its scope period ended"
            else:
                return block
            self._release([(block.rest(), FAILED, reason)])
        del self._blocks[key]
        return None

    def give_up(self, counter_id: str, scope_key: str, reason: str) -> None:
        """Forget the held blocks of one counter scope, journaling their rest as a gap with `reason`:
        a value of theirs was found already stored by a row written outside the product, so the
        rest may hold more; the next take reserves past what the scope stores (engine/skip.py)."""
        scope = (counter_id, scope_key)
        with self._guard:
            keys = [k for k, b in self._blocks.items() if (b.rule.counter_id, b.scope_key) == scope]
        for key in keys:
            with self._lock(key):
                block = self._blocks.get(key)
                if block is None or (block.rule.counter_id, block.scope_key) != scope:
                    continue
                del self._blocks[key]
                if block.next < block.end:
                    self._release([(block.rest(), FAILED, reason)])

    def release_all(self, reason: str = "unused rest of a block: the process closed its platform") -> None:
        """Journal every held block's rest as a gap and forget the blocks (Platform.close)."""
        with self._guard:
            held, self._blocks = self._blocks, {}
        rests = [(b.rest(), FAILED, reason) for b in held.values() if b.next < b.end]
        if rests:
            self._release(rests)
