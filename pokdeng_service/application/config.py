"""Where events are stored, and the vault key: one place that turns settings into an application.

* ``sqlite`` (the embedded default): one database file; partition ``k > 0`` uses
  ``<stem>.p<k><suffix>`` beside it.
* ``postgres``: a URL ``postgresql://user:password@host:port/dbname``; partition ``k``
  uses the schema ``pokdeng_p<k>`` (partition 0: ``public``, or the URL's
  ``?schema=`` option), each with its own events table, so writes to different
  partitions never wait on one table lock (see docs/operations.md).
* ``memory``: eventsourcing's in-memory recorder, for tests and demos.

The signing keys of signed tree heads (docs/checkpoints.md) are configured like the vault key
and never stored in the database: ``POKDENG_SIGNING_KEY`` (64 hex digits, the current key),
else a key file of ``pokdeng keys new`` (``POKDENG_SIGNING_KEY_FILE``, default
``<db>.signing-keys`` beside the SQLite file). Unlike the vault key it is never created
implicitly: without one, ``SignTreeHead`` is refused.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qs, unquote, urlparse

from pokdeng_service.store.signing import KeyRing, SigningKey
from pokdeng_service.store.vault import DeferredVault, SeedVault

StoreKind = Literal["sqlite", "postgres", "memory"]
DEFAULT_DB = "pokdeng.sqlite"


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class StoreConfig:
    kind: StoreKind = "sqlite"
    sqlite_path: str = DEFAULT_DB
    postgres_url: str = ""
    partitions: int = 1
    vault_key: str = ""  # hex; empty: POKDENG_VAULT_KEY, else the key file
    vault_key_file: str = ""  # empty: POKDENG_VAULT_KEY_FILE, else <db>.vault-key beside the SQLite file
    signing_key: str = ""  # hex; empty: POKDENG_SIGNING_KEY, else the signing key file
    signing_key_file: str = ""  # empty: POKDENG_SIGNING_KEY_FILE, else beside the SQLite file

    def __post_init__(self) -> None:
        if not 1 <= self.partitions <= 64:
            raise ConfigError("partitions must be 1 to 64")
        if self.kind == "postgres" and not self.postgres_url:
            raise ConfigError("a PostgreSQL store needs a URL (postgresql://user:password@host:port/dbname)")

    @classmethod
    def from_args(
        cls,
        db: str | None = None,
        postgres_url: str | None = None,
        memory: bool = False,
        partitions: int = 1,
        vault_key_file: str | None = None,
    ) -> StoreConfig:
        url = postgres_url or os.environ.get("POKDENG_POSTGRES_URL", "")
        key_file = vault_key_file or ""
        if memory:
            return cls(kind="memory", partitions=partitions)
        if url:
            return cls(kind="postgres", postgres_url=url, partitions=partitions, vault_key_file=key_file)
        return cls(
            kind="sqlite",
            sqlite_path=db or os.environ.get("POKDENG_DB", DEFAULT_DB),
            partitions=partitions,
            vault_key_file=key_file,
        )

    def sqlite_file(self, partition: int = 0) -> Path:
        """The SQLite file of a partition: ``<db>``, then ``<stem>.p<k><suffix>`` beside it."""
        if not 0 <= partition < self.partitions:
            raise ConfigError(f"no partition {partition}")
        path = Path(self.sqlite_path)
        return path.with_name(f"{path.stem}.p{partition}{path.suffix}") if partition else path

    def env(self, partition: int = 0) -> dict[str, str]:
        """The eventsourcing settings for one partition's store."""
        if not 0 <= partition < self.partitions:
            raise ConfigError(f"no partition {partition}")
        if self.kind == "memory":
            return {"PERSISTENCE_MODULE": "eventsourcing.popo"}
        if self.kind == "sqlite":
            path = self.sqlite_file(partition)
            path.parent.mkdir(parents=True, exist_ok=True)
            return {
                "PERSISTENCE_MODULE": "eventsourcing.sqlite",
                "SQLITE_DBNAME": str(path),
                "SQLITE_LOCK_TIMEOUT": "10",
                # one server process writes a SQLite file: its aggregate cache is authoritative
                "POKDENG_SINGLE_WRITER": "y",
            }
        settings = postgres_settings(self.postgres_url)
        if partition:
            settings["POSTGRES_SCHEMA"] = f"pokdeng_p{partition}"
        return settings

    def read_only_env(self, partition: int = 0) -> dict[str, str]:
        """Settings that read a partition's existing store and change nothing (the audit tools).

        ``store.readonly``: an SQLite file must exist and is opened ``mode=ro``; PostgreSQL
        sessions are read only and the store must be there; no table or schema is created.
        ``StoreUnavailable`` (an ``OSError``) says what is missing."""
        from pokdeng_service.store import readonly  # (imports the library's PostgreSQL module)

        if self.kind == "memory":
            raise ConfigError("an in-memory store cannot be opened again")
        if self.kind == "sqlite":
            return readonly.sqlite_settings(self.sqlite_file(partition))
        return readonly.postgres_settings(self.env(partition))

    def vault(self, create: bool = True) -> SeedVault:
        """The vault key: ``vault_key`` or ``POKDENG_VAULT_KEY``, else a key file.

        SQLite: ``vault_key_file``, ``POKDENG_VAULT_KEY_FILE`` or ``<db>.vault-key`` beside the
        database, made (mode 0600) if missing and ``create``. PostgreSQL: every replica needs the
        same key, so it must be given: a key, or a key file named explicitly that exists. A key
        file open to its group or others is refused (``VaultError``)."""
        key = self.vault_key or os.environ.get("POKDENG_VAULT_KEY", "")
        if key:
            return SeedVault.from_hex(key)
        if self.kind == "memory":
            return SeedVault.ephemeral()
        file = self.vault_key_file or os.environ.get("POKDENG_VAULT_KEY_FILE", "")
        if self.kind == "postgres":
            if not file:
                raise ConfigError(
                    "a PostgreSQL store needs an explicit vault key, the same for every replica: set "
                    "POKDENG_VAULT_KEY (64 hex characters) or name a key file (--vault-key-file or "
                    "POKDENG_VAULT_KEY_FILE); see docs/operations.md"
                )
            if not Path(file).exists():
                raise ConfigError(
                    f"vault key file {file} not found: on PostgreSQL it is not made for you (every replica "
                    "needs the same key); copy it from the other replicas, or make a new one for a new store "
                    "(docs/operations.md)"
                )
            return SeedVault.from_file(file, create=False)
        if not file:
            base = Path(self.sqlite_path)
            file = str(base.with_name(base.name + ".vault-key"))
        return SeedVault.from_file(file, create=create)

    def audit_vault(self) -> SeedVault:
        """The vault for reading: the key is looked for (never made) only when an open round's seed is needed."""
        return DeferredVault(lambda: self.vault(create=False))

    def signing_key_path(self) -> Path:
        """The signing key file (``pokdeng keys``): configured, or ``<db>.signing-keys`` beside the SQLite file."""
        file = self.signing_key_file or os.environ.get("POKDENG_SIGNING_KEY_FILE", "")
        if file:
            return Path(file)
        base = Path(self.sqlite_path) if self.kind == "sqlite" else Path("pokdeng")
        return base.with_name(base.name + ".signing-keys")

    def signing_keys(self) -> KeyRing:
        """The tree heads' keys: ``POKDENG_SIGNING_KEY`` (with the key file's older public keys, if there is
        one), else the key file, else none (``SignTreeHead`` is then refused)."""
        key = self.signing_key or os.environ.get("POKDENG_SIGNING_KEY", "")
        path = self.signing_key_path()
        configured_file = self.signing_key_file or os.environ.get("POKDENG_SIGNING_KEY_FILE", "")
        in_memory = self.kind == "memory" and not configured_file  # (no implicit file for a test store)
        ring = KeyRing.from_file(path) if path.exists() and not in_memory else KeyRing()
        if key:
            current = SigningKey.from_hex(key)
            configured = KeyRing.of(current)
            configured.public = ring.public.merge(configured.public)
            return configured
        return ring

    def describe(self) -> str:
        if self.kind == "memory":
            return "in-memory store"
        if self.kind == "sqlite":
            return f"SQLite file {self.sqlite_path}" + (
                f" (+{self.partitions - 1} partitions)" if self.partitions > 1 else ""
            )
        parsed = urlparse(self.postgres_url)
        return f"PostgreSQL {parsed.hostname}:{parsed.port or 5432}/{parsed.path.lstrip('/')}"


