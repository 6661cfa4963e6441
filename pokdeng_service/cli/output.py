"""The files the CLI's commands write, the JSON of their verdicts, and the exit code of a reader that went away;
no rich (``console`` has the console), so the parser and ``--help`` load nothing heavy.

A file to write is checked before the command does any work (``output_file``): a folder that does not
exist, or a name that is a folder, is bad usage (exit 2), and nothing is signed or exported first; a file
that cannot be written then is bad usage too (``write_output``), not an unreachable store. A reader that goes
away (``pokdeng replay ... | head``) ends the command as a shell reports SIGPIPE (``EXIT_SIGPIPE``, 141).

``verdicts_json``: the one machine form of the commands that check something (``verify --json``,
``checkpoints check|audit|verify-note --json``): one object, ``verdicts`` (each ``Verdict.as_dict``: subject,
ok, status, first_difference, checks with name, ok and detail, warnings; with what the command adds, such as
a bundle's file or a log's partition), the command's tallies, and ``exit_code``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

EXIT_SIGPIPE = 141  # 128 + SIGPIPE (13)


def output_file(name: str) -> Path:
    """A file to write, in a folder that exists and not itself a folder; else ``ValueError`` (the CLI's bad
    usage, exit 2), raised before any work is done."""
    path = Path(name)
    if not path.parent.is_dir():
        raise ValueError(f"cannot write {name}: no such folder {path.parent}")
    if path.is_dir():
        raise ValueError(f"cannot write {name}: it is a folder (name a file in it)")
    return path


def write_output(path: Path, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path``; a file that cannot be written is ``ValueError`` (exit 2)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        path.write_bytes(raw)
    except OSError as error:
        raise ValueError(f"cannot write {path}: {error.strerror or error}") from None


def verdicts_json(verdicts: Sequence[dict[str, Any]], exit_code: int, **tallies: Any) -> str:
    """The JSON object of a command's verdicts: ``{"verdicts": [...], **tallies, "exit_code": N}``."""
    return json.dumps({"verdicts": list(verdicts), **tallies, "exit_code": exit_code}, indent=2) + "\n"


__all__ = ["EXIT_SIGPIPE", "output_file", "verdicts_json", "write_output"]
