"""From raw cells to the numbers the issue asks for: ratios to peers, targets, the best default."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autonumber.engine import STRATEGIES

from .startup import meets_target, target_of

HOT = 100
TARGET_VS_NATIVE = 1.0
TARGET_VS_SLOW = 20.0
TARGET_UNCONTENDED_P99_MS = 2.0
TARGET_CAS_ATTEMPTS_P99 = 3.0
TARGET_BATCH_PER_S = 200_000.0
SERVER_BACKENDS = ("mysql", "postgresql")


def cell(backend: Mapping[str, Any], name: str, callers: int) -> Mapping[str, Any] | None:
    """The row of `name` at `callers`, or None when not measured."""
    for row in backend.get("cells", {}).get(name, []):
        if row["callers"] == callers:
            return dict(row)
    return None


def throughput(backend: Mapping[str, Any], name: str, callers: int) -> float | None:
    """Calls per second of one cell."""
    row = cell(backend, name, callers)
    return None if row is None else float(row["throughput"])


def best_strategy(backend: Mapping[str, Any], callers: int = HOT) -> str | None:
    """The engine strategy with the highest hot-counter throughput, among those that stayed unique."""
    best: tuple[float, str] | None = None
    for strategy in STRATEGIES:
        row = cell(backend, f"engine:{strategy}", callers)
        if row is None or not row["unique"]:
            continue
        if best is None or row["throughput"] > best[0]:
            best = (float(row["throughput"]), strategy)
    return None if best is None else best[1]


def ratios(backend: Mapping[str, Any], strategy: str, callers: int) -> dict[str, float | None]:
    """The strategy's throughput over each other contestant's at the same caller count."""
    mine = throughput(backend, f"engine:{strategy}", callers)
    out: dict[str, float | None] = {}
    for name in backend.get("cells", {}):
        if name == f"engine:{strategy}":
            continue
        theirs = throughput(backend, name, callers)
        out[name] = None if not mine or not theirs else round(mine / theirs, 2)
    return out


def all_unique(backend: Mapping[str, Any]) -> bool:
    """Every cell handed out distinct values without errors, and nothing stored twice."""
    cells_ok = all(row["unique"] for rows in backend.get("cells", {}).values() for row in rows)
    batch_ok = all(row["unique"] for row in backend.get("batch", {}).values())
    stored_ok = all(v.get("stored_duplicates", 0) == 0 for v in backend.get("verify", {}).values())
    return cells_ok and batch_ok and stored_ok


class Targets(list[dict[str, Any]]):
    """Target rows: per backend, the measured value against the goal, met or not (None: unmeasured)."""

    def add(self, backend: str, target: str, value: float | None, goal: str, met: bool | None) -> None:
        """One more row."""
        self.append({"backend": backend, "target": target, "value": value, "goal": goal, "met": met})


def targets(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each target of the issue, per backend: the measured value and whether it was met."""
    out = Targets()

    for name, b in doc.get("backends", {}).items():
        strategy = best_strategy(b) or str(b.get("default_strategy"))
        b_ratios = ratios(b, strategy, HOT)
        if name in SERVER_BACKENDS:
            for peer, goal in (
                ("peer:native-sequence", TARGET_VS_NATIVE),
                ("engine:cas", TARGET_VS_SLOW),
                ("peer:django-sequences", TARGET_VS_SLOW),
            ):
                if peer == f"engine:{strategy}":
                    continue
                r = b_ratios.get(peer)
                met = None if r is None else r >= goal
                out.add(name, f"{strategy} ÷ {peer} @{HOT}", r, f"≥ {goal:g}×", met)
            for s in STRATEGIES:
                row = cell(b, f"engine:{s}", 1)
                if row is not None:
                    p99 = float(row["p99_ms"])
                    out.add(
                        name,
                        f"uncontended assign_one p99 ({s}), ms",
                        p99,
                        f"≤ {TARGET_UNCONTENDED_P99_MS:g}",
                        p99 <= TARGET_UNCONTENDED_P99_MS,
                    )
            for lane in dict.fromkeys(("cas", strategy)):
                row = cell(b, f"engine:{lane}", HOT)
                if row is not None and "attempts_p99" in row:
                    value = float(row["attempts_p99"])
                    out.add(
                        name,
                        f"reservation attempts p99 @{HOT} ({lane})",
                        value,
                        f"≤ {TARGET_CAS_ATTEMPTS_P99:g}",
                        value <= TARGET_CAS_ATTEMPTS_P99,
                    )
        for lane, row in b.get("batch", {}).items():
            value = float(row["numbers_per_s"])
            out.add(
                name,
                f"assign_batch(1000) numbers/s ({lane})",
                value,
                f"≥ {TARGET_BATCH_PER_S:,.0f}",
                value >= TARGET_BATCH_PER_S,
            )
        out.add(name, "every value unique", None, "yes", all_unique(b))
    return out


def startup_targets(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The issue's start-up target per command: the median wall time, every run succeeding."""
    out = Targets()
    for row in doc.get("cli", {}).get("rows", []):
        out.add(
            "cli", f"{row['command']} median start-up, s", row["median_s"], f"≤ {target_of(row):g}",
            meets_target(row),
        )  # fmt: skip
    return out


def summarise(doc: dict[str, Any]) -> dict[str, Any]:
    """Add `best_strategy`, `ratios` (per caller count) and `targets` to a result document."""
    for b in doc.get("backends", {}).values():
        strategy = best_strategy(b)
        b["best_strategy"] = strategy
        if strategy is not None:
            b["ratios"] = {str(n): ratios(b, strategy, n) for n in doc.get("callers", [])}
    doc["targets"] = targets(doc)
    from .job_report import job_targets, speed_targets  # job_report → report → analysis: on use

    doc["job_targets"] = job_targets(doc)
    doc["speed_targets"] = speed_targets(doc)
    doc["cli_targets"] = startup_targets(doc)
    return doc
