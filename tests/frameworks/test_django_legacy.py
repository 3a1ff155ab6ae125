"""The real Django project (tests/frameworks/djproject) with data that existed before it: objects
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


DATA_MIGRATION = """from django.db import migrations

from autonumber.integrations.django import RegisterAutoNumber


def fill(apps, schema_editor):
    Invoice = apps.get_model("shop", "Invoice")
    Invoice.objects.create(customer="seeded")


class Migration(migrations.Migration):
    dependencies = [("shop", "0001_initial")]
    operations = [RegisterAutoNumber("invoice", "number"), migrations.RunPython(fill)]
"""

FILL = """from django.db import migrations


def fill(apps, schema_editor):
    Invoice = apps.get_model("shop", "Invoice")
    Invoice.objects.create(customer="seeded")


class Migration(migrations.Migration):
    dependencies = [("shop", "0002_register_number")]
    operations = [migrations.RunPython(fill)]
"""


def test_register_and_runpython_in_one_migration_says_how_to_split_and_the_split_works(
    project: Project,
) -> None:
    migrations = project.root / "shop" / "migrations"
    register = migrations / "0002_register_number.py"
    register.write_text(DATA_MIGRATION)
    seeded = "from shop.models import Invoice; print(Invoice.objects.get().number)"
    if project.url.startswith("mysql"):  # no transactional DDL: each step commits, so one migration works
        project.manage("migrate", "--noinput")
        assert project.shell(seeded) == f"INV-{YEAR}-00001"
        return
    done = project.manage("migrate", "--noinput", ok=False)
    assert done.returncode != 0
    [advice] = [line for line in done.stderr.splitlines() if "cannot share one migration" in line]
    assert "makemigrations shop --empty" in advice and "move the RunPython" in advice, advice
    assert "database is locked" not in done.stderr and "SchemaMissing" not in done.stderr, done.stderr
    assert "[ ] 0002_register_number" in project.manage("showmigrations", "shop").stdout
    # split exactly as advised: the registration alone, the RunPython in the migration after it
    register.write_text(DATA_MIGRATION.replace(", migrations.RunPython(fill)", ""))
    (migrations / "0003_fill.py").write_text(FILL)
    project.manage("migrate", "--noinput")
    assert project.shell(seeded) == f"INV-{YEAR}-00001"


SAVE = "from shop.models import Invoice; print(Invoice.objects.create(customer='d').number)"


def test_deploy_order_saves_with_the_databases_rule_and_names_the_command(project: Project) -> None:
    project.manage("migrate", "--noinput")
    models = project.root / "shop" / "models.py"
    old_models = models.read_text()
    models.write_text(old_models.replace('"INV-{YYYY}-{00000}"', '"BILL-{YYYY}-{000000}"'))
    # (b) model edited, no makemigrations: saved with the database's rule, one line naming the commands
    done = project.manage("shell", "--no-imports", "-c", SAVE)
    assert done.stdout.strip() == f"INV-{YEAR}-00001", done.stdout + done.stderr
    assert "`python manage.py makemigrations shop && python manage.py migrate`" in done.stderr, done.stderr
    assert "RuleChangeRefused" not in done.stderr
    # (a) makemigrations run, migrate not yet
    project.manage("makemigrations", "shop")
    done = project.manage("shell", "--no-imports", "-c", SAVE)
    assert done.stdout.strip() == f"INV-{YEAR}-00002", done.stdout + done.stderr
    assert "numbering with the database's rule until you run `python manage.py migrate`" in done.stderr
    # (c) migrate run by the deploy while the old code (old model, no new migration) still serves
    project.manage("migrate", "--noinput")
    new_migration = next((project.root / "shop" / "migrations").glob("0003_*.py"))
    new_migration.unlink()
    models.write_text(old_models)
    done = project.manage("shell", "--no-imports", "-c", SAVE)
    assert done.stdout.strip() == f"BILL-{YEAR}-000001", done.stdout + done.stderr
    assert done.stderr.strip() == "", done.stderr


def test_reset_counters_refuses_a_database_the_test_runner_did_not_create(project: Project) -> None:
    project.manage("migrate", "--noinput")
    project.shell("from shop.models import Invoice; Invoice.objects.create(customer='kept')")
    done = project.manage(
        "shell",
        "--no-imports",
        "-c",
        "from autonumber.integrations.django_testing import reset_counters; reset_counters()",
        ok=False,
    )
    assert done.returncode != 0 and "was not created by the test runner" in done.stderr, done.stderr
    assert project.shell(SAVE) == f"INV-{YEAR}-00002"  # nothing was reset
