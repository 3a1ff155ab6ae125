"""Progress reporting for long setup steps: a Rich bar on a terminal, silence elsewhere."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rich.console import Console

Advance = Callable[[int], None]


class Reporter(Protocol):
    """What the setup steps call; the CLI passes a RichReporter, the library a NullReporter."""

    def note(self, message: str) -> None:
        """One line of progress text."""

    def detail(self, message: str) -> None:
        """A line shown only when the user asked for detail."""

    def task(self, description: str, total: int | None) -> AbstractContextManager[Advance]:
        """A context in which `advance(n)` moves a bar of `total` steps."""


class NullReporter:
    """Reports nothing (library calls, tests, non-terminal output)."""

    def note(self, message: str) -> None:
        return None

    def detail(self, message: str) -> None:
        return None

    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[Advance]:
        yield lambda n: None


class RichReporter:
    """Rich progress bars on stderr when it is a terminal; plain lines otherwise."""

    def __init__(self, console: Console | None = None, *, verbose: bool = False) -> None:
        from rich.console import Console  # here, not at the top: the library never draws a bar

        self.console = console or Console(stderr=True, highlight=False, soft_wrap=True)
        self.verbose = verbose

    def note(self, message: str) -> None:
        self.console.print(message, markup=False)

    def detail(self, message: str) -> None:
        if self.verbose:
            self.console.print(message, markup=False)

    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[Advance]:
        if not self.console.is_terminal:
            yield lambda n: None
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=self.console, transient=True) as bar:
            task_id = bar.add_task(description, total=total)
            yield lambda n: bar.advance(task_id, n)
