"""A real Django project (tests/frameworks/djproject: settings, an app with migrations, the
admin, its own tests) driven through `manage.py` in subprocesses on each backend: migrate on a
database where `autonumber db init` never ran, numbers through the ORM (two saves in one atomic
block) and the admin, a format changed by a migration, a refused registration that leaves the
migration unapplied, and the project's own `manage.py test`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from autonumber.db import create_engine
from autonumber.rules.fields import stored_rule

pytestmark = pytest.mark.slow
"""A real Django project (migrate, ORM, admin, its own `manage.py test`) in subprocesses: out of
`make check`, started first by `make test`."""

PROJECT = Path(__file__).resolve().parent / "djproject"


class Project:
    """A copy of the example project on one database."""

    def __init__(self, root: Path, url: str) -> None:
        self.root = root
        self.url = url
        self.env = {
            **os.environ,
            "AUTONUMBER_DATABASE_URL": url,
            "DJANGO_SETTINGS_MODULE": "site_config.settings",
        }
        name = make_url(url).database or ""
        if not url.startswith("sqlite"):
            self.env["EXAMPLE_TEST_DATABASE"] = f"{name}_djtest"  # beside the suite's own database

    def manage(self, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=240,
        )
        if ok:
            assert done.returncode == 0, f"manage.py {' '.join(args)}\n{done.stdout}{done.stderr}"
        return done

    def shell(self, code: str) -> str:
        return self.manage("shell", "--no-imports", "-c", code).stdout.strip()

    def rule(self) -> tuple[str | None, str] | None:
        engine = create_engine(self.url)
        try:
            with engine.connect() as conn:
                if not sa.inspect(conn).has_table("_System_Field"):
                    return None  # not even the system tables: `autonumber db init` never ran
                stored = stored_rule(conn, "shop_invoice", "number")
        finally:
            engine.dispose()
        return None if stored is None else (stored.format, stored.scope)


@pytest.fixture
def project(db_url: str, tmp_path: Path) -> Project:
    root = tmp_path / "project"
    shutil.copytree(PROJECT, root, ignore=shutil.ignore_patterns("__pycache__", "*.sqlite3"))
    return Project(root, db_url)


CREATE = """
from django.db import transaction
from shop.models import Invoice
with transaction.atomic():
    a = Invoice.objects.create(customer="a")
    b = Invoice.objects.create(customer="b")
c = Invoice.objects.create(customer="c")
print(a.number, b.number, c.number)
"""

ADMIN = """
from django.contrib.auth.models import User
from django.test import Client
from shop.models import Invoice
User.objects.create_superuser("admin", "a@example.com", "pw")
client = Client()
client.login(username="admin", password="pw")
assert client.post("/admin/shop/invoice/add/", {"customer": "viaadmin"}).status_code == 302
invoice = Invoice.objects.get(customer="viaadmin")
page = client.get(f"/admin/shop/invoice/{invoice.pk}/change/").content.decode()
assert invoice.number in page and "disabled" in page, page
print(invoice.number)
"""


def test_migrate_without_db_init_numbers_orm_and_admin_saves(project: Project) -> None:
    project.manage("migrate", "--noinput")
    assert project.rule() == ("INV-{YYYY}-{00000}", "per_prefix")
    numbers = project.shell(CREATE).split()
    assert [n[:4] for n in numbers] == ["INV-"] * 3
    assert [int(n[-5:]) for n in numbers] == [1, 2, 3]
    assert int(project.shell(ADMIN)[-5:]) == 4


def test_format_changed_by_a_migration_goes_through_the_rules_package(project: Project) -> None:
    project.manage("migrate", "--noinput")
    project.shell(CREATE)
    models = project.root / "shop" / "models.py"
    models.write_text(models.read_text().replace('"INV-{YYYY}-{00000}"', '"BILL-{YYYY}-{000000}"'))
    made = project.manage("makemigrations", "shop")
    assert "Alter field number on invoice" in made.stdout, made.stdout
    project.manage("migrate", "--noinput")
    assert project.rule() == ("BILL-{YYYY}-{000000}", "per_prefix")
    [number] = project.shell(
        "from shop.models import Invoice; print(Invoice.objects.create(customer='d').number)"
    ).split()
    assert number.startswith("BILL-") and len(number) == len("BILL-2026-000001")
    old = project.shell("from shop.models import Invoice; print(Invoice.objects.get(customer='a').number)")
    assert old.startswith("INV-")  # numbers already issued are kept


BAD_ROW = """from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("shop", "0001_initial")]
    operations = [
        migrations.RunSQL("INSERT INTO shop_invoice (customer, number) VALUES ('x', 'INV-2026-0000X')")
    ]
"""


def test_refused_registration_leaves_the_migration_unapplied(project: Project) -> None:
    migrations = project.root / "shop" / "migrations"
    (migrations / "0001_bad_row.py").write_text(BAD_ROW)
    register = migrations / "0002_register_number.py"
    register.write_text(register.read_text().replace('"0001_initial"', '"0001_bad_row"'))
    done = project.manage("migrate", "--noinput", ok=False)
    assert done.returncode != 0
    assert "CommandError: autonumber field shop.Invoice.number" in done.stderr, done.stderr
    assert "INV-2026-0000X" in done.stderr and "Traceback" not in done.stderr, done.stderr
    shown = project.manage("showmigrations", "shop").stdout
    assert "[X] 0001_bad_row" in shown and "[ ] 0002_register_number" in shown, shown
    rule = project.rule()  # MariaDB commits DDL as it goes: the table may be adopted, with no rule
    assert rule is None or rule[0] is None, rule


def test_the_projects_own_manage_py_test_passes(project: Project) -> None:
    done = project.manage("test", "--noinput")
    assert "Ran 5 tests" in done.stderr and "OK" in done.stderr, done.stderr
