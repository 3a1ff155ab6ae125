"""Where a stored rule and a data-spec's differ, attribute by attribute (`setup apply`'s drift notes).

Every rule column is compared (format, scope, start, numbering, time zone, allocation, fiscal year,
date source, shared counter, token refs, on change) and the column length; a note names only those
that really differ, so a database that matches its data-spec prints nothing, run after run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autonumber.catalog.stored import PREFIX, StoredRule
from autonumber.format.validate import describe_date_source

from .store import RuleSpec, same_values

DATE_COLUMNS = ("auto_number_date_src", "auto_number_date_field")
LABELS = {"token_refs": "token refs", "fiscal_year_start": "fiscal year start", "on_change": "on change"}


def differences(stored: StoredRule, wanted: RuleSpec, values: Mapping[str, Any]) -> list[str]:
    """`what: stored X, data-spec Y` for each rule column that differs ([] when none does);
    `values` are the data-spec rule's validated columns (rules.store.rule_values). The length too,
    when the data-spec gives one."""
    have = stored.values
    out = []
    for column, theirs in values.items():
        if column in DATE_COLUMNS or same_values(have, {column: theirs}):
            continue
        name = column.removeprefix(PREFIX)
        label = LABELS.get(name, name.replace("_", " "))
        out.append(f"{label}: stored {_shown(have.get(column))}, data-spec {_shown(theirs)}")
    if not same_values(have, {c: values.get(c) for c in DATE_COLUMNS}):
        mine = describe_date_source(stored.date_src, stored.date_field)
        out.append(f"date source: stored {_shown(mine)}, data-spec {_shown(wanted.date_source)}")
    if wanted.length is not None and stored.max_length is not None and wanted.length != stored.max_length:
        out.append(f"length: stored {stored.max_length}, data-spec {wanted.length}")
    return out


SHOWN_APART = ("auto_number_format", "auto_number_scope", "auto_number_start", "auto_number_token_refs")
"""What a change line shows already (or derives from the format)."""


def changed(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> str:
    """`; time zone 'UTC' → 'Asia/Tokyo'`… for the other rule columns a change alters ('' if none)."""
    if before is None:
        return ""
    out = []
    for column, new in after.items():
        if column in SHOWN_APART or same_values(before, {column: new}):
            continue
        name = column.removeprefix(PREFIX)
        out.append(f"{LABELS.get(name, name.replace('_', ' '))} {_shown(before.get(column))} → {_shown(new)}")
    return "".join(f"; {line}" for line in out)


def drift_note(stored: StoredRule, wanted: RuleSpec, values: Mapping[str, Any]) -> str | None:
    """One line naming what differs, or None when the stored rule is the data-spec's."""
    found = differences(stored, wanted, values)
    if not found:
        return None
    return (
        f"kept the stored rule of {wanted.name} ({'; '.join(found)}): copy the stored rule into the "
        "data-spec to silence this"
    )


def _shown(value: Any) -> str:
    if value is None or value == "":
        return "none"
    return repr(value) if isinstance(value, str) else str(value)
