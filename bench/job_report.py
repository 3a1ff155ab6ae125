"""The job rows in numbers: ratios to the peers, the issue's targets met or missed, the docs tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .analysis import Targets
from .job import BLOCKS, EQUAL
from .report import LABELS, md_table, stored_text

PROJECT = "records.insert"
NATIVE = "peer:native-insert"
DJANGO = "peer:django-sequences"
ODOO = "peer:odoo-sequence"
HTTP_PROJECT, HTTP_PEER = "autonumber serve", "peer:fastapi-native-insert"
SERVER_BACKENDS = ("mysql", "postgresql")
SPEED_GOALS = {"sqlite": {"1×1": 0.9, "1×8": 1.0}, "mysql": {"1×1": 1.0, "1×8": 1.0}}
SPEED_GOALS["postgresql"] = SPEED_GOALS["mysql"]
EARLIER = {"sqlite": {"1×32": 0.89, "1×100": 1.85}, "postgresql": {"1×32": 1.27, "1×100": 3.17}}
"""The floor for 32 and 100 callers: the ratios of the run before it (2026-12-01T08:32Z). The
MariaDB peer of that run collapsed on its connects, so its ratios are no floor: ≥ 1.0× there."""


def job_cell(job: Mapping[str, Any], name: str, label: str, work_ms: float = 0.0) -> Mapping[str, Any] | None:
    """One row of a job contestant by caller label (`1×100`, `4×25`) and work."""
    for row in job.get("cells", {}).get(name, []):
        if row["label"] == label and float(row["work_ms"]) == work_ms:
            return dict(row)
    return None


def _ratio(mine: Mapping[str, Any] | None, theirs: Mapping[str, Any] | None) -> float | None:
    if not mine or not theirs or not theirs["throughput"]:
        return None
    return round(float(mine["throughput"]) / float(theirs["throughput"]), 2)


def job_targets(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets on the job, per server backend (SQLite rows are reported, not targeted)."""
    out = Targets()
    for backend, job in doc.get("job", {}).items():
        if backend not in SERVER_BACKENDS:
            continue
        for label in ("1×100", "4×25"):
            mine, peer = job_cell(job, PROJECT, label), job_cell(job, NATIVE, label)
            r = _ratio(mine, peer)
            out.add(
                backend,
                f"records.insert ÷ native insert @{label}",
                r,
                "≥ 1.0×",
                None if r is None else r >= 1.0,
            )
            out.add(
                backend,
                f"records.insert (group commit on) ÷ native insert @{label}",
                r,
                "≥ 2×",
                None if r is None else r >= 2.0,
            )
            if mine and peer:
                out.add(
                    backend,
                    f"records.insert p99 @{label}, ms (peer {peer['p99_ms']:.1f})",
                    float(mine["p99_ms"]),
                    "≤ peer's p99",
                    float(mine["p99_ms"]) <= float(peer["p99_ms"]),
                )
        r = _ratio(job_cell(job, PROJECT, "1×100", 2.0), job_cell(job, DJANGO, "1×100", 2.0))
        out.add(
            backend,
            "records.insert ÷ django-sequences, 2 ms work @1×100",
            r,
            "≥ 5×",
            None if r is None else r >= 5.0,
        )
    for backend, http in doc.get("http", {}).items():
        if backend not in SERVER_BACKENDS or "cells" not in http:
            continue
        mine = next((r for r in http["cells"].get(HTTP_PROJECT, []) if r["connections"] == 100), None)
        peer = next((r for r in http["cells"].get(HTTP_PEER, []) if r["connections"] == 100), None)
        r = _ratio(mine, peer)
        out.add(
            backend,
            f"HTTP POST ÷ FastAPI native insert @100 conn, {http['workers']} workers",
            r,
            "≥ 2.0×",
            None if r is None else r >= 2.0,
        )
        if mine and peer and mine["p99_ms"] is not None and peer["p99_ms"] is not None:
            out.add(
                backend,
                f"HTTP p99 @100 conn, ms (peer {peer['p99_ms']:.1f})",
                float(mine["p99_ms"]),
                "≤ peer's p99",
                float(mine["p99_ms"]) <= float(peer["p99_ms"]),
            )
        out.add(
            backend,
            f"load generator ceiling ÷ best POST rate (×{http.get('generator_margin')})",
            http.get("generator_margin"),
            "≥ 3×",
            http.get("generator_ok"),
        )
    return out