def postgres_settings(url: str) -> dict[str, str]:
    """eventsourcing's POSTGRES_* settings from a ``postgresql://`` URL."""
    parsed = urlparse(url)
    if parsed.scheme not in ("postgresql", "postgres"):
        raise ConfigError(f"not a PostgreSQL URL: {url!r}")
    dbname = parsed.path.lstrip("/")
    if not dbname:
        raise ConfigError("the PostgreSQL URL names no database")
    settings = {
        # the library's factory with connect, keepalive and statement timeouts (store/bounded.py)
        "PERSISTENCE_MODULE": "pokdeng_service.store.bounded:BoundedPostgresFactory",
        "POSTGRES_DBNAME": unquote(dbname),
        "POSTGRES_HOST": parsed.hostname or "127.0.0.1",
        "POSTGRES_PORT": str(parsed.port or 5432),
        "POSTGRES_USER": unquote(parsed.username or ""),
        "POSTGRES_PASSWORD": unquote(parsed.password or ""),
        # every wait is bounded, so that a call fails fast (UNAVAILABLE) when the store is gone:
        # a pooled connection within 2 s, a statement within 5 s, a session idle in a transaction 5 s
        # (each can be overridden with POKDENG_<KEY> in the environment, docs/operations.md)
        "POSTGRES_CONNECT_TIMEOUT": "2",
        "POSTGRES_STATEMENT_TIMEOUT": "5",
        "POSTGRES_IDLE_IN_TRANSACTION_SESSION_TIMEOUT": "5",
        "POSTGRES_POOL_SIZE": "8",
        "POSTGRES_MAX_OVERFLOW": "8",
    }
    schema = parse_qs(parsed.query).get("schema")
    if schema:
        settings["POSTGRES_SCHEMA"] = schema[0]
    return settings
