"""Where events are stored, and the vault key: one place that turns settings into an application.

* ``sqlite`` (the embedded default): one database file; partition ``k > 0`` uses
  ``<stem>.p<k><suffix>`` beside it.
* ``postgres``: a URL ``postgresql://user:password@host:port/dbname``; partition ``k``
  uses the schema ``pokdeng_p<k>`` (partition 0: ``public``, or the URL's
  ``?schema=`` option), each with its own events table, so writes to different
  partitions never wait on one table lock (see docs/operations.md). A *partition map*
  (``partition_urls``: ``--partition-url K=URL``, ``POKDENG_PARTITION_URLS``) gives each
  partition its own URL, so partitions may live on separate servers; the schemas stay the
  same (``pokdeng_p<k>``, unless partition k's URL names one), whatever the server.
  A URL may name several hosts (libpq's multi-host form,
  ``postgresql://u:pw@h1:5432,h2:5432/db?target_session_attrs=read-write``): a session
  goes to the first that answers and is writable, which is how a service follows a failover.
* ``memory``: eventsourcing's in-memory recorder, for tests and demos.

The signing keys of signed tree heads (docs/checkpoints.md) are configured like the vault key
and never stored in the database: ``POKDENG_SIGNING_KEY`` (64 hex digits, the current key),
else a key file of ``pokdeng keys new`` (``POKDENG_SIGNING_KEY_FILE``, default
``<db>.signing-keys`` beside the SQLite file). Unlike the vault key it is never created
implicitly: without one, ``SignTreeHead`` is refused.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs, unquote, urlsplit

from pokdeng_service.store.signing import KeyRing, SigningKey
from pokdeng_service.store.vault import DeferredVault, SeedVault

StoreKind = Literal["sqlite", "postgres", "memory"]
DEFAULT_DB = "pokdeng.sqlite"
PARTITION_URLS_ENV = "POKDENG_PARTITION_URLS"
# libpq's target_session_attrs (PostgreSQL 14+ clients): which of a multi-host URL's servers a session may use
SESSION_ATTRS = ("any", "read-write", "read-only", "primary", "standby", "prefer-standby")


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
    partition_urls: tuple[str, ...] = ()  # PostgreSQL: partition k's URL (empty: postgres_url for every partition)

    def __post_init__(self) -> None:
        if not 1 <= self.partitions <= 64:
            raise ConfigError("partitions must be 1 to 64")
        if self.kind == "postgres" and not (self.postgres_url or self.partition_urls):
            raise ConfigError("a PostgreSQL store needs a URL (postgresql://user:password@host:port/dbname)")
        if self.partition_urls:
            self._check_partition_map()

    def _check_partition_map(self) -> None:
        """A map names every partition once, each with a store of its own (``ConfigError`` otherwise)."""
        if self.kind != "postgres":
            raise ConfigError("a URL per partition (--partition-url) is for PostgreSQL stores")
        if self.postgres_url:
            raise ConfigError(_BOTH)
        if len(self.partition_urls) != self.partitions:
            raise ConfigError(
                f"the partition map names {len(self.partition_urls)} partitions, the deployment has "
                f"{self.partitions}: name every partition 0 to {self.partitions - 1} once"
            )
        stores: dict[tuple[str, ...], int] = {}
        for k in range(self.partitions):
            place = store_place(self.env(k))
            if place in stores:
                raise ConfigError(
                    f"partitions {stores[place]} and {k} would share one store ({_place_text(place)}): give each "
                    "partition its own database or schema (?schema=)"
                )
            stores[place] = k

    @classmethod
    def from_args(
        cls,
        db: str | None = None,
        postgres_url: str | None = None,
        memory: bool = False,
        partitions: int = 1,
        vault_key_file: str | None = None,
        partition_urls: str | Sequence[str] | None = None,
    ) -> StoreConfig:
        """From the CLI's options and the environment. ``partition_urls``: the partition map (``K=URL`` items,
        or JSON: ``parse_partition_urls``), else ``POKDENG_PARTITION_URLS``; with a map, ``partitions`` may be
        left at 1 (the map says how many), and no single URL may be given besides."""
        url = postgres_url or os.environ.get("POKDENG_POSTGRES_URL", "")
        key_file = vault_key_file or ""
        if memory:
            return cls(kind="memory", partitions=partitions)
        given = partition_urls if partition_urls else os.environ.get(PARTITION_URLS_ENV, "")
        urls = parse_partition_urls(given)
        if urls:
            if url:
                raise ConfigError(_BOTH)
            ordered = _complete_map(urls, partitions if partitions != 1 else max(urls) + 1)
            if len(set(ordered)) == 1:  # one URL for all: the layout of --postgres-url
                return cls(kind="postgres", postgres_url=ordered[0], partitions=len(ordered), vault_key_file=key_file)
            return cls(kind="postgres", partition_urls=ordered, partitions=len(ordered), vault_key_file=key_file)
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
        if self.partition_urls:  # partition k's own URL; its schema as with one URL, unless the URL names one
            settings = postgres_settings(self.partition_urls[partition])
            if partition and "POSTGRES_SCHEMA" not in settings:
                settings["POSTGRES_SCHEMA"] = f"pokdeng_p{partition}"
            return settings
        settings = postgres_settings(self.postgres_url)
        if partition:
            settings["POSTGRES_SCHEMA"] = f"pokdeng_p{partition}"
        return settings

    def postgres_stores(self) -> list[tuple[int, dict[str, str], list[str]]]:
        """A PostgreSQL deployment's databases, in partition order: (the first partition there, its settings, the
        schemas of the partitions there, or none when one of them is the database's default schema: the whole
        database), what ``pokdeng backup`` dumps and ``restore`` restores, one file per database."""
        groups: dict[tuple[str, ...], list[int]] = {}
        for k in range(self.partitions):
            groups.setdefault(store_place(self.env(k))[:3], []).append(k)
        stores = []
        for members in groups.values():
            envs = [self.env(k) for k in members]
            schemas = [e["POSTGRES_SCHEMA"] for e in envs] if all("POSTGRES_SCHEMA" in e for e in envs) else []
            stores.append((members[0], envs[0], schemas))
        return stores

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
        if self.partition_urls:
            return "PostgreSQL partitions " + ", ".join(
                f"{k}: {_place_text(store_place(self.env(k)))}" for k in range(self.partitions)
            )
        return f"PostgreSQL {_place_text(store_place(self.env(0)))}" + (
            f" (+{self.partitions - 1} partitions)" if self.partitions > 1 else ""
        )


_BOTH = (
    "give either one PostgreSQL URL for every partition (--postgres-url, POKDENG_POSTGRES_URL) or a URL per "
    "partition (--partition-url K=URL, POKDENG_PARTITION_URLS), not both"
)


def parse_partition_urls(given: str | Sequence[str] | None) -> dict[int, str]:
    """The partition map: partition number -> PostgreSQL URL, each partition named at most once.

    ``given``: ``--partition-url`` values (``K=URL`` each), or one text: a JSON object ``{"0": URL, "1": URL}``,
    a JSON array of URLs in partition order, or ``K=URL`` items separated by white space (the form of
    ``POKDENG_PARTITION_URLS`` in an environment file). Nothing given: an empty map."""
    if not given:
        return {}
    if not isinstance(given, str):
        return _numbered([_item(entry) for entry in given])
    text = given.strip()
    if not text:
        return {}
    if text[0] in "{[":
        try:
            loaded: Any = json.loads(text, object_pairs_hook=list)
        except ValueError as error:
            raise ConfigError(f"the partition map is not valid JSON: {error}") from None
        if text[0] == "[" and isinstance(loaded, list) and all(isinstance(u, str) for u in loaded):
            return _numbered([(str(k), u) for k, u in enumerate(loaded)])
        if text[0] == "{" and isinstance(loaded, list) and all(isinstance(p[1], str) for p in loaded):
            return _numbered([(str(k), u) for k, u in loaded])
        raise ConfigError('the partition map must map partition numbers to URLs: {"0": "postgresql://...", ...}')
    return _numbered([_item(entry) for entry in text.split()])


def _item(entry: str) -> tuple[str, str]:
    key, sep, url = entry.strip().partition("=")
    if not sep:
        raise ConfigError(f"a partition's URL is K=URL (0=postgresql://...), not {_redacted(entry)!r}")
    return key, url


def _numbered(items: list[tuple[str, str]]) -> dict[int, str]:
    urls: dict[int, str] = {}
    for key, url in items:
        if not key.strip().isdecimal():
            raise ConfigError(f"the partition map names {key!r}: partitions are numbered 0, 1, ...")
        k = int(key)
        if k in urls:
            raise ConfigError(f"the partition map names partition {k} twice")
        if not url.strip():
            raise ConfigError(f"the partition map gives partition {k} no URL")
        urls[k] = url.strip()
    return urls


def _complete_map(urls: dict[int, str], partitions: int) -> tuple[str, ...]:
    """The URLs of partitions 0..N-1 in order (``ConfigError`` if one is missing or out of range)."""
    extra = sorted(k for k in urls if k >= partitions)
    if extra:
        raise ConfigError(f"the partition map names partition {extra[0]}, the deployment has {partitions} (0 to "
                          f"{partitions - 1})")  # fmt: skip
    missing = [k for k in range(partitions) if k not in urls]
    if missing:
        raise ConfigError(f"the partition map gives partition {missing[0]} no URL: name every partition 0 to "
                          f"{partitions - 1} once")  # fmt: skip
    return tuple(urls[k] for k in range(partitions))


def store_place(settings: dict[str, str]) -> tuple[str, str, str, str]:
    """(hosts, ports, database, schema) of a partition's PostgreSQL settings: which store it is."""
    return (
        settings["POSTGRES_HOST"],
        settings["POSTGRES_PORT"],
        settings["POSTGRES_DBNAME"],
        settings.get("POSTGRES_SCHEMA") or "public",
    )


