"""`python -m bench` from the repository root: see bench/cli.py."""

from __future__ import annotations

from .cli import main

raise SystemExit(main())
