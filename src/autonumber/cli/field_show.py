"""How `field show` and `counter show` print a field for people: small tables (tab-separated in a pipe)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .common import show_table

if TYPE_CHECKING:
    from autonumber.commands.counters import CounterReport, NewKey
    from autonumber.commands.field_detail import FieldDetail, NewKeyView


def print_detail(d: FieldDetail) -> None:
    """The rule, then the counters, then the last gaps."""
    from rich.table import Table

    rule = Table(title=f"{d.object}.{d.field} ({d.field_id})", show_header=False)
    rule.add_column(no_wrap=True)
    rule.add_column(overflow="fold")  # never cut a format short
    for label, value in _rule_rows(d):
        rule.add_row(label, value)
    show_table(rule)
    counters = Table(title="counters")
    for head in ("scope key", "next value", "next number"):
        counters.add_column(head, overflow="fold")
    for c in d.counters:
        counters.add_row(c.scope_key or "global", str(c.next_value), c.preview or "none (quarantined)")
    if d.new_key is not None:
        counters.add_row(*new_key_cells(d.new_key))
    show_table(counters)
    if d.gaps is not None:
        _print_gaps(d)


def _rule_rows(d: FieldDetail) -> list[tuple[str, str]]:
    """Label and value of each part of the rule and of the field's state."""
    rows = [
        ("format", d.format),
        ("scope", d.scope),
        ("numbering", d.numbering),
        ("start", str(d.start)),
        ("counter width", "-" if d.counter_width is None else f"{d.counter_width} digits"),
        ("length", "-" if d.length is None else f"{d.length} characters"),
        ("time zone", d.time_zone),
        ("date source", d.date_source),
        ("fiscal year", f"from month {d.fiscal_year_start}"),
        ("allocation", d.allocation),
        ("shared counter", d.shared_counter or "none (its own)"),
        ("state", f"quarantined: {d.reason}" if d.status == "quarantined" else "ok"),
    ]
    if d.scope == "per_prefix":
        rows.append(("per_prefix keys", ", ".join(d.per_prefix_keys) or "none yet"))
    return rows


def new_key_cells(key: NewKey | NewKeyView) -> tuple[str, str, str]:
    """The row of a scope with no counter row yet: today's key, or what the record decides."""
    label = f"{key.scope_key} (today, no row yet)" if key.scope_key else "a new key (from the record)"
    return label, str(key.next_value), key.preview


def _print_gaps(d: FieldDetail) -> None:
    import typer

    assert d.gaps is not None
    typer.echo(f"gaps: {d.gaps.missing} value(s) missing of {d.gaps.checked} checked")
    for g in d.gaps.last:
        values = str(g["first"]) if g["first"] == g["last"] else f"{g['first']}-{g['last']} ({g['count']})"
        shown = f"{g['numbers']} (counter {values})" if g["numbers"] else values
        typer.echo(f"  scope {g['scope_key'] or 'global'!r}: {shown}: {g['reason']}")
    if d.gaps.missing > sum(g["count"] for g in d.gaps.last):
        typer.echo(f"  (the latest {len(d.gaps.last)} runs; `autonumber audit gaps {d.field_id}` lists all)")


def print_counters(report: CounterReport) -> None:
    """Each counter row: next value, next number (or its pattern) and floor; then a new scope's start."""
    from rich.table import Table

    shared = f", shared counter {report.shared_counter}" if report.shared_counter else ""
    table = Table(title=f"{report.field} ({report.field_id}, {report.scope}{shared})")
    for head in ("scope key", "next value", "next number", "floor (lowest allowed next)"):
        table.add_column(head, overflow="fold")
    for c in report.counters:
        shown = c.preview or "none (quarantined)"
        table.add_row(c.scope_key or "global", str(c.next_value), shown, str(c.floor))
    if report.new_key is not None:
        table.add_row(*new_key_cells(report.new_key), str(report.new_key.next_value))
    show_table(table)
