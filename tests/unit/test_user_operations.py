"""The CLI and the web layer share one layer of user operations (autonumber.commands).

They neither build engines themselves nor load what a command does not need at start-up, and
`autonumber.connect()` takes the same typed keyword options as `Settings`.
"""

from __future__ import annotations

import dataclasses
import inspect
import subprocess
import sys
from pathlib import Path

import autonumber
from autonumber.runtime import Settings

PACKAGE = Path(autonumber.__file__).resolve().parent


def test_cli_and_web_build_no_engine_themselves() -> None:
    found = [
        f"{path.relative_to(PACKAGE)}:{n}"
        for layer in ("cli", "web")
        for path in sorted((PACKAGE / layer).rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "create_engine(" in line or "check_reachable(" in line
    ]
    assert not found, f"open databases through autonumber.commands.session: {found}"


def test_the_default_url_is_written_once() -> None:
    written = [
        str(path.relative_to(PACKAGE))
        for path in sorted(PACKAGE.rglob("*.py"))
        if '= "sqlite:///autonumber.db"' in path.read_text(encoding="utf-8")
        or '"sqlite:///autonumber.db")' in path.read_text(encoding="utf-8")
    ]
    assert written == ["defaults.py"]


def test_connect_takes_every_setting_by_keyword() -> None:
    options = dict(inspect.signature(autonumber.connect).parameters)
    url = options.pop("url")
    assert url.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    settings = {f.name: f for f in dataclasses.fields(Settings)}
    assert url.default == settings.pop("url").default
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in options.values())
    assert {n: (p.annotation, p.default) for n, p in options.items()} == {
        n: (f.type, f.default) for n, f in settings.items()
    }


def test_the_cli_loads_no_database_or_web_stack_at_start_up() -> None:
    code = (
        "import sys, autonumber.cli\n"
        "heavy = ('sqlalchemy', 'fastapi', 'uvicorn', 'rich', 'autonumber.engine', 'autonumber.web')\n"
        "heavy = [m for m in heavy if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
