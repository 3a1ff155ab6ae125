"""The immutable `Format`: tokens plus the compiled renderer, scope keys and scan pattern."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any

from autonumber.errors import TokenResolveError

from .render import compile_renderer
from .scan import ScanPattern
from .scope import DATE_PART, KeyPlan, check_scope_name, date_component, join_key, key_plan
from .scope import per_day_key as _per_day_key
from .tokens import CrossRef, Token, TokenKind

_DATE_LEN = {TokenKind.YEAR4: 4, TokenKind.YEAR2: 2, TokenKind.MONTH: 2, TokenKind.DAY: 2}


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
    ) -> str:
        """Render one value; CounterOverflow if it does not fit, TokenResolveError if a value is empty.

        The date tokens show `assigned_at` (aware; naive is taken as UTC) on the clock of `zone`.
        """
        fn = self.__dict__["render"]
        out: str = fn(counter, assigned_at, cross, field_id=field_id, scope_key=scope_key, zone=zone)
        return out

    def scope_key(
        self,
        scope: str,
        assigned_at: datetime,
        cross: Mapping[str, str] | None = None,
        *,
        zone: tzinfo = UTC,
    ) -> str:
        """The counter's scope key: '' (global), YYYYMMDD (per_day) or token values (per_prefix);
        the day is `assigned_at`'s day on the clock of `zone`."""
        check_scope_name(scope, self.source)
        if scope == "global":
            return ""
        day = _per_day_key(assigned_at, zone)
        if scope == "per_day":
            return day
        plan = self.key_plan
        values = cross or {}
        for ref in self.cross_refs:
            if not values.get(ref.key):
                raise TokenResolveError("", ref.literal, "target null")
        date = date_component(plan, int(day[:4]), int(day[4:6]), int(day[6:]))
        return join_key([date if p == DATE_PART else values[p] for p in plan.parts])

    @property
    def fixed_length(self) -> int:
        """Rendered length without the cross-record values (literals, dates, full counter)."""
        n = 0
        for tok in self.tokens:
            if tok.kind is TokenKind.LITERAL:
                n += len(tok.text)
            elif tok.kind is TokenKind.COUNTER:
                n += tok.width
            else:
                n += _DATE_LEN.get(tok.kind, 0)
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
                n += lengths[tok.ref.key]
        return n

    def scan_pattern(self) -> ScanPattern:
        """The anchored regex reading values of this format back (built once, then cached)."""
        cached = self.__dict__.get("_scan")
        if cached is None:
            cached = ScanPattern(self.tokens, self.key_plan, self.source)
            object.__setattr__(self, "_scan", cached)
        pattern: ScanPattern = cached
        return pattern
