"""Hypothesis strategies from the JSON Schemas of an OpenAPI 3.1 document (the subset it uses:
$ref, anyOf, type lists, objects, arrays, strings with lengths, bounded numbers, enums)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

MAX_DEPTH = 6


def from_schema(schema: dict[str, Any], doc: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """Values that (mostly) satisfy `schema`; refs resolve against `doc`."""
    if depth > MAX_DEPTH:
        return st.none()
    if "$ref" in schema:
        target: Any = doc
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        return from_schema(target, doc, depth + 1)
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "const" in schema:
        return st.just(schema["const"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return st.one_of([from_schema(s, doc, depth + 1) for s in schema[key]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([from_schema({**schema, "type": k}, doc, depth) for k in kind])
    maker = _MAKERS.get(kind or ("object" if "properties" in schema else ""))
    return maker(schema, doc, depth) if maker else _anything()


def _string(schema: dict[str, Any], doc: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
    if schema.get("format") == "date":
        return st.dates().map(str)
    if schema.get("format") == "date-time":
        return st.datetimes().map(lambda d: d.isoformat())
    return st.text(min_size=schema.get("minLength", 0), max_size=min(schema.get("maxLength", 30), 30))


def _integer(schema: dict[str, Any], doc: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
    return st.integers(schema.get("minimum"), schema.get("maximum"))


def _number(schema: dict[str, Any], doc: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
    low, high = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    return st.floats(
        low,
        high,
        exclude_min=low is not None,
        exclude_max=high is not None,
        allow_nan=False,
        allow_infinity=False,
    )


def _object(schema: dict[str, Any], doc: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
    props = schema.get("properties", {})
    required = set(schema.get("required", []))
    extra = schema.get("additionalProperties")
    fixed = st.fixed_dictionaries(
        {k: from_schema(v, doc, depth + 1) for k, v in props.items() if k in required},
        optional={k: from_schema(v, doc, depth + 1) for k, v in props.items() if k not in required},
    )
    if isinstance(extra, dict) and not props:
        return st.dictionaries(st.text(max_size=12), from_schema(extra, doc, depth + 1), max_size=4)
    return fixed


def _array(schema: dict[str, Any], doc: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
    items = from_schema(schema.get("items", {}), doc, depth + 1)
    return st.lists(items, min_size=schema.get("minItems", 0), max_size=min(schema.get("maxItems", 4), 4))


def _anything() -> st.SearchStrategy[Any]:
    return st.none() | st.booleans() | st.integers() | st.text(max_size=10)


_MAKERS = {
    "string": _string,
    "integer": _integer,
    "number": _number,
    "boolean": lambda *_: st.booleans(),
    "null": lambda *_: st.none(),
    "object": _object,
    "array": _array,
}
