"""The CLI's rich console: a reader that goes away (``pokdeng rtp ... | head``) ends the command as a shell
reports SIGPIPE (exit 141, as the other commands do), not with rich's exit 1 ("failed")."""

from __future__ import annotations

import os
import sys

from rich.console import Console as RichConsole

EXIT_SIGPIPE = 141  # 128 + SIGPIPE (13)


class Console(RichConsole):
    def on_broken_pipe(self) -> None:
        self.quiet = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # (nothing more is written to the closed pipe, at exit either)
        raise SystemExit(EXIT_SIGPIPE)
