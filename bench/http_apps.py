"""The peer of the job benchmark's HTTP rows, as a Uvicorn factory (so `--workers` can import it).

`native_app` is the minimal FastAPI app a user could write instead of `autonumber serve`: POST
inserts one row whose number is the database's own sequence/auto-increment, one transaction per
request. It reads the database URL from AUTONUMBER_BENCH_HTTP_DB.
"""

from __future__ import annotations

import os
from typing import Any

import sqlalchemy as sa
from fastapi import FastAPI

ENV = "AUTONUMBER_BENCH_HTTP_DB"
THREADS = 40
"""Starlette's default thread pool for sync endpoints: the native app's pool matches it."""


def native_app() -> FastAPI:
    """POST /cases: INSERT … RETURNING the sequence number."""
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

    return app
