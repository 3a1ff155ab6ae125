"""Bulk import: a JSON Lines stream into one object, all or nothing or batch by batch with resume."""
