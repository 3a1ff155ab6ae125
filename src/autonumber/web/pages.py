"""Server-rendered pages: objects, record lists, create/view/edit forms, the rules page and login."""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import groupby
from typing import Annotated, Any, Literal
from urllib.parse import parse_qsl, quote, unquote, urlencode

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from markupsafe import Markup, escape
from starlette.concurrency import run_in_threadpool

from autonumber.commands import counters, fields, objects, records
from autonumber.errors import AutonumberError, RecordError
from autonumber.format.tokens import NUMBERING, SCOPES
from autonumber.setup.standard import CORE_OBJECTS
from autonumber.write.reads import MAX_OFFSET

from . import forms
from .api import ConsoleDep, console, gaps_out
from .auth import API_ENV, COOKIE, CSRF_COOKIE, ENV, new_csrf_cookie
from .forms import FormField
from .state import Console

PAGE_SIZE = 25
RULES_PAGE_SIZE = 40
MAX_PAGE = MAX_OFFSET // PAGE_SIZE
FLASH = "autonumber_flash"
RULES_FILTERS: dict[str, tuple[str, ...] | None] = {
    "object": None,
    "field": None,
    "scope": ("", *SCOPES),
    "status": ("", "ok", "quarantined"),
}


async def csrf_protect(request: Request) -> None:
    """Every form POST must carry the CSRF token of its page (checked before the route runs)."""
    if request.method == "POST":
        c: Console = request.app.state.console
        c.admin.check_csrf(request, await request.form())


class LoginRequired(Exception):
    """A console page asked for without a login while AUTONUMBER_API_TOKEN is set."""

    def __init__(self, request: Request) -> None:
        super().__init__("log in first")
        self.next = str(request.url.path) + _query(request)


def viewer(request: Request) -> None:
    """With AUTONUMBER_API_TOKEN set, every console page but the login needs a login (or a Bearer
    token): the records and the gap audit are not for whoever reaches the port."""
    admin = request.app.state.console.admin
    if request.url.path in ("/login", "/logout") or not admin.writes_need_token:
        return
    if admin.role(request) is None:
        raise LoginRequired(request)


def to_login(request: Request, exc: Exception) -> Response:
    """The handler of LoginRequired: off to the login page, then back."""
    assert isinstance(exc, LoginRequired)
    return redirect(f"/login?next={quote(exc.next)}")


pages = APIRouter(
    include_in_schema=False, dependencies=[Depends(console), Depends(viewer), Depends(csrf_protect)]
)


NAV_OBJECTS = tuple(spec.name for spec in CORE_OBJECTS)
"""The CRM objects the top bar links to; every other object is one click away on the home page."""


def nav_objects(objects: Iterable[str]) -> list[str]:
    """The core objects that exist, in the pack's order (the full pack has 127 objects)."""
    present = set(objects)
    return [name for name in NAV_OBJECTS if name in present]


WORD_PART = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=_)(?=[^_])|(?<=\.)")


def word_breaks(name: str) -> Markup:
    """`name` escaped, with a `<wbr>` at each word part (camel case, `_`, `.`), so a long API name
    wraps as `AlternativePayment|Method` rather than mid-word."""
    return Markup("<wbr>").join(escape(part) for part in WORD_PART.split(name))


def render(request: Request, name: str, context: dict[str, Any], status: int = 200) -> Response:
    """Render a template with the common context; show and clear a pending flash message."""
    c: Console = request.app.state.console
    flash = unquote(request.cookies.get(FLASH, "")) or None
    csrf_cookie = request.cookies.get(CSRF_COOKIE) or new_csrf_cookie()
    ctx = {
        "objects": nav_objects(c.snapshot.objects),
        "admin": c.admin.is_admin(request),
        "role": c.admin.role(request),
        "login_enabled": c.admin.login_enabled,
        "admin_enabled": c.admin.enabled,
        "flash": flash,
        "env_name": ENV,
        "api_env_name": API_ENV,
        "csrf_token": c.admin.csrf_token(csrf_cookie),
        "record_id": lambda obj, record: forms.record_id(c.snapshot, obj, record),
        **context,
    }
    response: Response = request.app.state.templates.TemplateResponse(request, name, ctx, status_code=status)
    if flash:
        response.delete_cookie(FLASH)
    if request.cookies.get(CSRF_COOKIE) != csrf_cookie:
        response.set_cookie(CSRF_COOKIE, csrf_cookie, httponly=True, samesite="strict")
    return response