def _place_text(place: tuple[str, ...]) -> str:
    hosts, ports = place[0].split(","), place[1].split(",")
    where = ",".join(f"{h}:{ports[i] if i < len(ports) else ports[0]}" for i, h in enumerate(hosts))
    schema = f" (schema {place[3]})" if len(place) > 3 and place[3] != "public" else ""
    return f"{where}/{place[2]}{schema}"


def _redacted(text: str) -> str:
    """A URL-ish text without its password, for messages."""
    head, at, tail = text.rpartition("@")
    if not at:
        return text
    scheme, sep, credentials = head.rpartition("//")
    user = credentials.split(":", 1)[0]
    return f"{scheme}{sep}{user}:***@{tail}"


def _hosts(netloc: str, url: str) -> tuple[str, str]:
    """libpq's ``host`` and ``port`` lists (comma separated) from a URL's ``host[:port],host[:port]`` part."""
    hosts, ports = [], []
    for part in netloc.split(","):
        part = part.strip()
        if part.startswith("["):  # an IPv6 address: [::1]:5432
            host, _, rest = part[1:].partition("]")
            port = rest.removeprefix(":")
        else:
            host, _, port = part.partition(":")
        if port and not port.isdecimal():
            raise ConfigError(f"bad port {port!r} in the PostgreSQL URL {_redacted(url)!r}")
        hosts.append(unquote(host) or "127.0.0.1")
        ports.append(port or "5432")
    return ",".join(hosts), ",".join(ports)


