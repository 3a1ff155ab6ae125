"""One call behind `autonumber format check`: parse, validate what can be, summarize."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .catalog_view import CatalogView
from .model import Format
from .parser import parse_format
from .scope import validate_scope

if TYPE_CHECKING:  # the metadata rules need pydantic, a plain check does not (CLI start-up)
    from .token_refs import TokenRef


@dataclass(frozen=True)
class FormatReport:
    """What a valid format looks like; `max_length` is None when cross lengths are unknown."""

    format: Format
    scope: str
    max_length: int | None
    token_refs: list[TokenRef] = field(default_factory=list)
    source_object: str | None = None

    def lines(self) -> list[str]:
        """Human summary, one fact per line."""
        fmt = self.format
        cross = ", ".join(r.literal for r in fmt.cross_refs) or "none"
        if self.max_length is not None:
            length = str(self.max_length)
        else:
            length = f"{fmt.fixed_length} + the cross-record values"
        out = [
            f"ok: {fmt.source}",
            f"  scope:         {self.scope}",
            f"  counter width: {fmt.counter_width} (largest value {'9' * fmt.counter_width})",
            f"  date tokens:   {' '.join(fmt.date_kinds) or 'none'}",
            f"  cross tokens:  {cross}",
            f"  max length:    {length}",
        ]
        if self.token_refs:
            from .token_refs import describe_chain
        for ref in self.token_refs:
            chains = " | ".join(describe_chain(c, arrow="->") for c in ref.fkChains)
            out.append(f"  {ref.tokenLiteral} via {chains} ({ref.readStrategy})")
        return out


def check_format(
    fmt: str,
    *,
    scope: str = "global",
    catalog: CatalogView | None = None,
    source_object: str | None = None,
    target_field: str | None = None,
    overrides: Sequence[Mapping[str, Any]] | None = None,
) -> FormatReport:
    """Parse and check a format; with a catalog and source object, run the metadata rules too."""
    parsed = parse_format(fmt)
    validate_scope(parsed, scope)
    if catalog is None or source_object is None:
        length = parsed.fixed_length if not parsed.cross_refs else None
        return FormatReport(parsed, scope, length)
    from .validate import cross_max_lengths, validate_format

    refs = validate_format(
        parsed,
        source_object=source_object,
        catalog=catalog,
        target_field=target_field,
        scope=scope,
        overrides=overrides,
    )
    try:
        length = parsed.max_length(cross_max_lengths(parsed, refs, source_object, catalog, 5))
    except Exception:  # unknown MaxLength without a target column: nothing to bound against
        length = None
    return FormatReport(parsed, scope, length, refs, source_object)
