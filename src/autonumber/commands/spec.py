"""Applying a data-spec to a database (and, for production, reading staging's apply log)."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

from autonumber.progress import Reporter
from autonumber.specapply import ApplyResult, apply_spec

from .session import opened


def apply(
    url: str, path: Path, env: str | None, reporter: Reporter, *, staging_url: str | None = None
) -> ApplyResult:
    """Apply the data-spec at `path` to `url`; `staging_url` is where staging's apply log lives."""
    with ExitStack() as stack:
        engine = stack.enter_context(opened(url))
        staging = stack.enter_context(opened(staging_url, check=False)) if staging_url else None
        return apply_spec(engine, path, env, staging_log=staging, reporter=reporter)
