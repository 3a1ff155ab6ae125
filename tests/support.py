"""Helpers shared by the engine and reliability suites (not a test module)."""

from __future__ import annotations

import re
from typing import Any

import autonumber
from autonumber.db import create_engine
from autonumber.platform import Platform
from autonumber.setup.bootstrap import bootstrap

CASE = "Case.CaseNumber"
_TRAILING_DIGITS = re.compile(r"(\d+)$")


def make_platform(url: str, **options: Any) -> Platform:
    """Bootstrap the core pack on `url` and connect to it."""
    setup = create_engine(url)
    try:
        bootstrap(setup)
    finally:
        setup.dispose()
    return autonumber.connect(url, **options)


def number(value: str) -> int:
    """The counter part of a rendered value (its trailing digits)."""
    match = _TRAILING_DIGITS.search(value)
    assert match is not None, f"no counter digits in {value!r}"
    return int(match.group(1))
