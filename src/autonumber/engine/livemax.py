"""The largest counter already used in one lazy scope, read from the live column (§5.2 6.d)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from autonumber.catalog import CatalogSnapshot, Rule
from autonumber.format import TokenKind
from autonumber.format.zones import local_time

PAGE = 10_000


def like_pattern(rule: Rule, at: datetime, cross: Mapping[str, str]) -> str:
    """A LIKE pattern for values of this scope: literals, dates and cross values fixed, counter %."""
    parts: list[str] = []
    at = local_time(at, rule.zone)
    for tok in rule.format.tokens:
        if tok.kind is TokenKind.COUNTER:
            parts.append("%")
        elif tok.kind is TokenKind.LITERAL:
            parts.append(_escape(tok.text))
        elif tok.ref is not None:
            value = cross.get(tok.ref.key)
            parts.append(_escape(value) if value else "%")
        else:
            parts.append(_date(tok.kind, at))
    return "".join(parts)


def _date(kind: TokenKind, at: datetime) -> str:
    return {
        TokenKind.YEAR4: f"{at.year:04d}",
        TokenKind.YEAR2: f"{at.year % 100:02d}",
        TokenKind.MONTH: f"{at.month:02d}",
        TokenKind.DAY: f"{at.day:02d}",
    }[kind]


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def live_max_reader(db: Engine, snapshot: Callable[[], CatalogSnapshot]) -> Callable[
    [Rule, str, datetime, Mapping[str, str]], int
]:
    """Build the engine's live-max function over the fresh-read pool."""

    def live_max(rule: Rule, scope_key: str, at: datetime, cross: Mapping[str, str]) -> int:
        table = snapshot().table(rule.object_name)
        column = table.c[rule.field_name]
        pattern = rule.format.scan_pattern()
        best = 0
        stmt = sa.select(column).where(column.like(like_pattern(rule, at, cross), escape="\\"))
        with db.connect() as conn:
            result = conn.execution_options(stream_results=True, yield_per=PAGE).execute(stmt)
            for (value,) in result:
                match = pattern.match(value)
                if match is not None and match.scope_key(rule.scope) == scope_key:
                    best = max(best, match.counter)
        return best

    return live_max
