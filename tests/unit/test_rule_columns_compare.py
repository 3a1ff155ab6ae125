"""Whether a rule's stored columns already hold the wanted ones (`rules.store.same_values`): the
token refs compare as JSON documents and as text; every other column as it is, even when its text
looks like JSON (a format may begin with `[` or `{`)."""

from __future__ import annotations

from autonumber.rules.store import TOKEN_REFS, same_values

FORMAT = "auto_number_format"


def test_a_format_that_looks_like_json_compares_as_text() -> None:
    assert not same_values({FORMAT: "{00000000}"}, {FORMAT: "[{00000000}]"})
    assert not same_values({FORMAT: "[{0}"}, {FORMAT: "[{00}"})
    assert same_values({FORMAT: "[{0}]"}, {FORMAT: "[{0}]"})


def test_token_refs_compare_as_documents_and_as_text() -> None:
    refs = '[{"tokenLiteral": "{Account.Name}"}]'
    assert same_values({TOKEN_REFS: refs}, {TOKEN_REFS: refs})
    assert not same_values({TOKEN_REFS: refs}, {TOKEN_REFS: '[{"tokenLiteral":"{Account.Name}"}]'})
    assert not same_values({TOKEN_REFS: None}, {TOKEN_REFS: refs})
