"""The JSON API (docs/console.md): records, autonumber fields, preview, health and metrics."""

from __future__ import annotations

import os
from dataclasses import asdict
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Depends, Header, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Gauge, generate_latest, multiprocess
from pydantic_core import to_json

from autonumber.bulk.imports import ImportOptions
from autonumber.commands import audit, counters, fields, records
from autonumber.engine.metrics import make_all as make_metrics
from autonumber.errors import RecordError
from autonumber.write.reads import MAX_OFFSET
from autonumber.write.records import BATCH_SIZE

from .models import (
    MAX_REJECTED,
    BulkIn,
    BulkOut,
    CounterMoveOut,
    CounterSetIn,
    CountersOut,
    ErrorOut,
    FieldOut,
    FieldRemovedOut,
    FieldRenameIn,
    GapsOut,
    HealthOut,
    ImportOut,
    PreviewIn,
    PreviewOut,
    ReadyOut,
    RecordIn,
    RecordPage,
    RejectedLine,
    RuleChangeIn,
)
from .ndjson import NdjsonRoute, body_stream
from .preview import preview
from .state import Console


async def console(request: Request) -> Console:
    """The app's Console (async: reading app state needs no worker thread)."""
    c: Console = request.app.state.console
    return c


ConsoleDep = Annotated[Console, Depends(console)]
WORKER = Gauge(
    "autonumber_worker",
    "1 per serving process; under --workers one series per worker pid.",
    multiprocess_mode="all",
)


async def token_holder(request: Request) -> None:
    """With AUTONUMBER_API_TOKEN set, every API call — reads too — needs it (or the admin token) as a
    Bearer header or a console login; without it the API is open.

    Open access or a Bearer token are decided on the event loop; only a session cookie, which the
    database holds, is looked up on a worker thread."""
    admin = (await console(request)).admin
    if not admin.writes_need_token or admin.bearer_role(request) is not None:
        return
    await run_in_threadpool(admin.require_writer, request)


IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        max_length=255,
        description="Send the same key to retry safely: the same key and body return the records "
        "stored the first time (kept at least 24 h); the same key with another body is a 422.",
    ),
]
ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorOut, "description": text}
    for code, text in (
        (400, "a request the server cannot read (e.g. a malformed body)"),
        (
            401,
            "AUTONUMBER_API_TOKEN is set and the request has no valid Bearer token or login, or "
            "an admin call without the admin token",
        ),
        (403, "a cross-origin browser request, or admin changes disabled on this server"),
        (404, "unknown object, record or field"),
        (409, "the field's rule is quarantined (RuleQuarantined) or its counter is full"),
        (
            422,
            "bad JSON, a wrong type, text with NUL or a lone surrogate, an autonumber field "
            "supplied, an Idempotency-Key reused with another body, or a cross-record token that "
            "cannot be resolved (TokenResolveError names the token and the cause)",
        ),
        (
            503,
            "the database is unavailable or busy, or a commit's outcome is unknown (the body's "
            "record_ids say which Ids to look up); retry later, with the same Idempotency-Key",
        ),
    )
}

api = APIRouter(prefix="/api", responses=ERRORS, dependencies=[Depends(token_holder)])
ADMIN_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorOut, "description": "no or wrong admin token"},
    403: {"model": ErrorOut, "description": "AUTONUMBER_ADMIN_TOKEN is not set on the server"},
}
ops = APIRouter()


@api.post(
    "/records/{object}",
    status_code=201,
    response_model=dict[str, Any],
    tags=["records"],
)
def create_record(
    object: str, data: Annotated[RecordIn, Body()], c: ConsoleDep, key: IdempotencyKey = None
) -> Response:
    """Insert one record; the response holds its assigned numbers."""
    # encoded by pydantic-core at once: the hottest endpoint skips the response model's re-validation
    body = to_json(records.insert_on(c.platform, object, data, idempotency_key=key))
    return Response(body, status_code=201, media_type="application/json")


