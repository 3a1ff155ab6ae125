"""The immutable `Format`: tokens plus the compiled renderer, scope keys and scan pattern."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from functools import cached_property
from typing import Any

from autonumber.errors import TokenResolveError

from .dates import DATE_PARTS
from .render import compile_renderer
from .scope import KeyPlan, check_scope_name, key_plan, prefix_key
from .scope import per_day_key as _per_day_key
from .tokens import CrossRef, Token, TokenKind
from .value_patterns import ScanPattern
from .zones import local_time


def padded_run(before: str, width: int, after: str, first: int, count: int) -> list[str]:
    """`count` consecutive numbers from `first`, each zero-padded to `width` digits between the
    fixed texts: a format that is fixed text around its counter, without its renderer."""
    return [before + str(n).zfill(width) + after for n in range(first, first + count)]


@dataclass(frozen=True)
class Format:
    """A parsed display format. Build it with `parse_format()`, which validates and caches it."""

    source: str
    tokens: tuple[Token, ...]
    counter_width: int
    date_kinds: tuple[str, ...]
    cross_refs: tuple[CrossRef, ...]

    def __post_init__(self) -> None:
        # The compiled function shadows the `render` method below on each instance, so a render
        # is one Python call with no dispatch (see render.py for why).
        object.__setattr__(self, "render", compile_renderer(self.tokens, self.counter_width))
        object.__setattr__(self, "_plan", key_plan(self.tokens))

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        from .parser import parse_format

        return parse_format, (self.source,)

    @property
    def has_date(self) -> bool:
        """True when the format shows at least one date token."""
        return bool(self.date_kinds)

    @property
    def key_plan(self) -> KeyPlan:
        """What a `per_prefix` key is made of (cross keys and the date, in token order)."""
        plan: KeyPlan = self.__dict__["_plan"]
        return plan

    def render(
        self,
        counter: int,
        assigned_at: datetime,
        cross: Mapping[str, str] | None = None,
        *,
        field_id: str = "",
        scope_key: str = "",
        zone: tzinfo = UTC,
        fiscal_year_start: int = 1,
    ) -> str:
        """Render one value; CounterOverflow if it does not fit, TokenResolveError if a value is empty
        and its token has no default.

        The date tokens show `assigned_at` (aware; naive is taken as UTC) on the clock of `zone`;
        the fiscal-year tokens count fiscal years from the month `fiscal_year_start`.
        """
        fn = self.__dict__["render"]
        out: str = fn(
            counter,
            assigned_at,
            cross,
            field_id=field_id,
            scope_key=scope_key,
            zone=zone,
            fiscal_year_start=fiscal_year_start,
        )
        return out

    def scope_key(
        self,
        scope: str,
        assigned_at: datetime,
        cross: Mapping[str, str] | None = None,
        *,
        zone: tzinfo = UTC,
        fiscal_year_start: int = 1,
    ) -> str:
        """The counter's scope key: '' (global), YYYYMMDD (per_day) or, for per_prefix, the text the
        value shows around its counter (see `prefix_key`); dates are `assigned_at` on the clock of `zone`."""
        check_scope_name(scope, self.source)
        if scope == "global":
            return ""
        if scope == "per_day":
            return _per_day_key(assigned_at, zone)
        values = dict(cross or {})
        for ref in self.cross_refs:
            if not values.get(ref.key):
                if ref.default is None:
                    raise TokenResolveError("", ref.literal, "target null")
                values[ref.key] = ref.default
        prefix, suffix = self.around_counter(assigned_at, values, zone, fiscal_year_start)
        return prefix_key(prefix, suffix)

    @property
    def counter_index(self) -> int:
        """Position of the counter token in `tokens`."""
        return next(i for i, t in enumerate(self.tokens) if t.kind is TokenKind.COUNTER)

    @cached_property
    def literal_sides(self) -> tuple[str, str] | None:
        """The fixed text before and after the counter when nothing else varies (no date, time or
        cross-record token): the value is then before + the zero-padded counter + after, which a
        database can build itself (docs/engine.md, "One statement on PostgreSQL"). Else None."""
        if any(t.kind not in (TokenKind.LITERAL, TokenKind.COUNTER) for t in self.tokens):
            return None
        at = self.counter_index
        return "".join(t.text for t in self.tokens[:at]), "".join(t.text for t in self.tokens[at + 1 :])

    def fixed_run(self, first: int, count: int) -> list[str] | None:
        """The values of `count` numbers from `first` of a format that is fixed text around its
        counter (`literal_sides`), built in one pass as `render` would build each; None for any
        other format, or when the last number does not fit (`render` then says why)."""
        sides = self.literal_sides
        if sides is None or first < 0 or first + count > 10**self.counter_width:
            return None
        return padded_run(sides[0], self.counter_width, sides[1], first, count)

    def around_counter(
        self,
        assigned_at: datetime,
        cross: Mapping[str, str],
        zone: tzinfo = UTC,
        fiscal_year_start: int = 1,
    ) -> tuple[str, str | None]:
        """The rendered text before the counter and after it (None when no token follows it)."""
        at = local_time(assigned_at, zone)
        at_ = self.counter_index
        fy = fiscal_year_start
        before = "".join(_text(t, at, cross, fy) for t in self.tokens[:at_])
        after = self.tokens[at_ + 1 :]
        return before, ("".join(_text(t, at, cross, fy) for t in after) if after else None)

    @property
    def counter_position_varies(self) -> bool:
        """True when the value's text does not fix where the counter sits: cross-record values on
        both sides of the counter whose lengths can vary independently (`{A}-{0}-{B}`)."""
        before: dict[str, int] = {}
        total: dict[str, int] = {}
        at = self.counter_index
        for i, tok in enumerate(self.tokens):
            if tok.ref is not None:
                total[tok.ref.key] = total.get(tok.ref.key, 0) + 1
                if i < at:
                    before[tok.ref.key] = before.get(tok.ref.key, 0) + 1
        b, t = sum(before.values()), sum(total.values())
        if b in (0, t):
            return False
        return any(before.get(k, 0) * t != b * n for k, n in total.items())

    @property
    def fixed_length(self) -> int:
        """Rendered length without the cross-record values (literals, dates, full counter)."""
        n = 0
        for tok in self.tokens:
            if tok.kind is TokenKind.LITERAL:
                n += len(tok.text)
            elif tok.kind is TokenKind.COUNTER:
                n += tok.width
            elif tok.kind.is_date:
                n += DATE_PARTS[tok.kind].width
        return n

    def max_length(self, cross_max: Mapping[str, int] | None = None) -> int:
        """Longest rendered value: counter 10**w-1 and each cross value at its max (rule 5).

        Raises KeyError naming the first cross key missing from `cross_max`.
        """
        lengths = cross_max or {}
        n = self.fixed_length
        for tok in self.tokens:
            if tok.ref is not None:
                if tok.ref.key not in lengths:
                    raise KeyError(tok.ref.key)
                n += max(lengths[tok.ref.key], len(tok.ref.default or ""))
        return n

    def scan_pattern(self) -> ScanPattern:
        """The anchored regex reading values of this format back (built once, then cached)."""
        cached = self.__dict__.get("_scan")
        if cached is None:
            cached = ScanPattern(self.tokens, self.key_plan, self.source)
            object.__setattr__(self, "_scan", cached)
        pattern: ScanPattern = cached
        return pattern


def _text(tok: Token, at: datetime, cross: Mapping[str, str], fiscal_year_start: int) -> str:
    """What one non-counter token renders (the same text the compiled renderer produces)."""
    if tok.kind is TokenKind.LITERAL:
        return tok.text
    if tok.ref is not None:
        value = cross.get(tok.ref.key) or tok.ref.default
        return cross[tok.ref.key] if value is None else value
    return DATE_PARTS[tok.kind].render(at, fiscal_year_start)
