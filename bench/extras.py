"""The other engineers' benchmarks (`bench/bench_render.py`, `bench_cross.py`, `bench_seed.py`).

Each module exposes `run(quick=False, …) -> dict`; it sits next to this one in the `bench` package
and is called with the keyword arguments its signature accepts among `quick`, `urls` (backend → URL)
and `url`.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import time
import traceback
from collections.abc import Mapping
from typing import Any

EXTRAS = ("render", "seed", "cross")


def load(name: str) -> Any | None:
    """Import `bench_<name>.py` of this package, or None when it does not exist."""
    if importlib.util.find_spec(f"{__package__}.bench_{name}") is None:
        return None
    return importlib.import_module(f"{__package__}.bench_{name}")


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
