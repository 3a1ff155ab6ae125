"""Per-field time zones: the one place where a clock sample becomes a calendar date.

A rule's date tokens and the day boundaries of its `per_day` / `per_prefix` counters both come from
`local_time(sample, zone)`, so the rendered date and the scope key always name the same day.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from autonumber.errors import ConfigError

DEFAULT_ZONE = "UTC"
MAX_ZONE_NAME = 64


class UnknownTimeZone(ConfigError):
    """A time zone name that is not an IANA zone (e.g. `Asia/Tokyo`)."""


@lru_cache(maxsize=256)
def zone_of(name: str) -> tzinfo:
    """The zone for an IANA name (`UTC` is the exact `datetime.UTC`); UnknownTimeZone otherwise."""
    if name == DEFAULT_ZONE:
        return UTC
    if not name or len(name) > MAX_ZONE_NAME or name.startswith(("/", ".")) or ".." in name:
        raise UnknownTimeZone(f"time zone {name!r} is not an IANA zone name, e.g. Asia/Tokyo or UTC")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise UnknownTimeZone(
            f"time zone {name!r} is not an IANA zone name, e.g. Asia/Tokyo or UTC"
        ) from None


def check_zone(name: str) -> str:
    """Return `name` when it is a known zone; UnknownTimeZone otherwise."""
    zone_of(name)
    return name


def check_instant(at: datetime, zone: tzinfo = UTC) -> datetime:
    """`at` when it has a calendar date both in UTC and in `zone`; ConfigError when it falls
    outside the years 1-9999 in either (a user's sample instant, never the database clock)."""
    try:
        at.astimezone(UTC)
        local_time(at, zone)
    except (OverflowError, ValueError):
        raise ConfigError(f"{at.isoformat()} falls outside the years 1-9999 in UTC or in {zone}") from None
    return at


def local_time(at: datetime, zone: tzinfo = UTC) -> datetime:
    """The instant `at` (aware; naive means UTC) on the wall clock of `zone`."""
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return at if at.tzinfo is zone else at.astimezone(zone)
