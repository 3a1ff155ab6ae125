"""Adapters that number ORM models with the engine: `sqlalchemy` (a flush hook) and `django` (a field)."""
