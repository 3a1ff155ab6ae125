"""Changing a rule from the console and `PUT /api/autonumber/fields/{id}`: the same command as the CLI's.

`commands.fields.change_field` calls the same `rules.set_rule` as `autonumber field set`, so both give
the same answer to the same change (RuleChangeRefused, FormatError or the change's lines).
"""

from __future__ import annotations

from autonumber.commands.fields import change_field as change_format
from autonumber.commands.fields import field_row
from autonumber.errors import RuleChangeRefused

__all__ = ["RuleChangeRefused", "change_format", "field_row"]
