"""Per-field time zones: the one database clock sample, converted to the field's zone,
dates the number and bounds its per_day / per_prefix counters. Moments are injected through the
engine's clock hook (the database-clock seam); the field's zone does the rest."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from engine_support import CASE, counter_rows, make_platform, store_rules

import autonumber
from autonumber.cli import main
from autonumber.format.zones import UnknownTimeZone
from autonumber.rules.store import RuleSpec
from autonumber.runtime import Platform


def at(text: str) -> Callable[[object], datetime]:
    """A clock hook answering one UTC instant."""
    moment = datetime.fromisoformat(text).replace(tzinfo=UTC)
    return lambda _conn: moment


def insert_at(p: Platform, moment: str) -> str:
    p.engine.hooks.clock = at(moment)
    return str(p.records.insert("Case", {"Subject": moment})["CaseNumber"])


def test_tokyo_day_starts_at_15_utc(platform: Platform) -> None:
    store_rules(
        platform,
        RuleSpec("Case", "CaseNumber", "C-{YYYY}{MM}{DD}-{0000}", scope="per_day", time_zone="Asia/Tokyo"),
    )
    assert platform.catalog.current().rule(CASE).time_zone == "Asia/Tokyo"
    assert insert_at(platform, "2026-04-17T14:59:59.999") == "C-20260417-0001"  # 23:59:59 in Tokyo
    assert insert_at(platform, "2026-04-17T15:00:00") == "C-20260418-0001"  # midnight in Tokyo
    assert insert_at(platform, "2026-04-17T20:00:00") == "C-20260418-0002"  # UTC still says the 17th
    rows = counter_rows(platform, CASE)
    assert (rows["20260417"], rows["20260418"]) == (2, 3)


def test_new_york_midnights_across_the_march_dst_change(platform: Platform) -> None:
    """DST starts 2026-03-08 02:00 EST: midnight is 05:00 UTC before it and 04:00 UTC after it."""
    store_rules(
        platform,
        RuleSpec(
            "Case", "CaseNumber", "NY-{YY}{MM}{DD}-{000}", scope="per_day", time_zone="America/New_York"
        ),
    )
    seen = [
        insert_at(platform, "2026-03-08T04:59:59"),  # 23:59:59 EST on the 7th
        insert_at(platform, "2026-03-08T05:00:00"),  # 00:00 EST on the 8th
        insert_at(platform, "2026-03-08T06:59:59"),  # 01:59:59 EST
        insert_at(platform, "2026-03-08T07:00:00"),  # 03:00 EDT: the hour 02:xx does not exist
        insert_at(platform, "2026-03-09T03:59:59"),  # 23:59:59 EDT on the 8th
        insert_at(platform, "2026-03-09T04:00:00"),  # 00:00 EDT on the 9th
    ]
    assert seen == [
        "NY-260307-001",
        "NY-260308-001",
        "NY-260308-002",
        "NY-260308-003",
        "NY-260308-004",
        "NY-260309-001",
    ]


def test_per_prefix_month_follows_the_zone(platform: Platform) -> None:
    store_rules(
        platform,
        RuleSpec(
            "Case",
            "CaseNumber",
            "INV-{YYYY}{MM}-{0000}",
            scope="per_prefix",
            time_zone="Asia/Tokyo",
            numbering="gapless",
        ),
    )
    assert insert_at(platform, "2026-04-30T14:59:00") == "INV-202604-0001"
    assert insert_at(platform, "2026-04-30T15:00:00") == "INV-202605-0001"
    assert insert_at(platform, "2026-04-30T16:00:00") == "INV-202605-0002"


def test_a_utc_field_is_unchanged(platform: Platform) -> None:
    store_rules(platform, RuleSpec("Case", "CaseNumber", "C-{YYYY}{MM}{DD}-{0000}", scope="per_day"))
    assert insert_at(platform, "2026-04-17T20:00:00") == "C-20260417-0001"


def test_unknown_zone_is_refused(platform: Platform) -> None:
    with pytest.raises(UnknownTimeZone, match=r"Case\.CaseNumber: time zone 'Mars/Base'"):
        store_rules(platform, RuleSpec("Case", "CaseNumber", "C-{0000}", time_zone="Mars/Base"))


def test_field_set_time_zone_from_the_cli(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    make_platform(db_url).close()
    with pytest.raises(SystemExit) as info:
        main(
            [
                "field",
                "set",
                "Case",
                "CaseNumber",
                "--format",
                "T-{YYYY}{MM}{DD}-{0000}",
                "--time-zone",
                "Asia/Tokyo",
                "--numbering",
                "gapless",
                "--db",
                db_url,
            ]
        )
    assert info.value.code in (0, None), capsys.readouterr().err
    assert "gapless, Asia/Tokyo" in capsys.readouterr().out
    p = autonumber.connect(db_url)
    try:
        rule = p.catalog.current().rule(CASE)
        assert (rule.time_zone, rule.numbering) == ("Asia/Tokyo", "gapless")
        assert insert_at(p, "2026-04-17T20:00:00") == "T-20260418-0001"  # Tokyo's 18 April
    finally:
        p.close()
    with pytest.raises(SystemExit) as info:
        main(
            [
                "field",
                "set",
                "Case",
                "CaseNumber",
                "--format",
                "T-{0000}",
                "--time-zone",
                "Mars/Base",
                "--db",
                db_url,
            ]
        )
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.count("\n") == 1 and "Mars/Base" in err
