from django.db import migrations

from autonumber.integrations.django import RegisterAutoNumber


class Migration(migrations.Migration):
    dependencies = [("shop", "0001_initial")]
    operations = [RegisterAutoNumber("invoice", "number")]