def redirect(url: str, flash: str | None = None) -> RedirectResponse:
    """A 303 to `url`, carrying a one-shot flash message."""
    response = RedirectResponse(url, status_code=303)
    if flash:
        response.set_cookie(FLASH, quote(flash), max_age=60, httponly=True, samesite="strict")
    return response


@pages.get("/", response_class=HTMLResponse)
def home(request: Request, c: ConsoleDep, q: Annotated[str, Query(max_length=200)] = "") -> Response:
    """The objects with their record counts and autonumber fields; `q` filters them by name."""
    return render(
        request, "home.html", {"summaries": objects.summaries(c.platform, q), "q": q, "page_id": "home"}
    )


@pages.get("/o/{object}", response_class=HTMLResponse)
def list_page(
    request: Request, object: str, c: ConsoleDep, page: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 1
) -> Response:
    """One page of an object's records."""
    total, rows = records.page(c.platform, object, PAGE_SIZE, (page - 1) * PAGE_SIZE)
    return render(
        request,
        "list.html",
        {
            "object": object,
            "records": rows,
            "fields": forms.form_fields(c.platform, object),
            "total": total,
            "page": page,
            "pages": max(1, -(-total // PAGE_SIZE)),
            "titles": forms.lookup_titles(c.platform, object, rows),
            "title_of": lambda r: forms.title(c.snapshot, object, r),
        },
    )


def _form_values(shown: list[FormField], form: Any, *, keep_empty: bool) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for f in shown:
        if f.kind == "autonumber":
            continue
        raw = str(form.get(f.name, "")).strip()
        if raw or keep_empty:
            values[f.name] = raw or None
    return values


def _form(
    request: Request,
    c: Console,
    object: str,
    record: dict[str, Any] | None,
    values: dict[str, Any],
    error: str | None = None,
    status: int = 200,
) -> Response:
    return render(
        request,
        "form.html",
        {
            "object": object,
            "record": record,
            "fields": forms.form_fields(c.platform, object),
            "values": values,
            "error": error,
            "title": forms.title(c.snapshot, object, record) if record else None,
        },
        status,
    )


@pages.get("/o/{object}/new", response_class=HTMLResponse)
def new_page(request: Request, object: str, c: ConsoleDep) -> Response:
    """The create form: inputs and pickers; autonumber fields are assigned on save."""
    records.require_object(c.platform, object)
    if not c.admin.can_write(request):
        return redirect(f"/login?next=/o/{object}/new")
    return _form(request, c, object, None, dict(request.query_params))


@pages.post("/o/{object}/new", response_class=HTMLResponse)
async def create(request: Request, object: str, c: ConsoleDep) -> Response:
    """Insert the record; on an error, show the form again with the message."""
    c.admin.require_writer(request)
    shown = await run_in_threadpool(forms.form_fields, c.platform, records.require_object(c.platform, object))
    values = _form_values(shown, await request.form(), keep_empty=False)
    try:
        record = await run_in_threadpool(records.insert_on, c.platform, object, values)
    except AutonumberError as exc:
        return await run_in_threadpool(_form, request, c, object, None, values, str(exc), 422)
    numbers = [str(record[f.name]) for f in shown if f.kind == "autonumber" and record.get(f.name)]
    flash = f"{object} created" + (f": {', '.join(numbers)}" if numbers else "")
    return redirect(f"/o/{object}/{forms.record_id(c.snapshot, object, record)}", flash)


@pages.get("/o/{object}/{record_id}", response_class=HTMLResponse)
def view_page(request: Request, object: str, record_id: str, c: ConsoleDep) -> Response:
    """One record with its numbers."""
    record = records.get_on(c.platform, object, record_id)
    return render(
        request,
        "view.html",
        {
            "object": object,
            "record": record,
            "fields": forms.form_fields(c.platform, object),
            "titles": forms.lookup_titles(c.platform, object, [record]),
            "title": forms.title(c.snapshot, object, record),
        },
    )


@pages.get("/o/{object}/{record_id}/edit", response_class=HTMLResponse)
def edit_page(request: Request, object: str, record_id: str, c: ConsoleDep) -> Response:
    """The edit form: autonumber fields shown read-only."""
    record = records.get_on(c.platform, object, record_id)
    if not c.admin.can_write(request):
        return redirect(f"/login?next=/o/{object}/{record_id}/edit")
    return _form(request, c, object, record, record)


@pages.post("/o/{object}/{record_id}/edit", response_class=HTMLResponse)
async def save(request: Request, object: str, record_id: str, c: ConsoleDep) -> Response:
    """Save ordinary fields (autonumber inputs, if posted anyway, are refused by the library)."""
    c.admin.require_writer(request)
    record = await run_in_threadpool(records.get_on, c.platform, object, record_id)
    shown = await run_in_threadpool(forms.form_fields, c.platform, object)
    form = await request.form()
    values = _form_values(shown, form, keep_empty=True)
    # A read-only input is posted back unchanged; a changed one was tampered with and is refused.
    for f in shown:
        if f.kind == "autonumber" and f.name in form and form[f.name] != (record.get(f.name) or ""):
            values[f.name] = form[f.name]
    try:
        await run_in_threadpool(records.update, c.platform, object, record_id, values)
    except AutonumberError as exc:
        return await run_in_threadpool(_form, request, c, object, record, {**record, **values}, str(exc), 422)
    return redirect(f"/o/{object}/{record_id}", f"{object} saved")


@pages.get("/rules", response_class=HTMLResponse)
def rules_page(
    request: Request,
    c: ConsoleDep,
    object: Annotated[str, Query(max_length=200)] = "",
    field: Annotated[str, Query(max_length=200)] = "",
    scope: Annotated[Literal["", "global", "per_day", "per_prefix"], Query()] = "",
    status: Annotated[Literal["", "ok", "quarantined"], Query()] = "",
    page: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 1,
    result: Annotated[str, Query(max_length=300)] = "",
) -> Response:
    """The autonumber fields the filter keeps, a page at a time and grouped by object, with their
    counters; for a logged-in admin an "Edit" on each that loads the field's editors. `result`: the
    field the flash message is about, shown next to its row when the row is on this page."""
    if c.admin.enabled and not c.admin.is_admin(request):
        return redirect(f"/login?next={quote(str(request.url.path) + _query(request))}")
    where = fields.FieldFilter(object=object, field=field, scope=scope, status=status)
    found = fields.find_fields(c.platform, where)
    pages_ = max(1, -(-len(found) // RULES_PAGE_SIZE))
    shown = found[(page - 1) * RULES_PAGE_SIZE : page * RULES_PAGE_SIZE]
    groups = [(name, list(items)) for name, items in groupby(shown, key=lambda f: f.object)]
    args = {"object": object, "field": field, "scope": scope, "status": status}
    back = _back(urlencode({**args, "page": page}))
    return render(
        request,
        "rules.html",
        {
            "groups": groups,
            "total": len(found),
            "page": page,
            "pages": pages_,
            "filter": args,
            "page_url": lambda n: "?" + urlencode({**{k: v for k, v in args.items() if v}, "page": n}),
            "scopes": SCOPES,
            "numberings": NUMBERING,
            "page_id": "rules",
            "back": back,
            "result_field": result if result in {f.field_id for f in shown} else None,
        },
    )


@pages.get("/rules/{field_id}/edit", response_class=HTMLResponse)
def rule_edit_page(
    request: Request,
    field_id: str,
    c: ConsoleDep,
    back: Annotated[str, Query(max_length=1000)] = "",
    fragment: bool = False,
) -> Response:
    """One rule's editors (format and options, removal, next number): a page of their own, or with
    `fragment=1` the markup the rules page loads into a row when its "Edit" opens, so that page does
    not carry every field's editors. `back` is the rules page (filter and page) to return to."""
    if not c.admin.is_admin(request):
        if c.admin.enabled:
            return redirect(f"/login?next={quote(str(request.url.path) + _query(request))}")
        return redirect("/rules")
    context = {
        "f": fields.field_view(c.platform, field_id),
        "back": _back(back),
        "scopes": SCOPES,
        "numberings": NUMBERING,
    }
    return render(
        request, "rule_editor.html" if fragment else "rule_edit.html", {**context, "page_id": "rules"}
    )


def _back(raw: str) -> str:
    """The rules page's filter and page out of a query string, checked; everything else dropped."""
    kept: dict[str, str] = {}
    for key, value in parse_qsl(raw.lstrip("?"))[:20]:
        if key == "page":
            ok = value.isascii() and value.isdigit() and 1 < int(value) <= MAX_PAGE
        else:
            allowed = RULES_FILTERS.get(key, ())
            ok = key in RULES_FILTERS and 0 < len(value) <= 200 and (allowed is None or value in allowed)
        if ok:
            kept[key] = value
    return urlencode(kept)


def rules_redirect(field_id: str, back: str, message: str) -> RedirectResponse:
    """Back to the rules page the admin came from, with `message` next to the field's row (the page
    opens at it, `#result`), or at the top when the row is not on that page any more."""
    return redirect(f"/rules?{urlencode([*parse_qsl(_back(back)), ('result', field_id)])}#result", message)


def _query(request: Request) -> str:
    return f"?{request.url.query}" if request.url.query else ""


@pages.get("/rules/{field_id}/gaps", response_class=HTMLResponse)
def gaps_page(request: Request, field_id: str, c: ConsoleDep) -> Response:
    """The gap audit of one field: the values its counters moved past that no record carries."""
    if c.admin.enabled and not c.admin.is_admin(request):
        return redirect(f"/login?next=/rules/{quote(field_id)}/gaps")
    return render(request, "gaps.html", {"report": gaps_out(c, field_id)})


@pages.post("/rules/{field_id}", response_class=HTMLResponse)
async def save_rule(request: Request, field_id: str, c: ConsoleDep) -> Response:
    """Store a new format through the applier's validation; refuse invariant breaks, and an edit
    of a rule someone else changed since the page was loaded (the form's `base` token)."""
    form = await request.form()
    back = str(form.get("back", ""))
    try:
        c.admin.require(request)
        scope = str(form.get("scope") or "") or None
        start = str(form.get("start") or "")
        if start and not start.isdigit():
            raise RecordError(f"{field_id}: start {start!r} is not a whole number ≥ 0")
        numbering = str(form.get("numbering", "")) or None
        time_zone = str(form.get("time_zone", "")).strip() or None
        allocation = str(form.get("allocation", "")).strip() or None
        base = str(form.get("base", "")) or None  # the rule as the page showed it
        fiscal = str(form.get("fiscal_year_start", "")).strip()
        date_source = str(form.get("date_source", "")).strip() or None
        # the form shows the stored name: sent empty, the field leaves it for a counter of its own
        shared = str(form["shared_counter"]).strip() if "shared_counter" in form else None
        if fiscal and not fiscal.isdigit():
            raise RecordError(f"{field_id}: fiscal year start {fiscal!r} is not a month 1-12")
        done = await run_in_threadpool(
            lambda: fields.edit_rule(
                c.platform,
                field_id,
                {
                    "format": str(form.get("format", "")).strip() or None,
                    "scope": scope,
                    "start": int(start) if start else None,
                    "numbering": numbering,
                    "time_zone": time_zone,
                    "allocation": allocation,
                    "fiscal_year_start": int(fiscal) if fiscal else None,
                    "date_source": date_source,
                    "shared_counter": shared,
                },
                base,
            )
        )
        out = await run_in_threadpool(fields.field_view, c.platform, done.field_id)
    except AutonumberError as exc:
        return rules_redirect(field_id, back, f"error: {exc}")
    return rules_redirect(out.field_id, back, f"{out.object}.{out.field} now uses {out.format}")


@pages.post("/rules/{field_id}/remove", response_class=HTMLResponse)
async def remove_rule(request: Request, field_id: str, c: ConsoleDep) -> Response:
    """Remove a field's rule (`autonumber field remove`): its column and values stay."""
    back = str((await request.form()).get("back", ""))
    try:
        c.admin.require(request)
        name = c.snapshot.stored(field_id).name
        await run_in_threadpool(fields.drop_rule, c.platform, field_id)
    except AutonumberError as exc:
        return rules_redirect(field_id, back, f"error: {exc}")
    return rules_redirect(field_id, back, f"{name}: rule removed, stored values kept")


@pages.post("/rules/{field_id}/counter", response_class=HTMLResponse)
async def save_counter(request: Request, field_id: str, c: ConsoleDep) -> Response:
    """Set a counter's next number like `autonumber counter set` (admin; refusals change nothing)."""
    form = await request.form()
    back = str(form.get("back", ""))
    try:
        c.admin.require(request)
        text = str(form.get("next", "")).strip()
        if not text.isdigit():
            raise RecordError(f"{field_id}: next number {text!r} is not a whole number ≥ 0")
        key = form.get("scope_key")
        scope_key = None if key is None else str(key)
        move = await run_in_threadpool(counters.set_counter_on, c.platform, field_id, int(text), scope_key)
    except AutonumberError as exc:
        return rules_redirect(field_id, back, f"error: {exc}")
    return rules_redirect(move.field_id, back, move.line)


@pages.post("/rules/objects/new", response_class=HTMLResponse)
async def save_object(request: Request, c: ConsoleDep) -> Response:
    """Create a custom object (`Name:type` field specs, one per line) like `autonumber object add`."""
    form = await request.form()
    name = str(form.get("object", "")).strip()
    specs = [line.strip() for line in str(form.get("fields", "")).splitlines() if line.strip()]
    try:
        c.admin.require(request)
        await run_in_threadpool(objects.create, c.platform, name, specs)
    except AutonumberError as exc:
        return redirect("/rules#new-object", f"error: {exc}")
    return redirect(f"/o/{quote(name)}", f"object {name} created")


@pages.get("/login", response_class=HTMLResponse)
def login_page(request: Request, next: str = "/rules") -> Response:
    """The login form (admin token or API token)."""
    return render(request, "login.html", {"next": _local(next), "error": None})


@pages.post("/login", response_class=HTMLResponse)
async def login(request: Request, c: ConsoleDep) -> Response:
    """Check the token (rate limited per client); start a signed, expiring server-side session."""
    form = await request.form()
    target = _local(str(form.get("next", "/rules")))
    client = request.client.host if request.client else "unknown"
    c.admin.limiter.check(client)
    role = c.admin.role_of_token(str(form.get("token", "")))
    if role is None:
        if c.admin.login_enabled:
            c.admin.limiter.failed(client)
        error = (
            f"logging in is disabled: start the server with {ENV} or {API_ENV} set"
            if not c.admin.login_enabled
            else "wrong token"
        )
        return render(request, "login.html", {"next": target, "error": error}, 401)
    value, max_age = await run_in_threadpool(c.admin.start_session, role)
    response = redirect(target, f"logged in as {role}")
    response.set_cookie(COOKIE, value, max_age=max_age, httponly=True, samesite="strict")
    return response


@pages.post("/logout")
async def logout(request: Request, c: ConsoleDep) -> Response:
    """End the session on the server and forget the cookie."""
    await run_in_threadpool(c.admin.end_session, request)
    response = redirect("/", "logged out")
    response.delete_cookie(COOKIE)
    return response


def _local(url: str) -> str:
    """Only same-site paths as redirect targets."""
    return url if url.startswith("/") and not url.startswith("//") and "\\" not in url else "/rules"
