from django.db import models

from autonumber.integrations.django import AutoNumberField


class Invoice(models.Model):
    customer = models.CharField(max_length=40)
    number = AutoNumberField(format="INV-{YYYY}-{00000}", scope="per_prefix", max_length=30)

    def __str__(self) -> str:
        return f"{self.number} {self.customer}"
