"""What a field's next number prints as, without a database: rendered where the scope key and the
clock decide it, the record's parts left as their tokens where the record decides them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from autonumber.catalog.cache import Rule
from autonumber.commands.next_number import new_key, preview
from autonumber.format import parse_format

NOW = datetime(2026, 4, 17, 20, 5, 9, tzinfo=UTC)


def rule(fmt: str, scope: str = "global", **options: Any) -> Rule:
    """A parsed rule of field X.No__c, starting at 1."""
    return Rule("X.No__c", "X", "No__c", parse_format(fmt), 1, scope, (), **options)


@pytest.mark.parametrize(
    ("r", "key", "shown", "named"),
    [
        (rule("{YYYY}-{HH}-{0000}"), "", "2026-20-0042", False),
        (rule("{YYYY}{MM}{DD}-{HH}-{0000}", time_zone="Asia/Tokyo"), "", "20260418-05-0042", False),
        (rule("{FYYYY}-{000}", fiscal_year_start=4), "", "2027-042", False),
        (rule("D{YY}{MM}{DD}-{HH}-{000}", "per_day"), "20260417", "D260417-20-042", False),
        (rule("D{YY}{MM}{DD}-{HH}-{000}", "per_day"), "20260101", "D260101-{HH}-042", True),
        (rule("{Account.Code}-{YY}-{00}", "per_prefix"), "SG-26-", "SG-26-42", False),
        (rule("A-{0000}-{Account.Code}", "per_prefix"), "A-{#}-SG", "A-0042-SG", False),
        (
            rule("{Account.Code}-{YY}-{00}", "per_prefix"),
            "x" * 40 + "#0123456789abcdef",
            "{Account.Code}-{YY}-42",
            True,
        ),
        (rule("{Account.Code|NA}-{YY}-{00}"), "", "{Account.Code}-26-42", True),
        (rule("B-{YYYY}-{000}", date_src="custom_field", date_field="InvoiceDate"), "", "B-{YYYY}-042", True),
        (rule("{RecordType.RecordTypeCode}-{000}"), "", "{RecordType.RecordTypeCode}-042", True),
    ],
)
def test_preview(r: Rule, key: str, shown: str, named: bool) -> None:
    got = preview(r, key, 42, NOW)
    assert (got.text, got.depends_on_record) == (shown, named)


def test_a_new_key_is_the_clocks_only_when_nothing_of_the_record_decides_it() -> None:
    assert new_key(rule("D{YY}{MM}{DD}-{000}", "per_day"), NOW) == "20260417"
    assert new_key(rule("D{YY}{MM}{DD}-{000}", "per_day", time_zone="Asia/Tokyo"), NOW) == "20260418"
    assert new_key(rule("C-{0000}", "per_prefix"), NOW) == "C-"
    assert new_key(rule("{Account.Code}-{0000}", "per_prefix"), NOW) is None
    assert new_key(rule("D{YY}-{000}", "per_day", date_src="custom_field", date_field="D"), NOW) is None
    assert new_key(rule("{0000}"), NOW) is None
