"""A stored record as `insert` returns it: JSON-ready values, timestamps in UTC with their offset."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

from autonumber.write.rows import plain


def test_timestamps_become_utc_text_with_the_offset_decimals_floats_and_the_rest_stays() -> None:
    naive = datetime(2026, 12, 4, 13, 57, 21, 123456)  # drivers return UTC without a zone
    row = {
        "Id": "0193a0b1c2d34e5f8a9b0c1d2e3f4a5b",
        "CreatedDate": naive,
        "Whole": naive.replace(microsecond=0),
        "Zoned": datetime(2026, 12, 4, 14, 57, 21, tzinfo=timezone(timedelta(hours=1))),
        "Amount": Decimal("12.5000"),
        "Count": 3,
        "Flag": True,
        "Empty": None,
    }
    assert plain(row) == {
        "Id": "0193a0b1c2d34e5f8a9b0c1d2e3f4a5b",
        "CreatedDate": "2026-12-04T13:57:21.123456+00:00",
        "Whole": "2026-12-04T13:57:21+00:00",
        "Zoned": "2026-12-04T13:57:21+00:00",
        "Amount": 12.5,
        "Count": 3,
        "Flag": True,
        "Empty": None,
    }
    assert row["CreatedDate"] is naive  # the row itself is left as it was


def test_every_timestamp_says_utc_whatever_zone_it_came_in() -> None:
    aware = datetime(2026, 1, 1, tzinfo=UTC)
    assert plain({"At": aware})["At"] == "2026-01-01T00:00:00+00:00"
