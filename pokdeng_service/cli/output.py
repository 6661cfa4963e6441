"""The files the CLI's commands write, and the exit code of a reader that went away; no rich (``console``
has the console), so the parser and ``--help`` load nothing heavy.

A file to write is checked before the command does any work (``output_file``): a folder that does not
exist is bad usage (exit 2), and nothing is signed or exported first. A reader that goes away
(``pokdeng replay ... | head``) ends the command as a shell reports SIGPIPE (``EXIT_SIGPIPE``, 141).
"""

from __future__ import annotations

from pathlib import Path

EXIT_SIGPIPE = 141  # 128 + SIGPIPE (13)


def output_file(name: str) -> Path:
    """A file to write, in a folder that exists; else ``ValueError`` (the CLI's bad usage, exit 2), raised
    before any work is done."""
    path = Path(name)
    if not path.parent.is_dir():
        raise ValueError(f"cannot write {name}: no such folder {path.parent}")
    return path