async def import_records(
    object: str,
    request: Request,
    c: ConsoleDep,
    commit_every: Annotated[int | None, Query(ge=1, le=1_000_000)] = None,
    batch_size: Annotated[int, Query(ge=1, le=100_000)] = BATCH_SIZE,
    on_error: Annotated[Literal["fail", "skip"], Query()] = "fail",
) -> ImportOut:
    """NDJSON body, streamed: one record per line, in batches; all or nothing unless `commit_every`
    (rows per committed batch); `on_error=skip` imports the valid lines and lists the others."""
    if "idempotency-key" in request.headers:  # a replayed stream would be imported twice: refuse
        raise RecordError(
            "Idempotency-Key is not supported with an NDJSON body; use commit_every and send the "
            "lines after the last stored one again"
        )
    options = ImportOptions(batch_size, commit_every, keep_going=on_error == "skip")
    stream = body_stream(request.stream())
    done = await run_in_threadpool(
        records.import_stream, c.platform, object, stream, options, keep_rejected=MAX_REJECTED
    )
    return ImportOut(
        object=done.object_name,
        count=done.summary.inserted,
        last_line=done.summary.last_line,
        rejected_count=done.summary.rejected,
        rejected=[RejectedLine(line=line, error=error) for line, error in done.rejected],
    )


api.add_api_route(  # before the JSON route of the same path: it matches NDJSON bodies only
    "/records/{object}/bulk",
    import_records,
    methods=["POST"],
    status_code=201,
    tags=["records"],
    include_in_schema=False,
    route_class_override=NdjsonRoute,
)


@api.post("/records/{object}/bulk", status_code=201, tags=["records"])
def create_records(object: str, body: BulkIn, c: ConsoleDep, key: IdempotencyKey = None) -> BulkOut:
    """Insert many records in one transaction (one reservation batch per autonumber field)."""
    stored = records.insert_many(c.platform, object, body.records, idempotency_key=key)
    return BulkOut(object=object, count=len(stored), records=stored)


@api.get("/records/{object}", tags=["records"])
def list_records(
    object: str,
    c: ConsoleDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
) -> RecordPage:
    """One page of records, newest first."""
    total, rows = records.page(c.platform, object, limit, offset)
    return RecordPage(object=object, total=total, limit=limit, offset=offset, records=rows)


@api.get("/records/{object}/{record_id}", tags=["records"])
def get_record(object: str, record_id: str, c: ConsoleDep) -> dict[str, Any]:
    """One record by Id."""
    return records.get_on(c.platform, object, record_id)


@api.patch("/records/{object}/{record_id}", tags=["records"])
def update_record(
    object: str, record_id: str, changes: Annotated[RecordIn, Body()], c: ConsoleDep
) -> dict[str, Any]:
    """Change ordinary fields; touching an autonumber field is a 422 naming it."""
    return records.update(c.platform, object, record_id, changes)


@api.get("/autonumber/fields", tags=["autonumber"])
def list_fields(c: ConsoleDep) -> list[FieldOut]:
    """Every autonumber field: format, scope, next value per scope, status ok or quarantined."""
    return fields.find_fields(c.platform)


@api.post("/autonumber/preview", tags=["autonumber"])
def preview_format(req: PreviewIn, c: ConsoleDep) -> PreviewOut:
    """Render a format with a sample counter, day and values, or the `rule N` error; consumes nothing."""
    return preview(c.snapshot, req)


@api.put(
    "/autonumber/fields/{field_id}",
    tags=["admin"],
    responses={
        401: {"model": ErrorOut, "description": "no or wrong admin token"},
        403: {"model": ErrorOut, "description": "AUTONUMBER_ADMIN_TOKEN is not set on the server"},
    },
)
def change_field(field_id: str, body: RuleChangeIn, request: Request, c: ConsoleDep) -> FieldOut:
    """Admin: change a rule as `autonumber field set` does; 409 with one line when it is refused."""
    c.admin.require(request)
    done = fields.edit_rule(c.platform, field_id, body.model_dump(exclude={"base"}), body.base)
    return fields.field_view(c.platform, done.field_id)


