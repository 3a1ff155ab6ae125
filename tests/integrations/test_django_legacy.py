"""The real Django project (tests/integrations/djproject) with data that existed before it: objects
saved with their legacy numbers inside `keep_numbers()` (checked, refused when taken, the counter
moved past them), and `dumpdata` → `loaddata` into a fresh database followed by `create()`."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa
from test_django_project import Project, project

from autonumber.db import create_engine
from autonumber.db.tables import counter_table

__all__ = ["project"]
pytestmark = pytest.mark.slow

YEAR = datetime.now(UTC).year

KEEP = f"""
from django.db import transaction
from autonumber.integrations.django import NumberRefused, ReadOnlyAutoNumber, keep_numbers
from shop.models import Invoice
with keep_numbers():
    Invoice.objects.create(customer="old1", number="INV-{YEAR}-00040")
    Invoice.objects.bulk_create([Invoice(customer="old2", number="INV-{YEAR}-00042")])
    with transaction.atomic():
        Invoice.objects.create(customer="old3", number="INV-2019-00007")
    for bad in ("INV-{YEAR}-00040", "X-1", "INV-{YEAR}-0001"):
        try:
            Invoice.objects.create(customer="bad", number=bad)
        except NumberRefused as exc:
            print("refused", exc)
try:
    Invoice.objects.create(customer="bad", number="INV-{YEAR}-00050")
except ReadOnlyAutoNumber as exc:
    print("outside", exc)
print("next", Invoice.objects.create(customer="new").number)
print("count", Invoice.objects.count())
"""


def test_keep_numbers_saves_legacy_numbers_and_moves_the_counter_past_them(project: Project) -> None:
    project.manage("migrate", "--noinput")
    project.shell("from shop.models import Invoice; Invoice.objects.create(customer='first')")
    out = project.shell(KEEP).splitlines()
    refused = [line for line in out if line.startswith("refused")]
    assert len(refused) == 3, out
    assert "already taken" in refused[0] and "does not match the format" in refused[1], out
    assert "does not match the format" in refused[2], out
    assert any(line.startswith("outside") and "keep_numbers()" in line for line in out), out
    assert f"next INV-{YEAR}-00043" in out, out
    assert "count 5" in out, out


DUMP_CREATE = """
from shop.models import Invoice
print(Invoice.objects.create(customer="after").number)
"""


def test_loaddata_into_a_fresh_database_then_create_does_not_collide(project: Project) -> None:
    project.manage("migrate", "--noinput")
    project.shell("from shop.models import Invoice\nfor c in 'abc': Invoice.objects.create(customer=c)")
    dumped = project.manage("dumpdata", "shop.invoice").stdout
    assert len(json.loads(dumped)) == 3
    (project.root / "invoices.json").write_text(dumped)
    project.manage("flush", "--noinput")  # a fresh database: no rows, and counters start again
    engine = create_engine(project.url)
    with engine.begin() as conn:
        conn.execute(sa.update(counter_table).values(next_value=1))
    engine.dispose()
    project.manage("loaddata", "invoices.json")
    [number] = project.shell(DUMP_CREATE).split()
    assert number == f"INV-{YEAR}-00004"
