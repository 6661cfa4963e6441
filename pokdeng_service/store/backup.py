"""Backups and restores of a store, safe while a server writes (docs/operations.md, "Backups").

* SQLite: sqlite3's online backup API, in one step, from a read-only connection: the copy is
  the database as one read transaction saw it (in WAL mode the server's writes go on meanwhile).
  It is written to a temporary file beside the target, checked (``PRAGMA quick_check``), synced
  and renamed into place, so a target either is a whole backup or does not exist. A backup is a
  self-contained file (rollback journal mode); a restore puts it back in WAL mode.
* PostgreSQL: ``pg_dump --format=custom`` (one snapshot; the server's writes go on) and
  ``pg_restore`` into an empty database, in one transaction. The binaries are found like the
  test-suite finds its server's: ``POKDENG_PG_BINDIR``, else the highest
  ``/usr/lib/postgresql/<version>/bin``, else ``PATH``.

Neither copies the vault key: it never is in the store (keep it apart from the backups).
``BackupError`` (an ``OSError``) says in one line what went wrong.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from pokdeng_service.store import readonly
from pokdeng_service.store.lock import StoreLock

PG_BINDIR_ENV = "POKDENG_PG_BINDIR"
_PG_LIB_ROOT = Path("/usr/lib/postgresql")


class BackupError(OSError):
    """A backup or restore could not be made."""


# --- SQLite ---------------------------------------------------------------------------------


def backup_sqlite(source: str | Path, target: str | Path) -> int:
    """Copy the SQLite store ``source`` to the new file ``target``; returns how many events it holds."""
    uri = readonly.sqlite_uri(source)
    return _copy_sqlite(uri, Path(target), journal="DELETE")


def restore_sqlite(backup: str | Path, target: str | Path) -> int:
    """Make the new SQLite store ``target`` from a backup; returns how many events it holds.

    ``target`` must not exist; it is locked (``store.lock``) while it is made, so that no
    server starts on it half way."""
    uri = readonly.sqlite_uri(backup)
    file = Path(target)
    with StoreLock.acquire(file, "pokdeng restore"):
        return _copy_sqlite(uri, file, journal="WAL")


def _copy_sqlite(uri: str, target: Path, journal: str) -> int:
    if target.exists():
        raise BackupError(f"{target} exists: name a new file (move the old one aside first)")
    target.parent.mkdir(parents=True, exist_ok=True)
    with _temporary_beside(target) as temporary:
        try:
            source = sqlite3.connect(uri, uri=True, timeout=10)
            try:
                copy = sqlite3.connect(temporary, isolation_level=None)
                try:
                    source.backup(copy)  # every page in one step: one consistent read of the source
                    copy.execute(f"PRAGMA journal_mode={journal}")
                    check = copy.execute("PRAGMA quick_check").fetchone()
                    if check is None or check[0] != "ok":
                        raise BackupError(f"the copy of the store fails its check: {check}")
                    events = int(copy.execute(f"SELECT COUNT(*) FROM {readonly.EVENTS_TABLE['sqlite']}").fetchone()[0])
                finally:
                    copy.close()
            finally:
                source.close()
        except sqlite3.Error as error:
            raise BackupError(f"cannot copy the store: {error}") from None
        _sync(temporary)
        if target.exists():
            raise BackupError(f"{target} appeared while the copy was made: not replaced")
        os.replace(temporary, target)
    _sync_folder(target.parent)
    return events


@contextlib.contextmanager
def _temporary_beside(target: Path) -> Iterator[Path]:
    """A temporary file name in ``target``'s folder (mode 0600), removed unless it was renamed."""
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    os.close(fd)
    path = Path(name)
    try:
        yield path
    finally:
        for leftover in (path, Path(f"{path}-journal"), Path(f"{path}-wal"), Path(f"{path}-shm")):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()


def _sync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):
        _sync(folder)


# --- PostgreSQL -----------------------------------------------------------------------------


def _version_key(path: Path) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", path.name)) or (0,)


