"""Where the CLI writes: its rich console, and the files its commands write.

A reader that goes away (``pokdeng rtp ... | head``) ends the command as a shell reports SIGPIPE (exit
141, as the other commands do), not with rich's exit 1 ("failed"). A file to write is checked before
the command does any work (``output_file``): a folder that does not exist is bad usage (exit 2), and
nothing is signed or exported first.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from rich.console import Console as RichConsole

EXIT_SIGPIPE = 141  # 128 + SIGPIPE (13)


class Console(RichConsole):
    def on_broken_pipe(self) -> None:
        self.quiet = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # (nothing more is written to the closed pipe, at exit either)
        raise SystemExit(EXIT_SIGPIPE)


def output_file(name: str) -> Path:
    """A file to write, in a folder that exists; else ``ValueError`` (the CLI's bad usage, exit 2), raised
    before any work is done."""
    path = Path(name)
    if not path.parent.is_dir():
        raise ValueError(f"cannot write {name}: no such folder {path.parent}")
    return path
