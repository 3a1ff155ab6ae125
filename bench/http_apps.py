"""The two HTTP servers of the job benchmark, as Uvicorn factories (so `--workers` can import them).

- `autonumber_app`: the product's own app (`autonumber.web.create_app`), what `autonumber serve` runs;
- `native_app`: the minimal FastAPI app a user could write instead — POST inserts one row whose
  number is the database's own sequence/auto-increment, one transaction per request; GET /ping is
  the trivial endpoint that shows the load generator is not the bottleneck.
Both read the database URL from AUTONUMBER_BENCH_HTTP_DB.
"""

from __future__ import annotations

import os
from typing import Any

import sqlalchemy as sa
from fastapi import FastAPI
from fastapi.responses import PlainTextResponse

ENV = "AUTONUMBER_BENCH_HTTP_DB"
THREADS = 40
"""Starlette's default thread pool for sync endpoints: the native app's pool matches it."""


def autonumber_app() -> FastAPI:
    """The product's app over the bench database."""
    from autonumber.web import create_app

    return create_app(os.environ[ENV])


def native_app() -> FastAPI:
    """POST /cases: INSERT … RETURNING the sequence number; GET /ping: nothing at all."""
    from autonumber.db import create_engine

    from .job import native_table

    db = create_engine(os.environ[ENV], pool_size=THREADS, max_overflow=0, pool_pre_ping=False)
    table = native_table()
    app = FastAPI()

    @app.post("/cases", status_code=201)
    def create_case(body: dict[str, Any]) -> dict[str, Any]:
        with db.begin() as conn:
            number = conn.execute(
                sa.insert(table).values(subject=str(body.get("Subject", "")))
            ).inserted_primary_key[0]  # type: ignore[index]
        return {"number": int(number), "subject": body.get("Subject")}

    @app.get("/ping")
    async def ping() -> PlainTextResponse:
        return PlainTextResponse("ok")  # on the event loop: the cheapest request this stack serves

    return app
