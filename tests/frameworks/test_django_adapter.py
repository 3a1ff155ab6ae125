"""`autonumber.integrations.django` in-process on Django's SQLite, MySQL/MariaDB and PostgreSQL
backends: AutoNumberField numbered on first save and read-only afterwards, bulk_create, 8 threads ×
100 instances as 100 unique contiguous values, a rolled-back transaction leaving a gap, and the
RegisterAutoNumber migration operation."""

from __future__ import annotations

import importlib.util
import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import django
import pymysql
import pytest
from django.conf import settings
from sqlalchemy.engine import make_url

import autonumber
from autonumber.db import create_engine
from autonumber.errors import AutonumberError
from autonumber.rules import stored_rule
from support import bootstrap_url, invoice_counters, run_together

pymysql.install_as_MySQLdb()
if not settings.configured:  # the same settings as the bench's django-sequences peer (one process)
    settings.configure(
        DATABASES={"default": {}},
        DATABASE_ROUTERS=["bench.django_peer.Router"],
        INSTALLED_APPS=["sequences"] if importlib.util.find_spec("sequences") else [],
        USE_TZ=True,
        DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
    )
    django.setup()

from django.db import connections, models, transaction  # noqa: E402
from django.db.migrations.state import ModelState, ProjectState  # noqa: E402

from autonumber.integrations.django import (  # noqa: E402
    AutoNumberField,
    NeedsAtomic,
    ReadOnlyAutoNumber,
    RegisterAutoNumber,
    close_platforms,
    database_settings,
    database_url,
    register,
)

FORMAT = "INV-{YYYY}-{00000}"


class Invoice(models.Model):
    customer = models.CharField(max_length=40)
    number = AutoNumberField(format=FORMAT, scope="per_prefix", max_length=30)

    class Meta:
        app_label = "t19dj"
        db_table = "dj_invoices"


class Bill(models.Model):
    customer = models.CharField(max_length=40)
    number = AutoNumberField(
        format="B-{YYYY}{MM}{DD}-{0000}", numbering="gapless", time_zone="Pacific/Kiritimati"
    )

    class Meta:
        app_label = "t19dj"
        db_table = "dj_bills"


_aliases = itertools.count()


def database_entry(url: str) -> dict[str, Any]:
    """Django's DATABASES entry for a test URL."""
    entry = database_settings(url)
    if url.startswith("sqlite"):
        entry["OPTIONS"] = {"timeout": 30}
    return entry


@pytest.fixture
def alias(db_url: str) -> Iterator[str]:
    """A fresh Django alias on a bootstrapped database, with the model's table created."""
    bootstrap_url(db_url)
    name = f"t19_{next(_aliases)}"
    entry = database_entry(db_url)
    connections.settings[name] = connections.configure_settings({"default": {}, name: entry})[name]
    with connections[name].schema_editor() as editor:
        editor.create_model(Invoice)
        editor.create_model(Bill)
    yield name
    connections[name].close()
    close_platforms()


def numbers(alias: str) -> list[str]:
    return [n for n in Invoice.objects.using(alias).order_by("id").values_list("number", flat=True) if n]


def test_database_url_is_built_from_django_databases(alias: str, db_url: str) -> None:
    built = make_url(database_url(alias))
    wanted = make_url(db_url)
    assert (built.get_backend_name(), built.database, built.host or None) == (
        wanted.get_backend_name(),
        wanted.database,
        wanted.host or None,
    )


def test_first_save_numbers_then_read_only_and_bulk_create(alias: str) -> None:
    a = Invoice.objects.using(alias).create(customer="a")
    b = Invoice(customer="b")
    b.save(using=alias)
    assert invoice_counters([a.number, b.number]) == [1, 2]
    a.customer = "a2"
    a.save(using=alias)  # other fields stay editable
    loaded = Invoice.objects.using(alias).get(pk=a.pk)
    assert loaded.number == a.number and loaded.customer == "a2"
    loaded.number = "INV-1999-00001"
    with pytest.raises(ReadOnlyAutoNumber, match="read-only afterwards"):
        loaded.save(using=alias)
    with pytest.raises(ReadOnlyAutoNumber, match="cannot be supplied"):
        Invoice.objects.using(alias).create(customer="c", number="INV-1999-00002")
    made = Invoice.objects.using(alias).bulk_create([Invoice(customer=f"bulk{i}") for i in range(5)])
    assert invoice_counters([m.number for m in made]) == [3, 4, 5, 6, 7]
    assert invoice_counters(numbers(alias)) == [1, 2, 3, 4, 5, 6, 7]


