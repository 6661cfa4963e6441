"""Opening a store as evidence: read only, creating nothing, never migrating.

The audit tools (``pokdeng verify``, ``replay``, ``export``, ``recall``) read a store that may be
served at the same time, or a copy on read-only media. Nothing they do may change it:

* SQLite: the file must exist (``no such database: PATH`` otherwise, and nothing is created). It
  is opened as a ``file:`` URI with ``mode=ro``, which the library's recorder accepts (it opens
  its connections with ``uri=True``). A WAL-mode database needs its ``-shm`` index to be read:
  when there is no ``-wal`` file (no writer has the database open) and the folder is not
  writable (a read-only copy), or the file is not in WAL mode (the library would switch it),
  ``immutable=1`` is added: SQLite then reads the file as it is, without locks or index.
* PostgreSQL: every session is read only (``default_transaction_read_only=on``), and a probe
  connection first checks that the server answers and that the database holds a pokdeng store.

Both factories here (``ReadOnlySQLiteFactory``, ``ReadOnlyPostgresFactory``, selected by
``PERSISTENCE_MODULE`` topics) never create tables, whatever ``CREATE_TABLE`` says.
``StoreUnavailable`` (an ``OSError``) says in one line what is wrong.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

from eventsourcing.postgres import PostgresFactory
from eventsourcing.sqlite import SQLiteFactory
from eventsourcing.utils import Environment, EnvType

from pokdeng_service.store.bounded import connect_kwargs, libpq_extras

READ_ONLY_OPTIONS = "-c default_transaction_read_only=on"
SQLITE_FACTORY = f"{__name__}:ReadOnlySQLiteFactory"
POSTGRES_FACTORY = f"{__name__}:ReadOnlyPostgresFactory"
EVENTS_TABLE = {"sqlite": "stored_events", "postgres": "pokdeng_events"}
_HEADER = b"SQLite format 3\x00"


class StoreUnavailable(OSError):
    """The store cannot be read: missing, unreadable, unreachable, or not a pokdeng store."""


class ReadOnlySQLiteFactory(SQLiteFactory):
    """eventsourcing's SQLite factory that never creates tables (give it a ``mode=ro`` URI)."""

    def env_create_table(self) -> bool:
        return False


class ReadOnlyPostgresFactory(PostgresFactory):
    """eventsourcing's PostgreSQL factory whose sessions are read only and which never creates tables."""

    def __init__(self, env: Environment | EnvType | None):
        super().__init__(env)
        pool = self.datastore.pool  # not opened yet: every connection it makes gets the option
        kwargs = dict(pool.kwargs) if isinstance(pool.kwargs, dict) else {}
        kwargs["options"] = READ_ONLY_OPTIONS
        kwargs.update(libpq_extras(self.env, read_only=True))  # a multi-host URL's target_session_attrs
        pool.kwargs = kwargs

    def env_create_table(self) -> bool:
        return False


def sqlite_uri(path: str | Path) -> str:
    """The read-only URI of an existing SQLite store (``StoreUnavailable`` if it is not one)."""
    file = Path(path)
    if not file.exists():
        raise StoreUnavailable(f"no such database: {file}")
    try:
        with open(file, "rb") as raw:
            header = raw.read(100)
    except OSError as error:
        raise StoreUnavailable(f"cannot read {file}: {error.strerror or error}") from None
    if len(header) < 100 or not header.startswith(_HEADER):
        raise StoreUnavailable(f"not a SQLite database: {file}")
    wal_mode = header[18] == 2 and header[19] == 2
    live = Path(f"{file}-wal").exists()  # a writer has it open (or crashed): the WAL must be read
    uri = "file:" + quote(str(file.resolve())) + "?mode=ro"
    if not live and (not wal_mode or not os.access(file.parent, os.W_OK)):
        uri += "&immutable=1"
    try:
        connection = sqlite3.connect(uri, uri=True)
        try:
            found = connection.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (EVENTS_TABLE["sqlite"],)
            ).fetchone()
        finally:
            connection.close()
    except sqlite3.Error as error:
        raise StoreUnavailable(f"cannot read {file}: {error}") from None
    if found is None:
        raise StoreUnavailable(f"not a pokdeng store: {file} (no {EVENTS_TABLE['sqlite']} table)")
    return uri


def sqlite_settings(path: str | Path) -> dict[str, str]:
    """eventsourcing settings that read an existing SQLite store and change nothing."""
    return {
        "PERSISTENCE_MODULE": SQLITE_FACTORY,
        "SQLITE_DBNAME": sqlite_uri(path),
        "SQLITE_LOCK_TIMEOUT": "10",
        "CREATE_TABLE": "n",
    }


def postgres_place(env: dict[str, str]) -> str:
    """``host:port/dbname`` (and the schema, if not ``public``) for messages."""
    schema = env.get("POSTGRES_SCHEMA", "")
    place = f"{env.get('POSTGRES_HOST')}:{env.get('POSTGRES_PORT')}/{env.get('POSTGRES_DBNAME')}"
    return place + (f" (schema {schema})" if schema and schema != "public" else "")


def connect_postgres(env: dict[str, str], *, read_only: bool = True, timeout: int = 5) -> Any:
    """A psycopg connection to the store that ``env`` names (``StoreUnavailable`` if it cannot be had)."""
    import psycopg

    place = postgres_place(env)
    settings: dict[str, Any] = {**connect_kwargs(env, read_only=read_only), "connect_timeout": timeout}
    if read_only:
        settings["options"] = READ_ONLY_OPTIONS
    try:
        return psycopg.connect(autocommit=True, **settings)
    except psycopg.Error as error:
        text = one_line(error)
        if "does not exist" in text and "database" in text:
            raise StoreUnavailable(f"no such database: PostgreSQL {place}") from None
        raise StoreUnavailable(f"cannot reach PostgreSQL {place}: {text}") from None


def postgres_store_exists(env: dict[str, str]) -> bool:
    """Whether the schema that ``env`` names holds a pokdeng events table (connecting read only)."""
    schema = env.get("POSTGRES_SCHEMA") or "public"
    with connect_postgres(env) as connection:
        row = connection.execute("SELECT to_regclass(%s)", (f'"{schema}".{EVENTS_TABLE["postgres"]}',)).fetchone()
    return row is not None and row[0] is not None


def postgres_settings(env: dict[str, str]) -> dict[str, str]:
    """``env`` (the store's eventsourcing settings) made read only, once the store is found there."""
    if not postgres_store_exists(env):
        raise StoreUnavailable(f"not a pokdeng store: PostgreSQL {postgres_place(env)} has no pokdeng_events table")
    return {**env, "PERSISTENCE_MODULE": POSTGRES_FACTORY, "CREATE_TABLE": "n"}


def one_line(error: BaseException) -> str:
    """An error's message on one line (psycopg's run over several)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return "; ".join(lines) or type(error).__name__


__all__ = [
    "POSTGRES_FACTORY",
    "READ_ONLY_OPTIONS",
    "SQLITE_FACTORY",
    "ReadOnlyPostgresFactory",
    "ReadOnlySQLiteFactory",
    "StoreUnavailable",
    "connect_postgres",
    "one_line",
    "postgres_place",
    "postgres_settings",
    "postgres_store_exists",
    "sqlite_settings",
    "sqlite_uri",
]
