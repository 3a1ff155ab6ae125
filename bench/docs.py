"""The generated part of docs/performance.md: rewritten between two markers, the rest kept as is."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .analysis import HOT, cell
from .job_report import job_section
from .report import (
    BEGIN,
    END,
    LABELS,
    MARKDOWN_MET,
    TARGET_HEADER,
    _fmt,
    grid,
    md_table,
    startup_grid,
    stored_text,
    target_rows,
)

TITLE = "# Performance\n\n"


def _machine(doc: Mapping[str, Any]) -> str:
    m = doc["machine"]
    rows = [
        ["CPU", f"{m.get('cpu', '?')} — {m.get('nproc')} cores (nproc)"],
        ["RAM", f"{m.get('ram_gib', '?')} GiB"],
        [
            "load average (1/5/15 min)",
            f"{_load(m.get('load_average'))} at the start, "
            f"{_load(m.get('load_average_end'))} at the end (other work on the machine shows here)",
        ],
        ["Python", f"{m.get('python')} — {m.get('platform')}"],
        [
            "libraries",
            ", ".join(
                f"{k} {m[k]}"
                for k in ("autonumber", "SQLAlchemy", "PyMySQL", "psycopg", "Django", "django-sequences")
                if m.get(k)
            ),
        ],
    ]
    servers = {k: v["server"] for k, v in doc.get("job", {}).items() if "server" in v}
    servers.update({k: b["server"] for k, b in doc["backends"].items()})
    for backend, server in servers.items():
        settings = ", ".join(f"{k}={v}" for k, v in server.get("settings", {}).items())
        rows.append([LABELS.get(backend, backend), f"{server['version']} on loopback; {settings}"])
    return md_table(["", "this run"], rows)


def _load(values: Any) -> str:
    return " / ".join(str(v) for v in values) if isinstance(values, list) else "?"


def _engine_facts(doc: Mapping[str, Any], backend: str) -> str:
    b = doc["backends"][backend]
    rows = []
    for name in b["cells"]:
        row = cell(b, name, HOT)
        if row is None or "reservations" not in row:
            continue
        reservations = float(row["reservations"])
        per = row["ops"] and reservations and row["values"] / max(reservations, 1)
        rows.append(
            [
                name,
                _fmt(reservations),
                _fmt(per, 1) if per else "–",
                _fmt(row.get("attempts_p99")),
                _fmt(row.get("fallbacks")),
                str(row.get("largest_group", "–")),
            ]
        )
    header = [
        "contestant @100",
        "reservations",
        "numbers per reservation",
        "attempts p99",
        "fallbacks",
        "largest group",
    ]
    return md_table(header, rows)


def _ratios(doc: Mapping[str, Any], backend: str) -> str:
    b = doc["backends"][backend]
    strategy = b.get("best_strategy")
    if not strategy or "ratios" not in b:
        return "_no strategy produced unique values_"
    callers: Sequence[int] = doc["callers"]
    peers = list(b["ratios"][str(callers[0])])
    rows = [[f"÷ {p}", *[_ratio(b["ratios"][str(n)].get(p)) for n in callers]] for p in peers]
    header = [f"engine:{strategy}", *[f"{n}" for n in callers]]
    return md_table(header, rows)


def _ratio(value: float | None) -> str:
    return "–" if value is None else f"{value:g}×"


def _batch(doc: Mapping[str, Any]) -> str:
    rows = []
    for backend, b in doc["backends"].items():
        for strategy, row in b.get("batch", {}).items():
            rows.append(
                [
                    LABELS.get(backend, backend),
                    strategy,
                    _fmt(row["numbers_per_s"]),
                    f"{row['p99_ms']:.1f}",
                    "yes" if row["unique"] else "NO",
                ]
            )
    return md_table(["backend", "strategy", "numbers/s", "p99 ms per batch", "unique"], rows)


def _targets(doc: Mapping[str, Any]) -> str:
    return md_table(TARGET_HEADER, target_rows(doc.get("targets", []), MARKDOWN_MET))


def _extras(doc: Mapping[str, Any]) -> str:
    parts = []
    for name, extra in doc.get("extras", {}).items():
        parts.append(f"#### {name}\n")
        if "skipped" in extra or "error" in extra:
            parts.append(f"_{extra.get('skipped') or extra.get('error')}_\n")
            continue
        results = extra.get("results")
        if not (isinstance(results, list) and results and isinstance(results[0], Mapping)):
            results = _point_rows(extra.get("backends")) or _leaf_rows(extra.get("backends"))
        if results:
            keys = [k for k in results[0] if k not in HIDDEN]
            rows = [[_cell(r.get(k)) for k in keys] for r in results]
            parts.append(md_table(keys, rows) + "\n")
        else:
            parts.append("```\n" + str({k: v for k, v in extra.items() if k != "machine"})[:2000] + "\n```\n")
    return "\n".join(parts) if parts else "_not run_"


HIDDEN = frozenset({"url", "machine", "first_error", "traceback"})


def _point_rows(backends: Any) -> list[dict[str, Any]]:
    """Rows from `{"backend": {"points": [{...}, …]}}` (the seed benchmark's shape)."""
    if not isinstance(backends, Mapping):
        return []
    rows: list[dict[str, Any]] = []
    for name, entry in backends.items():
        points = entry.get("points") if isinstance(entry, Mapping) else None
        if isinstance(points, list):
            rows += [{"backend": name, **point} for point in points if isinstance(point, Mapping)]
    return rows


def _leaf_rows(tree: Any, path: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Rows from nested dicts whose leaves are flat dicts: `{"backend": {"cas": {...}}}`."""
    if not isinstance(tree, Mapping):
        return []
    if tree and all(not isinstance(v, Mapping | list) for v in tree.values()):
        return [{"case": " / ".join(path), **tree}]
    rows: list[dict[str, Any]] = []
    for key, sub in tree.items():
        rows += _leaf_rows(sub, (*path, str(key)))
    return rows


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value).replace("|", "\\|")


def _run_intro(doc: Mapping[str, Any], what: str, note: str) -> list[str]:
    """`## Measured: <what>run <time> (<kind>, cell seconds, warm-up, total)`, `note`, the machine."""
    kind = "quick" if doc["quick"] else "full"
    return [
        f"## Measured: {what}run {doc['timestamp']} ({kind}, {doc['cell_seconds']:g} s per cell after "
        f"{doc['warmup_seconds']:g} s warm-up, {doc.get('seconds', '?')} s in all)",
        "",
        note,
        "",
        "### Machine",
        "",
        _machine(doc),
        "",
    ]


def section(doc: Mapping[str, Any], plots: Sequence[str]) -> str:
    """The markdown between the markers."""
    out = [
        BEGIN,
        "",
        *_run_intro(
            doc,
            "",
            "All numbers below come from ONE run of `python -m bench` on this machine, every backend and "
            "contestant measured side by side in that run; the machine is shared, so treat absolute "
            "numbers as indicative and the ratios (same run, same load) as the result.",
        ),
    ]
    if plots:
        out += ["### Plots", ""] + [f"![{p}]({p})" for p in plots] + [""]
    for backend, b in doc["backends"].items():
        header, rows = grid(doc, backend)
        out += [
            f"### {LABELS.get(backend, backend)} — one hot counter, calls/s (p99 ms)",
            "",
            md_table(header, rows),
            "",
            f"Best engine strategy at {HOT} callers: **{b.get('best_strategy')}** "
            f"(default in this build: `{b.get('default_strategy')}`). Its throughput as a ratio to each "
            "contestant at the same caller count, same run:",
            "",
            _ratios(doc, backend),
            "",
            _engine_facts(doc, backend),
            "",
        ]
        stored = stored_text(b.get("verify", {}))
        if stored:
            out += [f"Stored rows checked afterwards: {stored}", ""]
        if b.get("skipped"):
            out += ["Skipped here: " + "; ".join(f"{k} ({v})" for k, v in b["skipped"].items()), ""]
    if doc["backends"]:
        out += ["### assign_batch(1000), one caller", "", _batch(doc), ""]
        out += ["### Targets", "", _targets(doc), ""]
    out += ["### Other benchmarks in the same run", "", _extras(doc), "", END]
    return "\n".join(out)


JOB_BEGIN = "<!-- bench-job:begin (generated by `python -m bench`; edit outside these markers) -->"
JOB_END = "<!-- bench-job:end -->"
CLI_BEGIN = "<!-- bench-cli:begin (generated by `python -m bench`; edit outside these markers) -->"
CLI_END = "<!-- bench-cli:end -->"


def job_block(doc: Mapping[str, Any]) -> str:
    """The markdown between the job markers: the run in two lines, the tables, the targets."""
    m = doc["machine"]
    servers = ", ".join(
        str(v["server"]["version"]).split(" (")[0] for v in doc.get("job", {}).values() if "server" in v
    )
    return "\n".join(
        [
            JOB_BEGIN,
            "",
            f"## Measured: the job, run {doc['timestamp']} ({doc['cell_seconds']:g} s per cell)",
            "",
            f"One run, contestants one after the other: {m.get('cpu', '?')}, {m.get('nproc')} cores, load "
            f"average {_load(m.get('load_average'))} at the start and {_load(m.get('load_average_end'))} at "
            f"the end (the bench's own callers load it); {servers}.",
            "",
            *job_section(doc),
            JOB_END,
        ]
    )


def cli_block(doc: Mapping[str, Any]) -> str:
    """The markdown between the CLI start-up markers: when, on what, and the table."""
    cli = doc["cli"]
    return "\n".join(
        [
            CLI_BEGIN,
            "",
            f"### Measured: CLI start-up, run {doc['timestamp']}",
            "",
            f"Each command ran once unmeasured (file cache), then {cli['runs']} times as a fresh process "
            "from an empty directory (the `autonumber` console script of the environment); load average "
            f"{_load(doc['machine'].get('load_average'))} at the start of the run"
            + (
                f"; `python -c 'import sqlalchemy'` took {cli['import_sqlalchemy_s']:.3f} s (median), "
                "the floor of any command that reads a database."
                if "import_sqlalchemy_s" in cli
                else "."
            ),
            "",
            md_table(*startup_grid(doc, MARKDOWN_MET)),
            "",
            CLI_END,
        ]
    )


def replace_block(text: str, begin: str, end: str, generated: str) -> str:
    """`text` with what stands between the markers `begin` and `end` replaced (appended if absent)."""
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        return head + generated + rest.split(end, 1)[1]
    return text.rstrip("\n") + "\n\n" + generated + "\n"


def write_docs(doc: Mapping[str, Any], path: Path, plots: Sequence[str]) -> Path:
    """Replace the generated sections of `path` (or append them), keeping everything else: the
    counter section when the counter rows ran, the job section when the job rows ran, the CLI
    start-up section when it was measured."""
    text = path.read_text(encoding="utf-8") if path.exists() else TITLE
    if doc["backends"]:
        text = replace_block(text, BEGIN, END, section(doc, plots))
    if doc.get("job"):
        text = replace_block(text, JOB_BEGIN, JOB_END, job_block(doc))
    if doc.get("cli", {}).get("rows"):
        text = replace_block(text, CLI_BEGIN, CLI_END, cli_block(doc))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
