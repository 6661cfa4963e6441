"""A progress bar on standard error while a long command runs (``verify --all``, a batch of rounds or bundles),
only when standard error is a terminal: a pipe, a file or a test gets nothing from it, and standard output
(the verdicts, the summary, ``--json``) is never touched. Rich is imported only when a bar is drawn."""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any, TextIO


class Progress:
    """``with Progress("verifying the store", total) as bar: bar.update(done)`` (or ``bar.advance()``)."""

    def __init__(self, label: str, total: int, stream: TextIO | None = None) -> None:
        self.label = label
        self.total = max(int(total), 0)
        self.stream = stream if stream is not None else sys.stderr
        self._bar: Any = None
        self._task: Any = None
        self.done = 0

    @property
    def shown(self) -> bool:
        """Whether a bar is drawn: standard error is a terminal and there is more than one thing to do."""
        isatty = getattr(self.stream, "isatty", None)
        return bool(isatty and isatty()) and self.total > 1

    def __enter__(self) -> Progress:
        if self.shown:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
            from rich.progress import Progress as RichProgress

            console = Console(file=self.stream, force_terminal=True)
            self._bar = RichProgress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=console,
                transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task(self.label, total=self.total)
        return self

    def update(self, done: int) -> None:
        self.done = min(int(done), self.total) if self.total else int(done)
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done)

    def advance(self, step: int = 1) -> None:
        self.update(self.done + step)

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
