"""schemathesis against the app: for every operation of its OpenAPI document, requests generated
from the document's own schemas, valid ones and ones that break them, never get a 5xx, and every
answer has a documented status, content type and body. Bounded: a few dozen examples per
operation, on SQLite (a hand-rolled predecessor of this run found the bulk rows-with-different-
fields 500)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from autonumber.runtime import Platform
from autonumber.web import create_app

EXAMPLES = 25
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.fixture
def api_schema(sqlite_platform: Platform) -> Iterator[schemathesis.BaseSchema]:
    """The document the running app serves, with the app to call: each operation's test gets a
    fresh copy of the core pack."""
    app = create_app(sqlite_platform, admin_token="prop-admin")
    yield schemathesis.openapi.from_asgi("/openapi.json", app)


schema = schemathesis.pytest.from_fixture("api_schema")


@pytest.mark.slow
@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_no_operation_answers_5xx_or_off_schema(case: schemathesis.Case) -> None:
    case.call_and_validate(checks=CHECKS)