def test_eight_threads_number_100_instances_unique_and_contiguous(alias: str) -> None:
    Invoice.objects.using(alias).create(customer="warm")  # registers the field once, up front
    shares = [13, 13, 13, 13, 12, 12, 12, 11]

    def work(t: int) -> None:
        try:
            for i in range(shares[t]):
                if i % 4 == 3:
                    Invoice.objects.using(alias).bulk_create([Invoice(customer=f"t{t}")])
                else:
                    Invoice.objects.using(alias).create(customer=f"t{t}")
        finally:
            connections.close_all()

    assert run_together(work, 8) == []
    values = numbers(alias)
    assert len(values) == 100 and len(set(values)) == 100
    assert sorted(invoice_counters(values)) == list(range(1, 101))


def test_rolled_back_transaction_leaves_a_gap_except_on_sqlite(alias: str) -> None:
    """SQLite numbers inside the caller's transaction (one writer): the numbers roll back too."""
    Invoice.objects.using(alias).create(customer="kept")
    with pytest.raises(RuntimeError), transaction.atomic(using=alias):
        Invoice.objects.using(alias).create(customer="lost")
        raise RuntimeError("roll back")
    Invoice.objects.using(alias).create(customer="after")
    sqlite = connections[alias].vendor == "sqlite"
    assert invoice_counters(numbers(alias)) == ([1, 2] if sqlite else [1, 3])


def test_two_saves_in_one_atomic_block_do_not_wait_on_each_other(alias: str) -> None:
    """The SQLite hang: the second save's reservation waited for the first save's write lock.

    A field that was never registered (no migrate) cannot be registered inside SQLite's
    transaction: that is refused at once, with the way out."""
    if connections[alias].vendor == "sqlite":
        with (
            pytest.raises(AutonumberError, match=re.escape("run `manage.py migrate`")),
            transaction.atomic(using=alias),
        ):
            Invoice.objects.using(alias).create(customer="unregistered")
    register(Invoice, Invoice._meta.get_field("number"), alias)  # what migrate does
    with transaction.atomic(using=alias):
        a = Invoice.objects.using(alias).create(customer="a")
        b = Invoice.objects.using(alias).create(customer="b")
        more = Invoice.objects.using(alias).bulk_create([Invoice(customer="c"), Invoice(customer="d")])
    assert invoice_counters([a.number, b.number, *(m.number for m in more)]) == [1, 2, 3, 4]
    assert invoice_counters(numbers(alias)) == [1, 2, 3, 4]


def test_gapless_field_numbers_in_the_callers_transaction_and_refuses_autocommit(
    alias: str, db_url: str
) -> None:
    with pytest.raises(NeedsAtomic, match=re.escape("save it inside transaction.atomic()")):
        Bill.objects.using(alias).create(customer="outside")
    with transaction.atomic(using=alias):
        first = Bill.objects.using(alias).create(customer="a")
    with pytest.raises(RuntimeError), transaction.atomic(using=alias):
        Bill.objects.using(alias).create(customer="lost")
        raise RuntimeError("roll back")
    with transaction.atomic(using=alias):
        second = Bill.objects.using(alias).create(customer="b")
    assert [first.number[-4:], second.number[-4:]] == ["0001", "0002"]
    eng = create_engine(db_url)
    try:
        with eng.connect() as conn:
            rule = stored_rule(conn, "dj_bills", "number")
    finally:
        eng.dispose()
    assert rule is not None and (rule.numbering, rule.time_zone) == ("gapless", "Pacific/Kiritimati")


