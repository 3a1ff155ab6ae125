"""Property test over the whole OpenAPI document: for every operation, requests generated from its
own schemas (tests/web/schema_strategy.py) and arbitrary JSON and text besides never get a 5xx,
and every answer matches the schema the document gives for its status. Bounded: a few dozen
examples per operation, on SQLite (it found the bulk rows-with-different-fields 500)."""

from __future__ import annotations

import json
import string
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from schema_strategy import from_schema

from autonumber.runtime import Platform
from autonumber.web import create_app

EXAMPLES = 20
METHODS = ("get", "post", "put", "patch", "delete")
TEXT = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=40)
HEADER_TEXT = st.text(alphabet=string.ascii_letters + string.digits + "-_.:", min_size=1, max_size=60)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=10,
)


@pytest.fixture
def api(sqlite_platform: Platform) -> Iterator[TestClient]:
    app = create_app(sqlite_platform, admin_token="prop-admin")
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def operations(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in sorted(doc["paths"].items()):
        for method in METHODS:
            if method in item:
                yield path, method, item[method]


def with_components(schema: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "components": doc["components"]}


def parameter(param: dict[str, Any], doc: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values of one parameter: from its schema, or anything at all."""
    if param["in"] == "header":
        return HEADER_TEXT
    schema = param.get("schema", {})
    if param["in"] == "path":
        # ASGI hands the app a decoded path: an encoded "/" (%2F) is a path separator again, so a
        # segment made only of slashes names another route (Ids never hold one: uuid hex, integers);
        # "." and ".." are dot segments the client resolves away before sending
        return TEXT.filter(
            lambda text: bool(text.strip("/")) and not any(p in (".", "..") for p in text.split("/"))
        )
    return from_schema(schema, doc) | TEXT | st.integers()


def body(op: dict[str, Any], doc: dict[str, Any]) -> st.SearchStrategy[Any]:
    content = op.get("requestBody", {}).get("content", {}).get("application/json")
    if content is None:
        return st.just(None)
    return from_schema(content["schema"], doc) | JSON_VALUES


def check_response(op: dict[str, Any], doc: dict[str, Any], where: str, response: Any) -> None:
    assert response.status_code < 500, f"{where} → {response.status_code}: {response.text[:300]}"
    documented = op["responses"].get(str(response.status_code))
    assert documented is not None, f"{where} → undocumented {response.status_code}: {response.text[:200]}"
    schema = documented.get("content", {}).get("application/json", {}).get("schema")
    if schema is None or not response.headers.get("content-type", "").startswith("application/json"):
        return
    errors = sorted(Draft202012Validator(with_components(schema, doc)).iter_errors(response.json()), key=str)
    assert not errors, f"{where} → {response.status_code} does not match its schema: {errors[0].message}"


def request_check(
    api: TestClient, doc: dict[str, Any], path: str, method: str, op: dict[str, Any]
) -> Callable[[], None]:
    """A Hypothesis test of one operation: generated parameters and body, checked answer."""
    params = op.get("parameters", [])
    kinds = {p["name"]: p["in"] for p in params}

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(
        values=st.fixed_dictionaries(
            {p["name"]: parameter(p, doc) for p in params if p.get("required")},
            optional={p["name"]: parameter(p, doc) for p in params if not p.get("required")},
        ),
        payload=body(op, doc),
    )
    def check(values: dict[str, Any], payload: Any) -> None:
        url = path
        query: dict[str, str] = {}
        headers: dict[str, str] = {"Content-Type": "application/json"}
        for name, value in values.items():
            if kinds[name] == "path":
                url = url.replace("{" + name + "}", quote(str(value), safe=""))
            elif kinds[name] == "query":
                query[name] = value if isinstance(value, str) else json.dumps(value)
            else:
                headers[name] = str(value)
        if query:
            url += "?" + urlencode(query)
        content = json.dumps(payload).encode() if "requestBody" in op else None
        response = api.request(method.upper(), url, content=content, headers=headers)
        check_response(op, doc, f"{method.upper()} {url}", response)

    return check  # type: ignore[no-any-return]


@pytest.mark.slow
def test_no_operation_answers_5xx_or_off_schema(api: TestClient) -> None:
    doc = api.get("/openapi.json").json()
    ops = list(operations(doc))
    for path, method, op in ops:
        request_check(api, doc, path, method, op)()
    assert len(ops) >= 20  # every records path of every object, plus fields, preview, health, metrics
