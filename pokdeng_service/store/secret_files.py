"""One rule for the files that hold secrets: the vault key, the signing keys, the TLS private key, the token file.

A secret file that its group or others may access (any bit of ``mode & 0o077``) is refused
(``SecretFileError``, a ``ValueError``: the CLI exits 2), with a message that names the file and
the fix: ``chmod 600 FILE``. ``read_secret`` opens the file once and checks the mode of what it
opened (``fstat``), so that a file swapped between the check and the read is not read unchecked; a
symbolic link is followed (a secret volume's files usually are links) and the mode that counts is its
target's. A file that cannot be read raises the ``OSError`` as it came, for each caller to word.

Used by ``store.vault`` (the vault key file), ``store.signing`` (the signing key file),
``api.auth`` (the token file) and ``api.server`` (the TLS private key): it sits low in the layers,
below all of them, and imports nothing of the service.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

OPEN_TO_OTHERS = 0o077  # group and others: read, write, execute


class SecretFileError(ValueError):
    """A secret file that its group or others may access."""


def check_secret_mode(path: str | os.PathLike[str], what: str, mode: int) -> None:
    """Refuse ``mode`` (a ``st_mode``) of the secret file ``path`` if its group or others may access it.

    ``what`` names the file in the message: "vault key file", "TLS private key" ..."""
    if mode & OPEN_TO_OTHERS:
        file = Path(path)
        raise SecretFileError(
            f"{what} {file} is open to its group or others (mode {stat.S_IMODE(mode) & 0o777:03o}): "
            f"restrict it to its owner with `chmod 600 {file}`"
        )


def read_secret(path: str | os.PathLike[str], what: str) -> bytes:
    """The bytes of the secret file ``path``, once its mode is checked (``check_secret_mode``) on the file
    opened. ``OSError`` if it cannot be opened or read; ``SecretFileError`` if it is open to others."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as file:
        check_secret_mode(path, what, os.fstat(fd).st_mode)
        return file.read()


__all__ = ["OPEN_TO_OTHERS", "SecretFileError", "check_secret_mode", "read_secret"]