def test_migration_operation_registers_the_field(alias: str, db_url: str) -> None:
    state = ProjectState()
    state.add_model(ModelState.from_model(Invoice))
    op = RegisterAutoNumber("invoice", "number")
    with connections[alias].schema_editor() as editor:
        op.database_forwards("t19dj", editor, state, state)
    eng = create_engine(db_url)
    try:
        with eng.connect() as conn:
            rule = stored_rule(conn, "dj_invoices", "number")
    finally:
        eng.dispose()
    assert rule is not None and rule.format == FORMAT and rule.scope == "per_prefix"
    assert op.deconstruct() == ("RegisterAutoNumber", ["invoice", "number"], {})
    with autonumber.connect(db_url) as p:  # the library continues the same sequence
        assert invoice_counters([p.records.insert("dj_invoices", {"customer": "lib"})["number"]]) == [1]
    assert invoice_counters([Invoice.objects.using(alias).create(customer="dj").number]) == [2]


def test_system_check_validates_the_rule() -> None:
    def errors(**kwargs: Any) -> list[str]:
        field = AutoNumberField(**{"format": FORMAT, "max_length": 30, **kwargs})
        field.set_attributes_from_name("number")
        return [f"{e.id}: {e.msg}" for e in field.check()]

    assert errors() == []
    assert errors(format="INV-{YYYY}-{00000")[0].startswith("autonumber.E001: invalid autonumber rule")
    assert errors(scope="per_week")[0].startswith("autonumber.E001")
    assert errors(numbering="sometimes")[0].startswith("autonumber.E001")
    assert errors(time_zone="Mars/Olympus")[0].startswith("autonumber.E001")
    assert errors(format="X-{YYYY}-{00000}", scope="per_day")[0].startswith("autonumber.E001")
    assert errors(max_length=8) == [
        f"autonumber.E002: format {FORMAT!r} renders 14 characters, more than max_length=8"
    ]


def test_forms_and_the_admin_show_the_number_read_only(alias: str) -> None:
    from django import forms

    class InvoiceForm(forms.ModelForm):  # type: ignore[type-arg]
        class Meta:
            model = Invoice
            fields = "__all__"

        def validate_unique(self) -> None:
            pass  # the suite's aliases are not the default database the check would ask

    invoice = Invoice.objects.using(alias).create(customer="a")
    form = InvoiceForm({"customer": "b", "number": "INV-1999-99999"}, instance=invoice)
    assert form.fields["number"].disabled and form.is_valid(), form.errors
    saved = form.save(commit=False)
    saved.save(using=alias)
    assert Invoice.objects.using(alias).get(pk=invoice.pk).number == invoice.number
    added = InvoiceForm({"customer": "c", "number": "INV-1999-99999"})
    assert added.is_valid(), added.errors
    new = added.save(commit=False)
    new.save(using=alias)
    assert invoice_counters([invoice.number, new.number]) == [1, 2]


def test_the_scopes_the_docs_list_are_exactly_those_the_check_accepts() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "integrations.md").read_text()
    listed = re.search(r"`scope` \(([^)]*)\)", text.split("## Django", 1)[1])
    assert listed is not None
    documented = re.findall(r"`(\w+)`", listed.group(1))
    candidates = {*documented, "per_year", "per_month", "per_week", "per_prefix", "per_day", "global"}

    def accepted(scope: str) -> bool:
        field = AutoNumberField(format="INV-{YYYY}-{MM}-{DD}-{00000}", scope=scope, max_length=30)
        field.set_attributes_from_name("number")
        return not field.check()

    assert sorted(documented) == sorted(s for s in candidates if accepted(s))


def test_the_checks_message_names_the_field_once() -> None:
    field = Invoice._meta.get_field("number")
    field.scope = "per_week"
    try:
        [error] = field.check()
    finally:
        field.scope = "per_prefix"
    label = f"{Invoice._meta.label}.number"
    assert label in error.msg and f"{label}.number" not in error.msg, error.msg
