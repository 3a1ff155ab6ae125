"""How `manage.py migrate` keeps the product in step with the models' AutoNumberFields.

- `RegisterAutoNumber("invoice", "number")`, a migration operation, registers the field inside the
  migration's own transaction: it creates the platform's system tables when `autonumber db init`
  never ran, adopts the table and adds the rule. A refusal rolls the migration back (SQLite and
  PostgreSQL: it is not recorded as applied).
- After every `migrate` (`post_migrate`), each AutoNumberField of the migrated state is compared
  with its stored rule and brought in step through the rules package: a field not registered yet
  is added, and a changed format, scope, start, numbering or time zone (an AlterField) goes
  through `set_rule`, exactly what `autonumber field set` does. A refused change stops `migrate`
  with the reason; the next `migrate` tries again. The test runner's `migrate` of the test
  database does the same, so a project's `manage.py test` needs no extra step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from django.core.management.base import CommandError
from django.db import DEFAULT_DB_ALIAS, models, router, transaction
from django.db.migrations.operations.base import Operation
from django.db.models.signals import post_migrate
from sqlalchemy.engine import Engine

from autonumber.db.schema import reconcile_system_tables
from autonumber.db.tables import system_object
from autonumber.errors import AutonumberError
from autonumber.objects.adopt import adopt_table
from autonumber.rules import RuleSpec, add_field, set_rule, stored_rule

from .django_db import borrowed_engine, platform_for

if TYPE_CHECKING:
    from .django import AutoNumberField


_registering: set[tuple[str, str]] = set()
"""(alias, table) of the fields RegisterAutoNumber registered in a migration not yet committed."""


def registering(alias: str, table: str) -> bool:
    """Whether the field of `table` was registered by a migration still running on `alias`."""
    return (alias, table) in _registering


def _mark_registering(alias: str, table: str) -> None:
    """Remember the uncommitted registration until the migration commits (a rolled-back one fails
    `migrate`; the mark is dropped by the next save outside a transaction)."""
    key = (alias, table)
    _registering.add(key)
    transaction.on_commit(lambda: _registering.discard(key), using=alias)


def split_advice(label: str, field: str) -> str:
    """What to do when a migration registers a field and saves numbered rows in its own transaction."""
    app = label.split(".", 1)[0]
    return (
        f"{label}.{field}: RegisterAutoNumber and a RunPython that saves {label} rows cannot share "
        f"one migration (the number is taken once the registration is committed); split it: "
        f"`python manage.py makemigrations {app} --empty --name <name>`, move the RunPython into "
        "that new migration, then run `python manage.py migrate` again"
    )


def rule_of(model: type[models.Model], field: AutoNumberField) -> RuleSpec:
    """The rule a model's field declares, on the object named after its table."""
    return field.rule(model._meta.db_table)


def sync_field(
    engine: Engine, table: str, rule: RuleSpec, editor: Callable[[], Engine] | None = None
) -> list[str]:
    """Bring the stored rule of `rule.object.rule.field` in step with `rule`; return the changes.

    Missing system tables are created at this release's schema version (as `db init` does), a
    field not yet registered is adopted and added, a differing rule is changed with `set_rule` on
    `editor()` (default `engine`): an edit takes the edit lock on connections of its own, as
    `autonumber field set` does, never inside the migration's transaction.
    """
    with engine.connect() as conn, conn.begin():
        changes: list[str] = []
        if not sa.inspect(conn).has_table(system_object.name):
            changes += reconcile_system_tables(conn)
        stored = stored_rule(conn, rule.object, rule.field)
        if stored is None or stored.format is None:
            changes += adopt_table(conn, rule.object, table)
            return changes + add_field(conn, rule)[1]
    if stored.policy == rule.policy:
        return changes
    done = set_rule(editor() if editor else engine, rule.edit())
    return changes + list(done.changes)


def _refresh_after_commit(alias: str) -> None:
    """Once the migration has committed, the process's platform reads the new catalog (opened now
    if need be: the test runner's migrate runs before any test holds SQLite's write lock)."""

    def refresh() -> None:
        platform_for(alias).catalog.refresh()

    transaction.on_commit(refresh, using=alias)


def _autonumber_fields(model: type[models.Model]) -> list[AutoNumberField]:
    from .django import AutoNumberField

    return [f for f in model._meta.local_concrete_fields if isinstance(f, AutoNumberField)]


def _sync(alias: str, model: type[models.Model], field: AutoNumberField) -> None:
    """sync_field inside the current migration's transaction; a refusal is one CommandError line."""
    try:
        sync_field(
            borrowed_engine(alias),
            model._meta.db_table,
            rule_of(model, field),
            lambda: platform_for(alias).db,
        )
    except (AutonumberError, sa.exc.SQLAlchemyError) as exc:
        reason = str(getattr(exc, "orig", None) or exc).splitlines()[0]
        raise CommandError(f"autonumber field {model._meta.label}.{field.name}: {reason}") from exc
    _refresh_after_commit(alias)


class RegisterAutoNumber(Operation):  # type: ignore[misc]
    """Migration operation: register a model's AutoNumberField inside the migration's transaction.

    Put it in a migration after the one that creates the table. Reversing it does nothing: numbers
    already issued stay issued, the rule and its counter are kept.
    """

    reversible = True

    def __init__(self, model_name: str, name: str) -> None:
        self.model_name = model_name
        self.name = name

    def deconstruct(self) -> tuple[str, list[str], dict[str, Any]]:
        return self.__class__.__name__, [self.model_name, self.name], {}

    def state_forwards(self, app_label: str, state: Any) -> None:
        pass

    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        model = to_state.apps.get_model(app_label, self.model_name)
        alias = schema_editor.connection.alias
        if not router.allow_migrate_model(alias, model):
            return
        field = model._meta.get_field(self.name)
        if field not in _autonumber_fields(model):
            raise AutonumberError(f"{app_label}.{self.model_name}.{self.name} is not an AutoNumberField")
        _sync(alias, model, field)
        _mark_registering(alias, model._meta.db_table)

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        pass

    def describe(self) -> str:
        return f"Register autonumber field {self.model_name}.{self.name}"


def sync_after_migrate(sender: Any, using: str = DEFAULT_DB_ALIAS, apps: Any = None, **kwargs: Any) -> None:
    """post_migrate: every AutoNumberField of the app `sender`, as the migrations left it, in step
    with its stored rule (tables the migrations have not created yet are left alone)."""
    if apps is None:
        return
    try:
        config = apps.get_app_config(sender.label)
    except LookupError:
        return
    engine = borrowed_engine(using)
    for model in config.get_models():
        fields = _autonumber_fields(model)
        if not fields or not router.allow_migrate_model(using, model):
            continue
        with engine.connect() as conn:
            exists = sa.inspect(conn).has_table(model._meta.db_table)
        if not exists:
            continue
        with transaction.atomic(using=using):
            for field in fields:
                _sync(using, model, field)


post_migrate.connect(sync_after_migrate, dispatch_uid="autonumber.sync_after_migrate")
