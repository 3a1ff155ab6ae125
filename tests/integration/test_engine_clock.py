"""Case 28: the application clock is skewed +5 min; the scope key and the date tokens
still come from ONE database clock sample taken inside the reservation transaction."""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime, timedelta, tzinfo

import pytest
from engine_support import ReservationLog, store_rules

from autonumber.rules.store import RuleSpec
from autonumber.runtime import Platform

SKEW = timedelta(minutes=5)


class _AnyDatetime(type):
    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, datetime)  # so `isinstance(value, datetime)` checks keep working


class _Skewed(datetime, metaclass=_AnyDatetime):
    """`datetime` whose notion of now runs SKEW ahead (what a pod with a bad clock sees)."""

    @classmethod
    def now(cls, tz: tzinfo | None = None) -> _Skewed:
        real = datetime.now(tz)
        return cls.fromtimestamp(real.timestamp() + SKEW.total_seconds(), tz)

    @classmethod
    def utcnow(cls) -> _Skewed:
        return cls.now(UTC).replace(tzinfo=None)


def _skew_application_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    real_time = time.time
    monkeypatch.setattr(time, "time", lambda: real_time() + SKEW.total_seconds())
    for name, module in list(sys.modules.items()):
        if name.startswith("autonumber") and getattr(module, "datetime", None) is datetime:
            monkeypatch.setattr(module, "datetime", _Skewed)


def test_case28_app_clock_skew_changes_nothing(platform: Platform, monkeypatch: pytest.MonkeyPatch) -> None:
    store_rules(platform, RuleSpec("Case", "CaseNumber", "C-{YYYY}{MM}{DD}-{0000}", scope="per_day"))
    log = ReservationLog(platform)
    _skew_application_clock(monkeypatch)
    with platform.db.connect() as conn:
        before = platform.dialect.utc_now(conn)
    case = platform.records.insert("Case", {"Subject": "skewed pod"})
    acc = platform.records.insert("Account", {"Name": "Acme", "BillingCountryCode": "SG"})
    with platform.db.connect() as conn:
        after = platform.dialect.utc_now(conn)
    app_now = datetime.fromtimestamp(time.time(), UTC)
    assert app_now - after > SKEW - timedelta(seconds=30), "the application clock is not skewed"
    assert len(log) == 2
    for res in log.items:
        assert before <= res.assigned_at <= after, "assigned-at must be a database clock sample"
    case_at, acc_at = (r.assigned_at for r in log.items)
    assert log.items[0].scope_key == case_at.strftime("%Y%m%d")
    assert case["CaseNumber"] == f"C-{case_at:%Y%m%d}-0001"
    assert acc["Account_ID__c"] == f"IBG-B-{acc_at:%Y%m%d}-000001"
    assert datetime.fromisoformat(acc["CreatedDate"]) == acc_at
