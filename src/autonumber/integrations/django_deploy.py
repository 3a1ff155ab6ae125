"""A model whose AutoNumberField declares another rule than the database holds, as happens in the
middle of a deploy: the model edited but `migrate` not run yet (with or without `makemigrations`),
or `migrate` already run by the deploy while processes with the old code still serve.

The database's rule wins: `migrate` is what changes a rule (through the rules package), so a save
numbers with the rule stored in the database and never fails for the difference. When the code is
ahead of the database, a warning names the one command that brings the database in step, once
per process and field.
"""

from __future__ import annotations

import logging

from django.db import connections, models

from autonumber.errors import UnknownField
from autonumber.rules.store import RuleSpec
from autonumber.runtime import Platform

log = logging.getLogger("autonumber.django")
_warned: set[tuple[str, str]] = set()


def stored_differs(platform: Platform, rule: RuleSpec) -> str | None:
    """The field id of the usable stored rule when it differs from `rule`; None otherwise."""
    snapshot = platform.catalog.current()
    try:
        current = snapshot.stored(rule.name)
    except UnknownField:
        return None
    if current.field_id in snapshot.quarantined or current.policy == rule.policy:
        return None
    return current.field_id


def advice(model: type[models.Model], field_name: str, alias: str) -> str | None:
    """The command that brings the database in step with the model, or None when the model is the
    older side (the migrations already applied are ahead of this code: a deploy under way)."""
    from django.db.migrations.executor import MigrationExecutor

    app = model._meta.app_label
    executor = MigrationExecutor(connections[alias])
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if any(migration.app_label == app for migration, backwards in plan if not backwards):
        return "python manage.py migrate"
    state = executor.loader.project_state()
    try:
        migrated = state.apps.get_model(app, model._meta.model_name)._meta.get_field(field_name)
    except LookupError:
        return f"python manage.py makemigrations {app} && python manage.py migrate"
    ours = model._meta.get_field(field_name)
    if any(getattr(migrated, a, None) != getattr(ours, a, None) for a in ("format", "scope", "start")):
        return f"python manage.py makemigrations {app} && python manage.py migrate"
    return None


def warn_once(model: type[models.Model], field_name: str, alias: str) -> None:
    """Log, once per process and field, the command that brings the database in step."""
    key = (alias, f"{model._meta.label}.{field_name}")
    if key in _warned:
        return
    _warned.add(key)
    command = advice(model, field_name, alias)
    if command is not None:
        log.warning(
            "%s: the model declares another autonumber rule than the database holds; numbering with "
            "the database's rule until you run `%s`",
            key[1],
            command,
        )
