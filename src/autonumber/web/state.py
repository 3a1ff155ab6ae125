"""What the app holds for its routes: the platform they call commands on and the admin auth."""

from __future__ import annotations

from dataclasses import dataclass

from autonumber.catalog.cache import CatalogSnapshot
from autonumber.runtime import Platform

from .auth import AdminAuth


@dataclass(frozen=True)
class Console:
    """The app's platform and admin auth (`app.state.console`)."""

    platform: Platform
    admin: AdminAuth

    @property
    def snapshot(self) -> CatalogSnapshot:
        """The current catalog snapshot."""
        return self.platform.catalog.current()
