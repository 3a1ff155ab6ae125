"""Django adapter: `AutoNumberField(format="INV-{YYYY}-{00000}", scope="per_prefix")` on a model.

The field is filled on the first save (`pre_save`, so `bulk_create` is numbered too) and read-only
afterwards; in forms (the admin included) it is a disabled input showing the number. The engine
reaches the same database as the model through a Platform built from Django's `DATABASES` entry of
the connection in use. `migrate` registers the field's rule and keeps it in step with the
migrations (django_migrations.py); a model used before any migration registers it on first use.

Where the number is taken:
- `standard` numbering, outside a transaction, or inside one on MariaDB/PostgreSQL: on the
  platform's own connection, committed before the row's INSERT (a rolled-back transaction leaves
  a gap, and concurrent transactions never wait on each other);
- inside `transaction.atomic()` on SQLite: on Django's own connection, in the caller's transaction
  (SQLite has one writer: another connection would wait for the caller's lock for ever), so the
  numbers roll back with the rows;
- `gapless` numbering: always in the caller's transaction (a save outside `atomic()` is refused).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.core import checks
from django.db import connections, models

from autonumber.errors import AutonumberError, GaplessNeedsTransaction
from autonumber.format import check_format
from autonumber.rules.store import RuleSpec, check_enums

from .common import ReadOnlyAutoNumber, ensure_field
from .django_db import borrowed, close_platforms, database_settings, database_url, platform_for, registered
from .django_deploy import stored_differs, warn_once
from .django_migrations import RegisterAutoNumber, registering, rule_of, split_advice
from .keep import NumberRefused, keep, keep_numbers, keeping

__all__ = [
    "AutoNumberField",
    "NeedsAtomic",
    "NumberRefused",
    "ReadOnlyAutoNumber",
    "RegisterAutoNumber",
    "close_platforms",
    "database_settings",
    "database_url",
    "keep_numbers",
    "platform_for",
    "register",
]

LOADED = "_autonumber_loaded"
RULE_ATTRS = ("format", "scope", "start", "numbering", "time_zone")


class NeedsAtomic(GaplessNeedsTransaction):
    """A gapless field saved outside `transaction.atomic()`: its number could not roll back with the row."""

    def __init__(self, field_id: str) -> None:
        self.field_id = field_id
        AutonumberError.__init__(
            self,
            f"{field_id} is a gapless field: save it inside transaction.atomic() so its number "
            "commits or rolls back with the row (the admin and bulk_create already do)",
        )


def register(model: type[models.Model], field: AutoNumberField, alias: str = "default") -> str:
    """Adopt the model's table and add the field's rule (idempotent); return the field id."""
    rule = rule_of(model, field)
    key = (database_url(alias), rule)
    found = registered.get(key)
    if found is not None:
        return found
    wrapper = connections[alias]
    if registering(alias, model._meta.db_table) and wrapper.in_atomic_block:
        raise AutonumberError(split_advice(model._meta.label, field.name))
    platform = platform_for(alias)
    if wrapper.vendor == "sqlite" and wrapper.in_atomic_block:
        try:
            field_id = platform.catalog.current().field_id(rule.name)
        except AutonumberError:
            raise AutonumberError(
                f"{model.__name__}.{field.name}: the autonumber rule is not registered yet and SQLite "
                "cannot register it inside transaction.atomic(); run `manage.py migrate` (it registers "
                "every AutoNumberField) or save once outside a transaction; in a data migration, put "
                "RegisterAutoNumber in an earlier migration than the RunPython that saves"
            ) from None
    else:
        differs = stored_differs(platform, rule)  # a deploy under way: the database's rule wins
        if differs is not None:
            warn_once(model, field.name, alias)
        field_id = differs or ensure_field(platform, rule.object, model._meta.db_table, rule)
    registered[key] = field_id
    return field_id


class AutoNumberField(models.CharField):  # type: ignore[misc]
    """A text column numbered by the engine on first save; read-only afterwards."""

    description = "Autonumber"
    non_db_attrs = (*models.CharField.non_db_attrs, *RULE_ATTRS)
    """A rule change is no schema change: migrate hands it to the rules package instead."""

    def __init__(
        self,
        *args: Any,
        format: str,
        scope: str = "global",
        start: int = 1,
        numbering: str = "standard",
        time_zone: str = "UTC",
        **kwargs: Any,
    ) -> None:
        self.format = format
        self.scope = scope
        self.start = start
        self.numbering = numbering
        self.time_zone = time_zone
        kwargs.setdefault("max_length", 64)
        kwargs.setdefault("unique", True)
        kwargs["null"] = True
        kwargs["blank"] = True
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> Any:
        name, path, args, kwargs = super().deconstruct()
        for key in ("null", "blank", "editable"):
            kwargs.pop(key, None)
        kwargs.update(format=self.format, scope=self.scope, start=self.start)
        if self.numbering != "standard":
            kwargs["numbering"] = self.numbering
        if self.time_zone != "UTC":
            kwargs["time_zone"] = self.time_zone
        return name, path, args, kwargs

    def rule(self, object_name: str) -> RuleSpec:
        """The rule this field declares, on the object `object_name` (its table's name)."""
        return RuleSpec(
            object_name,
            self.column or self.name,
            self.format,
            scope=self.scope,
            start=self.start,
            numbering=self.numbering,
            time_zone=self.time_zone,
        )

    def formfield(self, **kwargs: Any) -> Any:
        """A disabled input: forms (the admin's included) show the number and never change it."""
        kwargs.setdefault("disabled", True)
        kwargs.setdefault("required", False)
        kwargs.setdefault("help_text", self.help_text or "Assigned on the first save.")
        return forms.CharField(max_length=self.max_length, **kwargs)

    def check(self, **kwargs: Any) -> list[checks.CheckMessage]:
        return [*super().check(**kwargs), *self._check_rule()]

    def _check_rule(self) -> list[checks.CheckMessage]:
        """autonumber.E001: the format, scope, numbering, time zone or start is invalid;
        autonumber.E002: the number can be longer than max_length."""
        model = getattr(self, "model", None)
        rule = self.rule(model._meta.label if model is not None else "model")  # names `label.field` once
        try:
            check_enums(rule)
            report = check_format(self.format, scope=self.scope)
        except AutonumberError as exc:
            return [checks.Error(f"invalid autonumber rule: {exc}", obj=self, id="autonumber.E001")]
        if (
            report.max_length is not None
            and self.max_length is not None
            and report.max_length > self.max_length
        ):
            return [
                checks.Error(
                    f"format {self.format!r} renders {report.max_length} characters, "
                    f"more than max_length={self.max_length}",
                    hint="raise max_length or shorten the format",
                    obj=self,
                    id="autonumber.E002",
                )
            ]
        return []

    def contribute_to_class(self, cls: type[models.Model], name: str, private_only: bool = False) -> None:
        super().contribute_to_class(cls, name, private_only)
        models.signals.post_init.connect(self._remember, sender=cls, weak=False)
        models.signals.pre_save.connect(self._before_load, sender=cls, weak=False)
        models.signals.post_save.connect(self._loaded, sender=cls, weak=False)

    def _before_load(
        self, sender: type[models.Model], instance: models.Model, raw: bool, using: str, **kw: Any
    ) -> None:
        """Before `loaddata`'s first row is written: open the platform and find the rule, which on
        SQLite cannot be done once the fixture's transaction holds the write lock."""
        if raw:
            register(type(instance), self, using)

    def _loaded(
        self, sender: type[models.Model], instance: models.Model, raw: bool, using: str, **kw: Any
    ) -> None:
        """A row `loaddata` wrote (a raw save: the number as dumped): move the counter past it, so
        the next `create()` does not hand the same number out. Only moved, never burnt: a counter
        already past the value stays where it is."""
        value = getattr(instance, self.attname, None) if raw else None
        if value:
            _Kept(self, instance, str(value), check=False).assign(using)

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
        if value and keeping():
            return _Kept(self, model_instance, str(value))
        if value:
            raise ReadOnlyAutoNumber(
                f"{type(model_instance).__name__}.{self.name} is assigned on the first "
                f"save and cannot be supplied (got {value!r}); to keep an existing number, save "
                "inside `with autonumber.integrations.django.keep_numbers():`"
            )
        return _Pending(self, model_instance)  # numbered in get_db_prep_save, which knows the database

    def get_db_prep_save(self, value: Any, connection: Any) -> Any:
        if isinstance(value, _Pending | _Kept):
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
        platform = platform_for(alias)
        wrapper = connections[alias]
        gapless = platform.engine.rule(field_id).gapless
        if gapless and not wrapper.in_atomic_block:
            raise NeedsAtomic(field_id)
        if gapless or (wrapper.vendor == "sqlite" and wrapper.in_atomic_block):
            with borrowed(alias) as conn:
                value = platform.engine.assign_one(field_id, record, conn)
        else:
            value = platform.engine.assign_one(field_id, record)
        setattr(instance, field.attname, value)
        instance.__dict__.setdefault(LOADED, {})[field.attname] = value
        return value


class _Kept(_Pending):
    """A number supplied inside `keep_numbers()`: checked and its counter moved, on the insert's database."""

    def __init__(
        self, field: AutoNumberField, instance: models.Model, value: str, check: bool = True
    ) -> None:
        super().__init__(field, instance)
        self.value = value
        self.check = check

    def assign(self, alias: str) -> str:
        field, instance = self.field, self.instance
        field_id = register(type(instance), field, alias)
        platform = platform_for(alias)
        wrapper = connections[alias]
        on_caller = platform.engine.rule(field_id).gapless or (
            wrapper.vendor == "sqlite" and wrapper.in_atomic_block
        )
        with borrowed(alias) as conn:
            keep(platform, field_id, [self.value], conn if self.check else None, conn if on_caller else None)
        instance.__dict__.setdefault(LOADED, {})[field.attname] = self.value
        return self.value
