"""Statements MariaDB's pools send as one text share one mapping of parameters (db/mysql.py): a
name two of them bind must hold one value, or nothing is sent."""

from __future__ import annotations

import pytest

from autonumber.db.mysql_texts import merged as _merged


def test_parameters_of_statements_sent_together_are_merged() -> None:
    assert _merged({"b_n": 3, "b_field_id": "Case.CaseNumber"}, {"b_n": 3, "b_owner": "h:1"}) == {
        "b_n": 3,
        "b_field_id": "Case.CaseNumber",
        "b_owner": "h:1",
    }


def test_a_name_bound_to_two_values_is_refused() -> None:
    with pytest.raises(ValueError, match="'param_1' to two values"):
        _merged({"param_1": "reserved"}, {"param_1": 6})


def test_a_positional_driver_is_not_merged() -> None:
    with pytest.raises(TypeError, match="named"):
        _merged(("a",))
