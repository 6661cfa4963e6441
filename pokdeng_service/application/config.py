"""Where events are stored, and the vault key: one place that turns settings into an application.

* ``sqlite`` (the embedded default): one database file; partition ``k > 0`` uses
  ``<stem>.p<k><suffix>`` beside it.
* ``postgres``: a URL ``postgresql://user:password@host:port/dbname``; partition ``k``
  uses the schema ``pokdeng_p<k>`` (partition 0: ``public``, or the URL's
  ``?schema=`` option), each with its own events table, so writes to different
  partitions never wait on one table lock (see docs/operations.md).
* ``memory``: eventsourcing's in-memory recorder, for tests and demos.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qs, unquote, urlparse

from pokdeng_service.store.vault import SeedVault

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
    vault_key_file: str = ""  # empty: beside the SQLite file, or ./pokdeng-vault.key

    def __post_init__(self) -> None:
        if not 1 <= self.partitions <= 64:
            raise ConfigError("partitions must be 1 to 64")
        if self.kind == "postgres" and not self.postgres_url:
            raise ConfigError("a PostgreSQL store needs a URL (postgresql://user:password@host:port/dbname)")

    @classmethod
    def from_args(
        cls, db: str | None = None, postgres_url: str | None = None, memory: bool = False, partitions: int = 1
    ) -> StoreConfig:
        url = postgres_url or os.environ.get("POKDENG_POSTGRES_URL", "")
        if memory:
            return cls(kind="memory", partitions=partitions)
        if url:
            return cls(kind="postgres", postgres_url=url, partitions=partitions)
        return cls(kind="sqlite", sqlite_path=db or os.environ.get("POKDENG_DB", DEFAULT_DB), partitions=partitions)

    def env(self, partition: int = 0) -> dict[str, str]:
        """The eventsourcing settings for one partition's store."""
        if not 0 <= partition < self.partitions:
            raise ConfigError(f"no partition {partition}")
        if self.kind == "memory":
            return {"PERSISTENCE_MODULE": "eventsourcing.popo"}
        if self.kind == "sqlite":
            path = Path(self.sqlite_path)
            if partition:
                path = path.with_name(f"{path.stem}.p{partition}{path.suffix}")
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

    def vault(self) -> SeedVault:
        key = self.vault_key or os.environ.get("POKDENG_VAULT_KEY", "")
        if key:
            return SeedVault.from_hex(key)
        if self.kind == "memory":
            return SeedVault.ephemeral()
        file = self.vault_key_file or os.environ.get("POKDENG_VAULT_KEY_FILE", "")
        if not file:
            base = Path(self.sqlite_path) if self.kind == "sqlite" else Path("pokdeng")
            file = str(base.with_name(base.name + ".vault-key"))
        return SeedVault.from_file(file)

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
        "PERSISTENCE_MODULE": "eventsourcing.postgres",
        "POSTGRES_DBNAME": unquote(dbname),
        "POSTGRES_HOST": parsed.hostname or "127.0.0.1",
        "POSTGRES_PORT": str(parsed.port or 5432),
        "POSTGRES_USER": unquote(parsed.username or ""),
        "POSTGRES_PASSWORD": unquote(parsed.password or ""),
        "POSTGRES_CONNECT_TIMEOUT": "10",
        "POSTGRES_POOL_SIZE": "8",
        "POSTGRES_MAX_OVERFLOW": "8",
    }
    schema = parse_qs(parsed.query).get("schema")
    if schema:
        settings["POSTGRES_SCHEMA"] = schema[0]
    return settings
