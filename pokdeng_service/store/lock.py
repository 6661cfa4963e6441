"""One server per SQLite store: an OS file lock held for the server's life.

A SQLite store has one writing server process (its aggregate cache is authoritative, see
docs/operations.md). ``StoreLock.acquire(database)`` takes an exclusive ``flock`` on the lock
file ``<database>.lock`` beside the database, without waiting, and writes who holds it (pid,
host, since when, what for) into it. A second server on the same file is refused with
``StoreLocked``, naming the holder. The operating system releases the lock when the holder
exits, however it exits (a SIGKILL too): a stale lock file is harmless and is never deleted
(deleting it would let two processes lock two different files of the same name).

The audit tools take no lock: they read the store read-only (``readonly``) while it is served.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import time
from collections.abc import Iterable
from pathlib import Path


class StoreLocked(OSError):
    """Another process holds the store's lock."""


def lock_path(database: str | Path) -> Path:
    """The lock file of a SQLite database: ``<database>.lock`` beside it."""
    file = Path(database)
    return file.with_name(file.name + ".lock")


class StoreLock:
    """An exclusive lock on one SQLite store, held until ``release`` (or the process ends)."""

    def __init__(self, database: Path, path: Path, fd: int) -> None:
        self.database = database
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, database: str | Path, purpose: str = "pokdeng serve") -> StoreLock:
        """Lock ``database`` for this process, or raise ``StoreLocked`` naming the holder."""
        file = Path(database)
        path = lock_path(file)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise StoreLocked(
                f"SQLite file {file} is in use by another pokdeng process ({holder}; lock file {path}): "
                "a SQLite store has one server. Stop that one first, or serve several replicas from PostgreSQL"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        note = f"pid {os.getpid()} on {socket.gethostname()} since {stamp}: {purpose}\n"
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, note.encode(), 0)
        return cls(file, path, fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Give the lock up (the file stays: see the module's note). Safe to call twice."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    def __enter__(self) -> StoreLock:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.release()


def acquire_all(databases: Iterable[str | Path], purpose: str = "pokdeng serve") -> list[StoreLock]:
    """Lock every database (a deployment's partitions), or none of them."""
    locks: list[StoreLock] = []
    try:
        for database in databases:
            locks.append(StoreLock.acquire(database, purpose))
    except BaseException:
        release_all(locks)
        raise
    return locks


def release_all(locks: Iterable[StoreLock]) -> None:
    for lock in locks:
        lock.release()


def _read_holder(fd: int) -> str:
    try:
        text = os.pread(fd, 400, 0).decode(errors="replace").strip()
    except OSError:
        text = ""
    return text or "a process that has not said who it is"


__all__ = ["StoreLock", "StoreLocked", "acquire_all", "lock_path", "release_all"]
