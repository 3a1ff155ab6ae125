"""The `autonumber` command line: thin Typer shells over the library, errors turned into one line."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import NoReturn

from autonumber.errors import AutonumberError, CommitOutcomeUnknown

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> None:
    """Run the CLI; an `AutonumberError` prints one line on stderr and exits with its code.

    Click's standalone mode handles usage errors (exit 2) and ^C itself; our own errors pass
    through it and are turned into one line here, never a traceback.
    """
    args = list(argv) if argv is not None else sys.argv[1:]
    try:
        import typer

        from .app import app

        typer.main.get_command(app).main(args=args, prog_name="autonumber", standalone_mode=True)
    except Exception as exc:  # ours, or a bug: still one line and a non-zero exit, never a traceback
        # ^C also when the cut-off driver call was reported as ours (DatabaseUnavailable); an unknown
        # COMMIT outcome is said as such, ^C or not
        if _interrupted(exc) and not isinstance(exc, CommitOutcomeUnknown):
            _fail("interrupted (^C); a batch that was not reported as stored was rolled back", INTERRUPTED)
        if isinstance(exc, AutonumberError):
            _fail(str(exc), exc.exit_code)
        if _is_database_error(exc):
            _fail(f"database error: {getattr(exc, 'orig', None) or exc}", 1)
        _fail(f"internal error ({type(exc).__name__}: {exc}); please report it", 1)


INTERRUPTED = 130
"""The exit status of a command ended by ^C (128 + SIGINT), as shells report it."""


def _interrupted(exc: BaseException) -> bool:
    """True when ^C caused `exc`: a driver cut off mid-read fails on the way out with an error of
    its own, whose context is the KeyboardInterrupt."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def _is_database_error(exc: Exception) -> bool:
    """A driver error SQLAlchemy wrapped (only possible once a command has loaded SQLAlchemy)."""
    sa_exc = sys.modules.get("sqlalchemy.exc")
    return sa_exc is not None and isinstance(exc, sa_exc.DBAPIError)


def one_line(message: str) -> str:
    """A message as one printable line: lines joined, lone surrogates escaped."""
    joined = " | ".join(part.strip() for part in message.splitlines() if part.strip())
    return joined.encode("utf-8", "backslashreplace").decode("utf-8")


def _fail(message: str, code: int) -> NoReturn:
    from rich.console import Console

    Console(stderr=True, highlight=False, soft_wrap=True).print(f"error: {one_line(message)}", markup=False)
    sys.exit(code)
