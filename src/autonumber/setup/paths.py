"""Where the canonical data-spec and its generated seed module live in the repository.

Kept apart from the parsers so the CLI can name them in its help without loading them.
"""

from __future__ import annotations

SPEC_PATH = "data-specs/2026-04-18-autonumber-v2-seed.md"
MODULE_PATH = "src/autonumber/seeds/autonumber_formats.py"
