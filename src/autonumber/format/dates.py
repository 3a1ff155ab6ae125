"""The date tokens in one place: each one's width, the digits that read it back, how it renders."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .tokens import TokenKind


@dataclass(frozen=True)
class DatePart:
    """One date token: the `unit` of a datetime (taken modulo `modulo` when set), zero-padded to
    `width` digits."""

    width: int
    unit: str
    modulo: int | None = None

    @property
    def expr(self) -> str:
        """The Python expression of the shown number, over a datetime named `at`."""
        shown = f"at.{self.unit}"
        return shown if self.modulo is None else f"{shown} % {self.modulo}"

    @property
    def template(self) -> str:
        """The f-string field that renders the token (the compiled renderer's fragment)."""
        return "{" + self.expr + f":0{self.width}d}}"

    @property
    def digits(self) -> str:
        """The regex reading the token back out of a value."""
        return f"[0-9]{{{self.width}}}"

    def render(self, at: datetime) -> str:
        """The text the token shows for `at` (already on the rule's clock)."""
        value: int = getattr(at, self.unit)
        if self.modulo is not None:
            value %= self.modulo
        return f"{value:0{self.width}d}"


DATE_PARTS: dict[TokenKind, DatePart] = {
    TokenKind.YEAR4: DatePart(4, "year"),
    TokenKind.YEAR2: DatePart(2, "year", 100),
    TokenKind.MONTH: DatePart(2, "month"),
    TokenKind.DAY: DatePart(2, "day"),
}
"""Every date token kind (`TokenKind.is_date`) and how it is shown."""
