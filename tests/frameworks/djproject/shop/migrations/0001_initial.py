from django.db import migrations, models

import autonumber.integrations.django


class Migration(migrations.Migration):
    initial = True
    dependencies: list[tuple[str, str]] = []
    operations = [
        migrations.CreateModel(
            name="Invoice",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("customer", models.CharField(max_length=40)),
                (
                    "number",
                    autonumber.integrations.django.AutoNumberField(
                        format="INV-{YYYY}-{00000}", max_length=30, scope="per_prefix", start=1, unique=True
                    ),
                ),
            ],
        ),
    ]