def postgres_settings(url: str) -> dict[str, str]:
    """eventsourcing's POSTGRES_* settings from a ``postgresql://`` URL.

    Several hosts (``h1:5432,h2:5433``) become libpq's host and port lists; ``?target_session_attrs=`` (one
    of ``SESSION_ATTRS``, e.g. ``read-write``: only the writable one) goes to every session
    (``store.bounded``); ``?schema=`` is partition 0's schema."""
    parsed = urlsplit(url)
    if parsed.scheme not in ("postgresql", "postgres"):
        raise ConfigError(f"not a PostgreSQL URL: {_redacted(url)!r}")
    dbname = parsed.path.lstrip("/")
    if not dbname:
        raise ConfigError("the PostgreSQL URL names no database")
    credentials, _, netloc = parsed.netloc.rpartition("@")
    user, _, password = credentials.partition(":")
    host, port = _hosts(netloc, url)
    settings = {
        # the library's factory with connect, keepalive and statement timeouts (store/bounded.py)
        "PERSISTENCE_MODULE": "pokdeng_service.store.bounded:BoundedPostgresFactory",
        "POSTGRES_DBNAME": unquote(dbname),
        "POSTGRES_HOST": host,
        "POSTGRES_PORT": port,
        "POSTGRES_USER": unquote(user),
        "POSTGRES_PASSWORD": unquote(password),
        # every wait is bounded, so that a call fails fast (UNAVAILABLE) when the store is gone:
        # a pooled connection within 2 s, a statement within 5 s, a session idle in a transaction 5 s
        # (each can be overridden with POKDENG_<KEY> in the environment, docs/operations.md)
        "POSTGRES_CONNECT_TIMEOUT": "2",
        "POSTGRES_STATEMENT_TIMEOUT": "5",
        "POSTGRES_IDLE_IN_TRANSACTION_SESSION_TIMEOUT": "5",
        "POSTGRES_POOL_SIZE": "8",
        "POSTGRES_MAX_OVERFLOW": "8",
    }
    query = parse_qs(parsed.query)
    schema = query.get("schema")
    if schema:
        settings["POSTGRES_SCHEMA"] = schema[0]
    attrs = query.get("target_session_attrs")
    if attrs:
        if attrs[0] not in SESSION_ATTRS:
            raise ConfigError(f"target_session_attrs must be one of {', '.join(SESSION_ATTRS)}, not {attrs[0]!r}")
        settings["POSTGRES_TARGET_SESSION_ATTRS"] = attrs[0]
    return settings
