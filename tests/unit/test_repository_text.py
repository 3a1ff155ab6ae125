"""No tracked text file names a numbered work session, turn or issue: docs and comments say what
is true now, and the history of how it got there stays in git log."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEXT_SUFFIXES = {
    ".py", ".md", ".toml", ".cfg", ".ini", ".yml", ".yaml", ".txt", ".sh", ".rst", ".json", ".html",
    ".js", ".css", ".sql", ".j2",
}  # fmt: skip
TEXT_NAMES = {"Makefile", "Dockerfile", "run"}
# A word (session, turn, issue; singular or plural) followed by a number, "#" allowed before it.
PATTERN = re.compile(r"\b(?:sessions?|turns?|issues?)\s+#?\d+|\bissue\s*#\d+", re.IGNORECASE)


def _tracked_text_files() -> list[Path]:
    """Every file git tracks whose name says it is text."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, text=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    paths = [ROOT / name for name in listed.split("\0") if name]
    return [p for p in paths if p.is_file() and (p.suffix in TEXT_SUFFIXES or p.name in TEXT_NAMES)]


def offending_lines(text: str) -> list[str]:
    """The lines of ``text`` that name a numbered session, turn or issue."""
    return [line.strip() for line in text.splitlines() if PATTERN.search(line)]


def _named(word: str, number: str) -> str:
    """An example built at run time, so this file's own text names nothing."""
    return f"{word} {number}"


def test_the_pattern_catches_what_it_must_and_spares_the_products_words() -> None:
    assert offending_lines(f"measured in {_named('session', '23')}, see {_named('issue', '#13')}")
    assert offending_lines(f"Targets ({_named('issues', '17')} and 27)")
    assert offending_lines(f"{_named('Turn', '4')} of the work")
    assert not offending_lines("a web session expires; each database session holds one connection")
    assert not offending_lines("sessions are closed after 30 minutes of idle time")


def test_no_tracked_text_names_a_numbered_session_turn_or_issue() -> None:
    found = []
    for path in _tracked_text_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        found += [f"{path.relative_to(ROOT)}: {line[:120]}" for line in offending_lines(text)]
    assert not found, "numbered sessions, turns or issues named:\n" + "\n".join(found)
