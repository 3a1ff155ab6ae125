"""Django adapter: `AutoNumberField(format="INV-{YYYY}-{00000}", scope="per_prefix")` on a model.

The field is filled on the first save (`pre_save`, so `bulk_create` is numbered too) and read-only
afterwards. The engine reaches the same database as the model through a Platform built from
Django's `DATABASES` entry of the connection in use. The model's table is adopted and the rule
registered by the `RegisterAutoNumber` migration operation, or on first use when no migration ran.

Numbers are reserved on the platform's own connection, committed before the row's INSERT: a
rolled-back transaction leaves a gap. On SQLite a reservation needs the write lock, so number rows
outside a transaction that has already written (autocommit saves and `bulk_create` are fine).
"""

from __future__ import annotations

import threading
from typing import Any

from django.db import connections, models, transaction
from django.db.migrations.operations.base import Operation
from sqlalchemy.engine import URL

from autonumber.errors import AutonumberError
from autonumber.rules.store import RuleSpec
from autonumber.runtime import Platform, connect

from .common import ensure_field

DRIVERS = {"sqlite": "sqlite", "mysql": "mysql+pymysql", "postgresql": "postgresql+psycopg"}
LOADED = "_autonumber_loaded"

_lock = threading.Lock()
_platforms: dict[str, Platform] = {}
_fields: dict[tuple[str, str, str], str] = {}


class ReadOnlyAutoNumber(AutonumberError):
    """An autonumber field changed on a saved instance."""

    exit_code = 2


def database_url(alias: str = "default") -> str:
    """The SQLAlchemy URL of a Django database alias (sqlite3, mysql or postgresql backend)."""
    settings = connections[alias].settings_dict
    vendor = connections[alias].vendor
    driver = DRIVERS.get(vendor)
    if driver is None:
        raise AutonumberError(
            f"database {alias!r}: Django backend {vendor!r} is not supported "
            f"(use one of {', '.join(DRIVERS)})"
        )
    if vendor == "sqlite":
        return URL.create(driver, database=str(settings["NAME"])).render_as_string()
    port = settings.get("PORT")
    url = URL.create(
        driver,
        username=settings.get("USER") or None,
        password=settings.get("PASSWORD") or None,
        host=settings.get("HOST") or "127.0.0.1",
        port=int(port) if port else None,
        database=str(settings["NAME"]),
    )
    return url.render_as_string(hide_password=False)


def platform_for(alias: str = "default") -> Platform:
    """The Platform over a Django database alias, opened once per process."""
    with _lock:
        platform = _platforms.get(alias)
        if platform is None:
            platform = _platforms[alias] = connect(database_url(alias))
        return platform


def close_platforms() -> None:
    """Close every Platform opened for Django (tests; a process keeps them for its lifetime)."""
    with _lock:
        for platform in _platforms.values():
            platform.close()
        _platforms.clear()
        _fields.clear()


def register(model: type[models.Model], field: AutoNumberField, alias: str = "default") -> str:
    """Adopt the model's table and add the field's rule (idempotent); return the field id."""
    opts = model._meta
    key = (alias, opts.db_table, field.column)
    found = _fields.get(key)
    if found is not None:
        return found
    rule = RuleSpec(opts.db_table, field.column, field.format, scope=field.scope, start=field.start)
    field_id = ensure_field(platform_for(alias), opts.db_table, opts.db_table, rule)
    with _lock:
        _fields[key] = field_id
    return field_id


class AutoNumberField(models.CharField):  # type: ignore[misc]
    """A text column numbered by the engine on first save; read-only afterwards."""

    description = "Autonumber"

    def __init__(self, *args: Any, format: str, scope: str = "global", start: int = 1, **kwargs: Any) -> None:
        self.format = format
        self.scope = scope
        self.start = start
        kwargs.setdefault("max_length", 64)
        kwargs.setdefault("unique", True)
        kwargs["null"] = True
        kwargs["blank"] = True
        kwargs["editable"] = False
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> Any:
        name, path, args, kwargs = super().deconstruct()
        for key in ("null", "blank", "editable"):
            kwargs.pop(key, None)
        kwargs.update(format=self.format, scope=self.scope, start=self.start)
        return name, path, args, kwargs

    def contribute_to_class(self, cls: type[models.Model], name: str, private_only: bool = False) -> None:
        super().contribute_to_class(cls, name, private_only)
        models.signals.post_init.connect(self._remember, sender=cls, weak=False)

    def _remember(self, sender: type[models.Model], instance: models.Model, **kwargs: Any) -> None:
        if self.attname in instance.__dict__:  # a deferred column is not checked
            instance.__dict__.setdefault(LOADED, {})[self.attname] = instance.__dict__[self.attname]

    def pre_save(self, model_instance: models.Model, add: bool) -> Any:
        value = getattr(model_instance, self.attname)
        loaded = model_instance.__dict__.get(LOADED, {}).get(self.attname, value)
        if not add:
            if value != loaded:
                raise ReadOnlyAutoNumber(
                    f"{type(model_instance).__name__}.{self.name} is an autonumber: "
                    f"assigned on the first save and read-only afterwards ({loaded!r})"
                )
            return value
        if value:
            raise ReadOnlyAutoNumber(
                f"{type(model_instance).__name__}.{self.name} is assigned on the first "
                f"save and cannot be supplied (got {value!r})"
            )
        return _Pending(self, model_instance)  # numbered in get_db_prep_save, which knows the database

    def get_db_prep_save(self, value: Any, connection: Any) -> Any:
        if isinstance(value, _Pending):
            value = value.assign(connection.alias)
        return super().get_db_prep_save(value, connection)


class _Pending:
    """The number of an instance being inserted, assigned once the insert's connection is known."""

    def __init__(self, field: AutoNumberField, instance: models.Model) -> None:
        self.field = field
        self.instance = instance

    def assign(self, alias: str) -> str:
        """Reserve and render the instance's number on the platform of `alias`; store it on the instance."""
        field, instance = self.field, self.instance
        field_id = register(type(instance), field, alias)
        record = {
            f.column: getattr(instance, f.attname) for f in instance._meta.concrete_fields if f is not field
        }
        value = platform_for(alias).engine.assign_one(field_id, record)
        setattr(instance, field.attname, value)
        instance.__dict__.setdefault(LOADED, {})[field.attname] = value
        return value


class RegisterAutoNumber(Operation):  # type: ignore[misc]
    """Migration operation: adopt the model's table and register its AutoNumberField's rule.

    Runs after the migration's transaction commits (the platform reads the table on its own
    connection); the database state is otherwise untouched, so reversing it does nothing.
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
        field = model._meta.get_field(self.name)
        if not isinstance(field, AutoNumberField):
            raise AutonumberError(f"{app_label}.{self.model_name}.{self.name} is not an AutoNumberField")
        alias = schema_editor.connection.alias
        transaction.on_commit(lambda: register(model, field, alias), using=alias)

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        pass  # numbers already issued stay issued: the rule and its counter are kept

    def describe(self) -> str:
        return f"Register autonumber field {self.model_name}.{self.name}"
