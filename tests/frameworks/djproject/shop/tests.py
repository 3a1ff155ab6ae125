"""The project's own tests, run by `manage.py test` on a test database the runner creates."""

import json
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import ClassVar

from django.contrib.auth.models import User
from django.db import transaction
from django.test import TestCase

from autonumber.integrations.django_testing import ResetAutoNumbers

from .models import Invoice


class InvoiceNumbers(TestCase):
    def test_two_saves_in_one_transaction_are_numbered_in_order(self) -> None:
        with transaction.atomic():
            first = Invoice.objects.create(customer="Acme")
            second = Invoice.objects.create(customer="Globex")
        self.assertTrue(first.number.startswith("INV-"))
        self.assertEqual(int(second.number[-5:]), int(first.number[-5:]) + 1)

    def test_admin_add_form_numbers_and_change_form_shows_it(self) -> None:
        User.objects.create_superuser("admin", "admin@example.com", "pw")
        self.client.login(username="admin", password="pw")
        response = self.client.post("/admin/shop/invoice/add/", {"customer": "Initech"})
        self.assertEqual(response.status_code, 302)
        invoice = Invoice.objects.get(customer="Initech")
        self.assertTrue(invoice.number.startswith("INV-"))
        page = self.client.get(f"/admin/shop/invoice/{invoice.pk}/change/").content.decode()
        self.assertIn(invoice.number, page)
        self.client.post(f"/admin/shop/invoice/{invoice.pk}/change/", {"customer": "I2", "number": "X-1"})
        invoice.refresh_from_db()
        self.assertEqual((invoice.customer, invoice.number[:4]), ("I2", "INV-"))


def _legacy_fixture() -> str:
    """Two rows as `dumpdata` writes them, numbered in this year's scope (TestCase.fixtures)."""
    year = datetime.now(UTC).year
    rows = [
        {
            "model": "shop.invoice",
            "pk": 900 + n,
            "fields": {"customer": "old", "number": f"INV-{year}-{n:05d}"},
        }
        for n in (1, 2)
    ]
    path = Path(tempfile.mkdtemp()) / "legacy_invoices.json"
    path.write_text(json.dumps(rows))
    return str(path)


class LoadedFixtures(ResetAutoNumbers, TestCase):
    fixtures: ClassVar[list[str]] = [_legacy_fixture()]

    def test_create_after_fixture_rows_does_not_reuse_their_numbers(self) -> None:
        invoice = Invoice.objects.create(customer="new")
        self.assertEqual(int(invoice.number[-5:]), 3)  # counters reset, then past the fixture's rows


class ResetBetweenTests(ResetAutoNumbers, TestCase):
    """Each test starts from number 1 on every backend (on SQLite rollback alone would do it)."""

    def test_first(self) -> None:
        self.assertEqual(Invoice.objects.create(customer="a").number[-5:], "00001")

    def test_second(self) -> None:
        self.assertEqual(Invoice.objects.create(customer="b").number[-5:], "00001")
