"""The other engineers' benchmarks (`bench/bench_render.py`, `bench_cross.py`, `bench_seed.py`).

Each module exposes `run(quick=False, …) -> dict`; it is loaded from the `bench/` directory of the
source tree (they are scripts, not part of the installed package) and called with the keyword
arguments its signature accepts among `quick`, `urls` (backend → URL) and `url`.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

EXTRAS = ("render", "seed", "cross")


def bench_dirs() -> list[Path]:
    """Where the scripts may be: ./bench, then the source checkout this package was installed from."""
    here = Path(__file__).resolve()
    candidates = [Path.cwd() / "bench", here.parents[3] / "bench"]
    return [d for i, d in enumerate(candidates) if d.is_dir() and d not in candidates[:i]]


def load(name: str) -> Any | None:
    """Import `bench_<name>.py` as a module, or None when it does not exist."""
    for directory in bench_dirs():
        path = directory / f"bench_{name}.py"
        if path.is_file():
            spec = importlib.util.spec_from_file_location(f"autonumber_bench_{name}", path)
            if spec is None or spec.loader is None:
                return None
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
            return module
    return None


def run_extra(name: str, quick: bool, urls: Mapping[str, str]) -> dict[str, Any]:
    """Run one extra benchmark; failures are recorded, not raised (the main table still matters)."""
    module = load(name)
    if module is None or not callable(getattr(module, "run", None)):
        return {"skipped": f"bench/bench_{name}.py with a run() function was not found"}
    params = inspect.signature(module.run).parameters
    offered: dict[str, Any] = {"quick": quick, "urls": dict(urls)}
    if "url" in params and urls:
        offered["url"] = next(iter(urls.values()))
    kwargs = {k: v for k, v in offered.items() if k in params}
    started = time.perf_counter()
    try:
        result = module.run(**kwargs)
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(limit=5)}
    out = dict(result) if isinstance(result, Mapping) else {"results": result}
    out["bench_seconds"] = round(time.perf_counter() - started, 2)
    return out
