"""The date and time tokens in one place: each one's width, the digits that read it back, how it
renders. Fiscal-year tokens also need the rule's first fiscal month (`fy`, 13 for the calendar
year: `at.month >= 13` is never true), so every expression is over `at` and `fy`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from autonumber.errors import FormatError

from .tokens import FISCAL_MONTHS, TokenKind

CALENDAR = 13
"""The `fy` of a rule whose fiscal year is the calendar year (fiscal_year_start 1)."""


def check_fiscal_year_start(month: object, where: str) -> int:
    """A fiscal year starts on a month 1-12; FormatError (rule 0) naming `where` otherwise."""
    if isinstance(month, bool) or not isinstance(month, int) or month not in FISCAL_MONTHS:
        raise FormatError(
            0, f"{where}: fiscal_year_start {month!r} must be a month 1-12 (1: the calendar year)"
        )
    return month


def fiscal_month(fiscal_year_start: int) -> int:
    """The `fy` the renderer takes for a rule's fiscal_year_start (1-12)."""
    return CALENDAR if fiscal_year_start <= 1 else fiscal_year_start


def fiscal_year(at: datetime, fiscal_year_start: int) -> int:
    """The fiscal year of `at`, named by the calendar year in which it ends (April start:
    2026-03-31 is in 2026, 2026-04-01 in 2027)."""
    return at.year + (at.month >= fiscal_month(fiscal_year_start))


@dataclass(frozen=True)
class DatePart:
    """One date or time token: `unit` of a datetime (or the fiscal year when `fiscal`), taken
    modulo `modulo` when set, zero-padded to `width` digits; values read back lie in `bounds`."""

    width: int
    unit: str
    modulo: int | None = None
    fiscal: bool = False
    bounds: tuple[int, int] | None = None

    @property
    def expr(self) -> str:
        """The Python expression of the shown number, over a datetime `at` and fiscal month `fy`."""
        shown = "(at.year + (at.month >= fy))" if self.fiscal else f"at.{self.unit}"
        return shown if self.modulo is None else f"{shown} % {self.modulo}"

    @property
    def template(self) -> str:
        """The f-string field that renders the token (the compiled renderer's fragment)."""
        return "{" + self.expr + f":0{self.width}d}}"

    @property
    def digits(self) -> str:
        """The regex reading the token back out of a value."""
        return f"[0-9]{{{self.width}}}"

    def render(self, at: datetime, fiscal_year_start: int = 1) -> str:
        """The text the token shows for `at` (already on the rule's clock)."""
        value: int = fiscal_year(at, fiscal_year_start) if self.fiscal else getattr(at, self.unit)
        if self.modulo is not None:
            value %= self.modulo
        return f"{value:0{self.width}d}"

    def readable(self, value: int) -> bool:
        """Whether a number read back out of a value can be this token's."""
        return self.bounds is None or self.bounds[0] <= value <= self.bounds[1]


DATE_PARTS: dict[TokenKind, DatePart] = {
    TokenKind.YEAR4: DatePart(4, "year"),
    TokenKind.YEAR2: DatePart(2, "year", 100),
    TokenKind.MONTH: DatePart(2, "month"),
    TokenKind.DAY: DatePart(2, "day"),
    TokenKind.HOUR: DatePart(2, "hour", bounds=(0, 23)),
    TokenKind.MINUTE: DatePart(2, "minute", bounds=(0, 59)),
    TokenKind.SECOND: DatePart(2, "second", bounds=(0, 59)),
    TokenKind.FISCAL4: DatePart(4, "year", fiscal=True),
    TokenKind.FISCAL2: DatePart(2, "year", 100, fiscal=True),
}
"""Every date token kind (`TokenKind.is_date`) and how it is shown."""
