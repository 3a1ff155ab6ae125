"""A fast path for `autonumber format check FORMAT [--scope SCOPE]`, the command scripts call most.

Typer builds a pydantic adapter for every parameter it parses, which costs more than the check
itself; this plain form needs none of Typer's features, so it is answered here without loading
Typer. Anything else (other options, --help, a value Typer would print differently) returns None and
goes through the Typer application, which stays the one definition of the command.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence


def plain_format_check(args: Sequence[str]) -> tuple[str, str] | None:
    """(FORMAT, SCOPE) when `args` is exactly `format check FORMAT` with at most `--scope S`."""
    if len(args) < 3 or args[0] != "format" or args[1] != "check":
        return None
    rest = list(args[2:])
    scope = "global"
    if len(rest) == 3 and rest[1] == "--scope":
        scope = rest.pop(2)
        rest.pop(1)
    elif len(rest) == 3 and rest[0] == "--scope":
        scope = rest[1]
        rest = rest[2:]
    elif len(rest) == 2 and rest[1].startswith("--scope="):
        scope = rest.pop(1).removeprefix("--scope=")
    if len(rest) != 1:
        return None
    fmt = rest[0]
    if fmt.startswith("-") or not _plain(fmt) or not _plain(scope) or scope.startswith("-"):
        return None
    return fmt, scope


def _plain(text: str) -> bool:
    """Printable ASCII: echoed byte for byte by click too (no escape sequences to strip)."""
    return text.isascii() and text.isprintable()


def run(args: Sequence[str]) -> bool:
    """Answer a plain `format check`; False when `args` is not one (the Typer app takes it)."""
    plain = plain_format_check(args)
    if plain is None:
        return False
    from autonumber.format.report import check_format

    fmt, scope = plain
    try:
        sys.stdout.write("".join(f"{line}\n" for line in check_format(fmt, scope=scope).lines()))
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away (`| head`): exit 1 without a word, as click does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    return True
