"""pytest fixture for Django projects: `from autonumber.integrations.django_pytest import autonumber_reset`
in a conftest.py, then request it (after pytest-django's `db`) in tests that assert numbers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .django_testing import reset_counters


@pytest.fixture
def autonumber_reset() -> Iterator[None]:
    """Every counter of the default test database back at its start (django_testing.py)."""
    reset_counters("default")
    yield
