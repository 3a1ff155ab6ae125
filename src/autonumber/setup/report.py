"""placeholder"""
from typing import Any


def run_report(url: str, rows: int) -> Any: ...
