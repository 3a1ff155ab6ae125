"""A truthful OpenAPI document: one request and one response schema per object, from the catalog.

The routes take `{object}` as a path parameter; the document spells each object's paths out
(`/api/records/Account`, …) with the types and lengths of its fields, autonumber fields read-only.
The docs page loads Swagger UI from a package's files, never from a CDN (ReDoc is not offered: its
page fetches a logo from the internet).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import fastapi_offline
import sqlalchemy as sa
from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from autonumber.catalog import CatalogSnapshot
from autonumber.records import SYSTEM_COLUMNS
from autonumber.values import BIGINT_MAX

from .models import MAX_BULK

ASSETS = Path(fastapi_offline.__file__).parent / "static"
ASSETS_URL = "/static-docs"
RECORD_PATHS = ("/api/records/{object}", "/api/records/{object}/bulk", "/api/records/{object}/{record_id}")
REF = "#/components/schemas/"


def column_schema(column: sa.Column[Any]) -> dict[str, Any]:
    """The JSON schema of one column's values (null allowed: every field is optional)."""
    kind = column.type
    schema: dict[str, Any]
    if isinstance(kind, sa.String):
        schema = {"type": ["string", "null"]}
        if kind.length is not None:
            schema["maxLength"] = kind.length
    elif isinstance(kind, sa.Boolean):
        schema = {"type": ["boolean", "null"]}
    elif isinstance(kind, sa.BigInteger):
        schema = {"type": ["integer", "null"], "minimum": -BIGINT_MAX, "maximum": BIGINT_MAX}
    elif isinstance(kind, sa.Numeric):
        schema = {"type": ["number", "null"], "exclusiveMinimum": -(10**14), "exclusiveMaximum": 10**14}
    elif isinstance(kind, sa.DateTime):
        schema = {"type": ["string", "null"], "format": "date-time"}
    else:
        schema = {}
    return schema


def object_schemas(snapshot: CatalogSnapshot, name: str) -> dict[str, dict[str, Any]]:
    """`{name}In` (what a create or update may send) and `{name}` (a stored record)."""
    table = snapshot.table(name)
    autos = set(snapshot.autonumber_fields(name))
    writable: dict[str, Any] = {}
    stored: dict[str, Any] = {}
    for column in table.c:
        schema = column_schema(column)
        if column.name in autos or column.name in SYSTEM_COLUMNS:
            note = "autonumber: assigned on insert" if column.name in autos else "set by the platform"
            stored[column.name] = {**schema, "readOnly": True, "description": note}
        else:
            writable[column.name] = schema
            stored[column.name] = schema
    return {
        f"{name}In": {
            "type": "object",
            "title": f"{name}In",
            "properties": writable,
            "additionalProperties": False,
            "description": f"Field values of a {name} record; autonumber fields, Id and "
            "CreatedDate are assigned and refused here.",
        },
        name: {
            "type": "object",
            "title": name,
            "properties": stored,
            "required": ["Id", *sorted(autos)],
            "description": f"A stored {name} record.",
        },
    }


def document(app: FastAPI, snapshot: CatalogSnapshot) -> dict[str, Any]:
    """The OpenAPI document for the catalog as it is now."""
    base = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
    generic = {path: base["paths"].pop(path) for path in RECORD_PATHS if path in base["paths"]}
    schemas = base.setdefault("components", {}).setdefault("schemas", {})
    for name in sorted(snapshot.objects):
        schemas.update(object_schemas(snapshot, name))
        for path, item in generic.items():
            base["paths"][path.replace("{object}", name)] = _for_object(item, name)
    return base


def _for_object(item: dict[str, Any], name: str) -> dict[str, Any]:
    """One generic records path item made specific to an object."""
    out = copy.deepcopy(item)
    for method, op in out.items():
        op["operationId"] = f"{op['operationId']}_{name}"
        op["tags"] = [f"records: {name}"]
        op["parameters"] = [p for p in op.get("parameters", []) if p["name"] != "object"]
        body = op.get("requestBody", {}).get("content", {}).get("application/json")
        if body is not None:
            body["schema"] = _bulk_in(name) if "bulk" in op["operationId"] else {"$ref": f"{REF}{name}In"}
        ok = op["responses"].get("201") or op["responses"].get("200")
        if ok is not None:
            ok["content"]["application/json"]["schema"] = _response(op["operationId"], method, name)
    return out


def _bulk_in(name: str) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["records"],
        "properties": {
            "records": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_BULK,
                "items": {"$ref": f"{REF}{name}In"},
            }
        },
    }


def _response(operation: str, method: str, name: str) -> dict[str, Any]:
    record = {"$ref": f"{REF}{name}"}
    if "bulk" in operation:
        return {
            "type": "object",
            "required": ["object", "count", "records"],
            "properties": {
                "object": {"type": "string"},
                "count": {"type": "integer"},
                "records": {"type": "array", "items": record},
            },
        }
    if operation.startswith("list_records"):
        return {
            "type": "object",
            "required": ["object", "total", "limit", "offset", "records"],
            "properties": {
                "object": {"type": "string"},
                "total": {"type": "integer"},
                "limit": {"type": "integer"},
                "offset": {"type": "integer"},
                "records": {"type": "array", "items": record},
            },
        }
    return record


def install_docs(app: FastAPI) -> None:
    """Serve /openapi.json from the live catalog and /docs (Swagger UI) from local assets."""

    def openapi() -> dict[str, Any]:
        snapshot: CatalogSnapshot = app.state.console.snapshot
        cached = getattr(app.state, "openapi_cache", None)
        if cached is None or cached[0] is not snapshot:
            app.state.openapi_cache = (snapshot, document(app, snapshot))
        return app.state.openapi_cache[1]  # type: ignore[no-any-return]

    app.openapi = openapi  # type: ignore[method-assign]
    app.mount(ASSETS_URL, StaticFiles(directory=ASSETS), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title=f"{app.title} · API",
            swagger_js_url=f"{ASSETS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS_URL}/favicon.png",
        )
