"""autonumber: Salesforce-grade auto-numbers from display formats kept as metadata."""

from __future__ import annotations

from . import errors as errors

__all__ = ["errors"]