@api.delete("/autonumber/fields/{field_id}", tags=["admin"], responses=ADMIN_ERRORS)
def remove_field(field_id: str, request: Request, c: ConsoleDep) -> FieldRemovedOut:
    """Admin: remove the rule as `autonumber field remove` does; the column and its values stay,
    and the field added back later continues above every value it ever issued."""
    c.admin.require(request)
    name = c.snapshot.stored(field_id).name
    done = fields.drop_rule(c.platform, field_id)
    return FieldRemovedOut(field_id=done.field_id, field=name, changes=done.changes)


@api.post("/autonumber/fields/{field_id}/rename", tags=["admin"], responses=ADMIN_ERRORS)
def rename_field(field_id: str, body: FieldRenameIn, request: Request, c: ConsoleDep) -> FieldOut:
    """Admin: rename the field as `autonumber field rename` does (it keeps its id); 409 with one
    line when refused (an adopted table's column the application has not renamed yet)."""
    c.admin.require(request)
    done = fields.rename_rule(c.platform, field_id, body.name)
    return fields.field_view(c.platform, done.field_id)


@api.get("/autonumber/fields/{field_id}/counters", tags=["autonumber"])
def field_counters(field_id: str, c: ConsoleDep) -> CountersOut:
    """The field's counters: next value and number, the floor and the lowest next value a set accepts."""
    return CountersOut.model_validate(counters.counters_on(c.platform, field_id), from_attributes=True)


@api.put(
    "/autonumber/fields/{field_id}/counters",
    tags=["admin"],
    responses={
        401: {"model": ErrorOut, "description": "no or wrong admin token"},
        403: {"model": ErrorOut, "description": "AUTONUMBER_ADMIN_TOKEN is not set on the server"},
    },
)
def set_field_counter(field_id: str, body: CounterSetIn, request: Request, c: ConsoleDep) -> CounterMoveOut:
    """Admin: set the next number as `autonumber counter set` does; 409 with one line when it is below
    a number the scope ever reserved (nothing changed)."""
    c.admin.require(request)
    move = counters.set_counter_on(c.platform, field_id, body.next, body.scope_key)
    return CounterMoveOut.model_validate({**asdict(move), "message": move.line})


@api.get("/autonumber/fields/{field_id}/gaps", tags=["autonumber"])
def field_gaps(
    field_id: str,
    c: ConsoleDep,
    scope_key: Annotated[str | None, Query(description="only this counter scope")] = None,
    first: Annotated[int | None, Query(alias="from", ge=0, description="lowest value checked")] = None,
    last: Annotated[int | None, Query(alias="to", ge=0, description="highest value checked")] = None,
) -> GapsOut:
    """Every value the field's counters moved past that no stored record carries, with the reason."""
    return gaps_out(c, field_id, scope_key, first, last)


def gaps_out(
    c: Console, field_id: str, scope_key: str | None = None, lo: int | None = None, hi: int | None = None
) -> GapsOut:
    """The gap audit of one field, as the API and the gaps page show it."""
    report = audit.gaps_on(c.platform, field_id, scope_key=scope_key, lo=lo, hi=hi)
    return GapsOut.model_validate(report, from_attributes=True)


@ops.get("/healthz", tags=["ops"], responses={503: {"model": ErrorOut, "description": "database down"}})
def healthz(c: ConsoleDep) -> HealthOut:
    """The server runs and the database answers with its clock."""
    dialect = c.platform.dialect
    with c.platform.db.connect() as conn:
        clock = dialect.utc_now(conn)
    return HealthOut(
        status="ok", backend=dialect.name, database_clock=clock.isoformat(), worker_pid=os.getpid()
    )


@ops.get("/readyz", tags=["ops"], responses={503: {"model": ErrorOut, "description": "not ready"}})
def readyz(c: ConsoleDep) -> ReadyOut:
    """Ready for traffic: the database answers and the catalog is loaded (a load balancer's probe)."""
    with c.platform.db.connect() as conn:
        c.platform.dialect.utc_now(conn)
    objects = len(c.snapshot.objects)
    return ReadyOut(status="ready", objects=objects, worker_pid=os.getpid())


@ops.get("/metrics", tags=["ops"], response_class=Response)
def metrics() -> Response:
    """Prometheus metrics of the whole server: summed over every worker when run with --workers."""
    make_metrics()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