def pg_binary(name: str) -> Path:
    """The PostgreSQL client program ``name`` (``pg_dump``, ``pg_restore``): ``$POKDENG_PG_BINDIR``
    (and only it) if set, else the highest ``/usr/lib/postgresql/<version>/bin``, else ``PATH``."""
    override = os.environ.get(PG_BINDIR_ENV, "").strip()
    if override:
        candidate = Path(override) / name
        if os.access(candidate, os.X_OK):
            return candidate
        raise BackupError(f"{name} not found in {PG_BINDIR_ENV}={override}")
    if _PG_LIB_ROOT.is_dir():
        for version in sorted((p for p in _PG_LIB_ROOT.iterdir() if p.is_dir()), key=_version_key, reverse=True):
            candidate = version / "bin" / name
            if os.access(candidate, os.X_OK):
                return candidate
    found = shutil.which(name)
    if found:
        return Path(found)
    raise BackupError(
        f"{name} not found: install the PostgreSQL client programs (the server's version or newer), "
        f"or name their folder in {PG_BINDIR_ENV}"
    )


def _pg_connection_args(env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    args = ["--host", env["POSTGRES_HOST"], "--port", env["POSTGRES_PORT"], "--username", env["POSTGRES_USER"]]
    child_env = {**os.environ, "PGPASSWORD": env["POSTGRES_PASSWORD"], "PGCONNECT_TIMEOUT": "10"}
    child_env.pop("PGOPTIONS", None)
    attrs = env.get("POSTGRES_TARGET_SESSION_ATTRS", "")  # (a multi-host URL: the host and port lists go as they are)
    if attrs:
        child_env["PGTARGETSESSIONATTRS"] = attrs
    return args, child_env


def _run(command: list[str], child_env: dict[str, str], what: str) -> None:
    try:
        result = subprocess.run(command, env=child_env, capture_output=True, text=True, check=False)
    except OSError as error:
        raise BackupError(f"cannot run {command[0]}: {error.strerror or error}") from None
    if result.returncode != 0:
        raise BackupError(f"{what} failed (exit {result.returncode}): {readonly.one_line(Exception(result.stderr))}")


def backup_postgres(env: dict[str, str], target: str | Path, schemas: list[str] | None = None) -> None:
    """``pg_dump`` the store that ``env`` names into the new file ``target`` (custom format).

    ``schemas``: only those (a store in named schemas); none: the whole database (every partition)."""
    file = Path(target)
    if file.exists():
        raise BackupError(f"{file} exists: name a new file (move the old one aside first)")
    if not readonly.postgres_store_exists(env):
        raise BackupError(f"not a pokdeng store: PostgreSQL {readonly.postgres_place(env)} has no pokdeng_events table")
    args, child_env = _pg_connection_args(env)
    file.parent.mkdir(parents=True, exist_ok=True)
    with _temporary_beside(file) as temporary:
        command = [
            str(pg_binary("pg_dump")),
            "--format=custom",
            "--no-owner",
            "--no-privileges",
            f"--file={temporary}",
            *args,
            *(f"--schema={schema}" for schema in schemas or ()),
            "--dbname",
            env["POSTGRES_DBNAME"],
        ]
        _run(command, child_env, "pg_dump")
        _sync(temporary)
        os.replace(temporary, file)
    _sync_folder(file.parent)


def restore_postgres(backup: str | Path, env: dict[str, str]) -> None:
    """``pg_restore`` a backup into the database that ``env`` names, which must hold no pokdeng store."""
    file = Path(backup)
    if not file.is_file():
        raise BackupError(f"no such backup: {file}")
    if readonly.postgres_store_exists(env):
        raise BackupError(
            f"PostgreSQL {readonly.postgres_place(env)} already holds a pokdeng store: "
            "restore into a new, empty database"
        )
    args, child_env = _pg_connection_args(env)
    command = [
        str(pg_binary("pg_restore")),
        "--no-owner",
        "--no-privileges",
        "--exit-on-error",
        "--single-transaction",
        *args,
        "--dbname",
        env["POSTGRES_DBNAME"],
        str(file),
    ]
    _run(command, child_env, "pg_restore")
    if not readonly.postgres_store_exists(env):
        raise BackupError(
            f"restored, but PostgreSQL {readonly.postgres_place(env)} holds no pokdeng_events table: "
            "the backup was made from another schema"
        )


__all__ = [
    "PG_BINDIR_ENV",
    "BackupError",
    "backup_postgres",
    "backup_sqlite",
    "pg_binary",
    "restore_postgres",
    "restore_sqlite",
]