def speed_targets(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Few callers at least as fast as a plain INSERT, and the caller's transaction with as
    many connections as the peer at least as fast as the peer."""
    out = Targets()
    for backend, job in doc.get("job", {}).items():
        for label, goal in SPEED_GOALS.get(backend, {}).items():
            _versus_native(out, backend, job, label, goal)
        for label in ("1×32", "1×100"):
            _versus_native(out, backend, job, label, EARLIER.get(backend, {}).get(label, 1.0))
        for label in ("1×8", "1×32", "1×100"):
            for work in (2.0, 10.0):
                r = _ratio(job_cell(job, EQUAL, label, work), job_cell(job, NATIVE, label, work))
                out.add(
                    backend,
                    f"caller txn +{work:g} ms, equal connections ÷ native insert @{label}",
                    r,
                    "≥ 1×",
                    _at_least(r, 1.0),
                )
        _caller_transaction(out, backend, job)
    return out


def _caller_transaction(out: Targets, backend: str, job: Mapping[str, Any]) -> None:
    """Numbers in the caller's transaction with 2 ms of work: close to the bare INSERT at 60
    callers, and never behind the peer that does the same job (the Odoo-style sequence); with
    the default allocation and with blocks (the setting the bench recommends for it)."""
    busy = "1×60"
    for name, short in ((EQUAL, "equal connections"), (BLOCKS, "blocks, equal connections")):
        r = _ratio(job_cell(job, name, busy, 2.0), job_cell(job, NATIVE, busy, 2.0))
        out.add(backend, f"caller txn +2 ms, {short} ÷ native insert @{busy}", r, "≥ 0.9×", _at_least(r, 0.9))
    for name, short in ((PROJECT, "defaults"), (EQUAL, "equal connections"), (BLOCKS, "blocks")):
        for label in ("1×8", "1×32", busy, "1×100"):
            r = _ratio(job_cell(job, name, label, 2.0), job_cell(job, ODOO, label, 2.0))
            out.add(backend, f"caller txn +2 ms, {short} ÷ odoo-style @{label}", r, "≥ 1×", _at_least(r, 1.0))


def _versus_native(out: Targets, backend: str, job: Mapping[str, Any], label: str, goal: float) -> None:
    r = _ratio(job_cell(job, PROJECT, label), job_cell(job, NATIVE, label))
    out.add(backend, f"records.insert ÷ native insert @{label}", r, f"≥ {goal:g}×", _at_least(r, goal))


def _at_least(ratio: float | None, goal: float) -> bool | None:
    return None if ratio is None else ratio >= goal


def _text(row: Mapping[str, Any] | None) -> str:
    if row is None:
        return "–"
    mark = "" if row.get("unique", True) and not row.get("errors") else " ✗"
    return f"{row['throughput']:,.0f} ({row['p99_ms']:.1f}){mark}"


def job_tables(doc: Mapping[str, Any]) -> list[str]:
    """Markdown: per backend, contestants × caller counts (calls/s, p99 ms), then HTTP."""
    out: list[str] = []
    for backend, job in doc.get("job", {}).items():
        labels: list[tuple[str, float]] = []
        for rows in job.get("cells", {}).values():
            for row in rows:
                key = (row["label"], float(row["work_ms"]))
                if key not in labels:
                    labels.append(key)
        header = ["contestant", *[f"{lab}" + (f" +{w:g} ms" if w else "") for lab, w in labels]]
        rows_md = [
            [name, *[_text(job_cell(job, name, lab, w)) for lab, w in labels]]
            for name in job.get("cells", {})
        ]
        out += [
            f"#### {LABELS.get(backend, backend)} — a record with its number, records/s (p99 ms)",
            "",
            md_table(header, rows_md),
            "",
        ]
        groups = [
            f"{name} {row['label']}: largest group {row['largest_group']}"
            for name, rows in job.get("cells", {}).items()
            for row in rows
            if row.get("largest_group") and float(row["work_ms"]) == 0 and row["label"] in ("1×100", "4×25")
        ]
        stored = stored_text(job.get("stored", {}))
        out += [f"Group sizes: {', '.join(groups) or '–'}. Stored rows checked afterwards: {stored}.", ""]
        if job.get("skipped"):
            out += ["Skipped: " + "; ".join(f"{k} ({v})" for k, v in job["skipped"].items()), ""]
    return out + http_table(doc)


def http_table(doc: Mapping[str, Any]) -> list[str]:
    """Markdown: one table of the HTTP rows of every backend (requests/s, p99 ms), then whether
    the load generator could have been the limit and the stored rows' check."""
    https = {b: h for b, h in doc.get("http", {}).items() if "cells" in h}
    if not https:
        return []
    conns: Sequence[int] = sorted(
        {r["connections"] for h in https.values() for rows in h["cells"].values() for r in rows}
    )
    rows_md = []
    notes = []
    for backend, http in https.items():
        for name, rows in http["cells"].items():
            by = {r["connections"]: r for r in rows}
            rows_md.append(
                [
                    LABELS.get(backend, backend),
                    f"{name} ({http['workers']} workers)",
                    *[_http_text(by.get(n)) for n in conns],
                ]
            )
        ceiling = http.get("generator_ceiling", {})
        bound = (
            "not the bottleneck" if http.get("generator_ok") else "**under 3×: it may limit the POST rows**"
        )
        label, stored = LABELS.get(backend, backend), stored_text(http.get("stored", {}))
        notes.append(
            f"- {label}: `wrk`'s trivial GET reached {ceiling.get('throughput', 0):,.0f}/s, "
            f"×{http.get('generator_margin')} the best POST ({bound}); stored: {stored}."
        )
    return [
        "#### HTTP POST, requests/s (p99 ms)",
        "",
        md_table(["backend", "server", *[f"{n} connections" for n in conns]], rows_md),
        "",
        *notes,
        "",
    ]


def _http_text(row: Mapping[str, Any] | None) -> str:
    if row is None:
        return "–"
    p99 = "?" if row["p99_ms"] is None else f"{row['p99_ms']:.1f}"
    return f"{row['throughput']:,.0f} ({p99})" + (f" ✗ {row['errors']} errors" if row["errors"] else "")


def job_section(doc: Mapping[str, Any]) -> list[str]:
    """The whole job part of the generated docs section (empty when the job was not measured): the
    tables, then how many targets were met and every missed one (all rows: the run's JSON)."""
    if not doc.get("job") and not doc.get("http"):
        return []
    targets = [*doc.get("job_targets", []), *doc.get("speed_targets", [])]
    met = sum(1 for t in targets if t["met"])
    return [
        "Contestants as bench/job.py describes them; columns are processes×callers, `+2 ms`/`+10 ms` "
        "the work held inside the caller's transaction.",
        "",
        *job_tables(doc),
        f"#### Targets: {met} of {len(targets)} met; the missed ones",
        "",
        md_table(("backend", "target", "measured at each missed cell (goal)"), missed_rows(targets)),
        "",
    ]


def missed_rows(targets: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """The missed targets, one row per backend and kind of target, its cells side by side
    (`@1×8 0.46 (≥ 1×)`): the same goal checked at several caller counts reads as one line."""
    rows: dict[tuple[str, str], list[str]] = {}
    for t in targets:
        if t["met"] is not False:
            continue
        kind, _, cell = str(t["target"]).rpartition(" @")
        if not kind:
            kind, cell = str(t["target"]), ""
        value = t["value"] if isinstance(t["value"], str) else f"{t['value']:.2f}"
        at = f"@{cell} " if cell else ""
        backend = LABELS.get(t["backend"], t["backend"])
        rows.setdefault((backend, kind), []).append(f"{at}{value} ({t['goal']})")
    return [[backend, kind, "; ".join(cells)] for (backend, kind), cells in rows.items()]
