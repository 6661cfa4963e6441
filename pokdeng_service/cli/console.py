"""Where the CLI writes: its rich console (the files its commands write: ``cli.output``).

A reader that goes away (``pokdeng rtp ... | head``) ends the command as a shell reports SIGPIPE (exit
141, ``output.EXIT_SIGPIPE``, as the other commands do), not with rich's exit 1 ("failed").
"""

from __future__ import annotations

import os
import sys

from rich.console import Console as RichConsole

from pokdeng_service.cli.output import EXIT_SIGPIPE


class Console(RichConsole):
    def on_broken_pipe(self) -> None:
        self.quiet = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # (nothing more is written to the closed pipe, at exit either)
        raise SystemExit(EXIT_SIGPIPE)
