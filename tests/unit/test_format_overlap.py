"""`may_render_same`: whether two formats share a text, what a field leaving a shared counter is
checked with (literals without case, counter and date digits, cross values as any text)."""

from __future__ import annotations

import pytest

from autonumber.format import parse_format
from autonumber.format.overlap import may_render_same


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("DOC-{000000}", "DOC-{000000}", True),
        ("doc-{000000}", "DOC-{000000}", True),  # one number to a reader and a case-insensitive index
        ("QT-{000000}", "DOC-{000000}", False),
        ("DOC-{0000000}", "DOC-{000000}", False),  # one digit longer: never the same text
        ("1{0000}", "{0000}1", True),  # counter 2341 and counter 1234 both show 12341
        ("{0000}", "{0000}A", False),
        ("D-{YYYY}{MM}{DD}-{000}", "D-{YY}{MM}{DD}-{000}", False),
        ("D-{YYYY}{MM}{DD}-{000}", "D-{YY}{MM}{DD}{HH}-{000}", True),
        ("{Account.BillingCountryCode}-{0000}", "US-{0000}", True),  # a cross value is any text
        ("{Account.BillingCountryCode}-Q{0000}", "US-O{0000}", False),
        ("{RecordType.Code}{0000}", "{0000}", True),  # any text includes none
    ],
)
def test_may_render_same(a: str, b: str, same: bool) -> None:
    assert may_render_same(parse_format(a), parse_format(b)) is same
    assert may_render_same(parse_format(b), parse_format(a)) is same
