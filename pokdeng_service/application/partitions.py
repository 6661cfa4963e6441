"""Tables spread over several event stores (partitions) when one store's write rate is not enough.

One PostgreSQL events table serialises its writers (about 1 ms per PostgreSQL commit,
measured on the project's machine; ``bench/bench_service.py`` re-measures it), so a
deployment scales writes by giving groups of tables their own store. A partition is
chosen by the *shard* of an id: the text before the first ``/`` (``asia/t1`` and
``asia/alice`` share the shard ``asia``). Ids with no shard live in partition 0. A
round, its table and every wallet that bets on it must share a partition, because a
settlement is one atomic transaction in one store; the operator names tables and
wallets of one lobby with the same shard. (That binds the store's own wallets. With the
platform's wallets, ``--wallet remote``, the balance is the platform's and a player plays
at tables of any partition: docs/wallet.md.)

The mapping is stable: ``crc32(shard) % partitions``; changing the number of
partitions of a running deployment needs a migration (docs/operations.md).
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Callable
from typing import Any

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.persistence import IntegrityError

from pokdeng_core import limits
from pokdeng_core.errors import InvalidCommand
from pokdeng_service.application.app import PokdengApp
from pokdeng_service.application.commanding import Command
from pokdeng_service.application.config import ConfigError, StoreConfig
from pokdeng_service.application.principal import Principal
from pokdeng_service.application.views import CommandResult
from pokdeng_service.store.layout import LAYOUT_UUID, StoreLayout, layout_problem


def shard_of(identifier: str) -> str:
    return identifier.split("/", 1)[0] if "/" in identifier else ""


def partition_of(identifier: str, partitions: int) -> int:
    shard = shard_of(identifier)
    if not shard or partitions == 1:
        return 0
    return zlib.crc32(shard.encode()) % partitions


def table_of_round(round_id: str) -> str:
    return round_id.rsplit("#", 1)[0]


class PartitionedPokdeng:
    """The partitions of a deployment: each command goes to the store of its stream key's shard.

    ``handle`` routes a command by ``Command.stream``/``Command.key`` (a round by its table);
    reads ask ``app_for(identifier, kind)`` for the partition that holds an id.
    """

    def __init__(self, apps: list[PokdengApp]) -> None:
        if not apps:
            raise ValueError("at least one partition")
        self.apps = apps

    @classmethod
    def open(cls, config: StoreConfig) -> PartitionedPokdeng:
        vault = config.vault()
        signing_keys = config.signing_keys()
        apps: list[PokdengApp] = []
        try:
            for k in range(config.partitions):
                env = config.env(k)
                if config.kind == "postgres" and k:
                    _ensure_schema(env)
                apps.append(PokdengApp(env, vault=vault, signing_keys=signing_keys))
                check_layout(apps[-1], k, config.partitions, record=True)
        except BaseException:
            _close_all(apps)
            raise
        return cls(apps)

    @classmethod
    def open_read_only(cls, config: StoreConfig) -> PartitionedPokdeng:
        """Every partition's existing store, for reading only (``StoreConfig.read_only_env``): nothing
        is created or changed, and the vault key is looked for only when an open round's seed is needed."""
        vault = config.audit_vault()
        apps: list[PokdengApp] = []
        try:
            for k in range(config.partitions):
                apps.append(PokdengApp(config.read_only_env(k), vault=vault))
                check_layout(apps[-1], k, config.partitions, record=False)
        except BaseException:
            _close_all(apps)
            raise
        return cls(apps)

    def partition(self, identifier: str, kind: str = "table") -> int:
        key = table_of_round(identifier) if kind == "round" else identifier
        return partition_of(key, len(self.apps))

    def app_for(self, identifier: str, kind: str = "table") -> PokdengApp:
        return self.apps[self.partition(identifier, kind)]

    def handle(self, principal: Principal, request_id: str, command: Command) -> CommandResult:
        """Run ``command`` in the partition of its stream; every wallet it names must live there too."""
        home = self.partition(command.key, command.stream)
        bound = not self.apps[home].wallet_port.remote  # the platform's balances are bound to no partition
        for wallet in command.wallets if bound else ():
            if wallet and limits.id_problem(wallet, "player") is None and self.partition(wallet, "wallet") != home:
                raise InvalidCommand(
                    f"wallet {wallet!r} lives in another partition than {command.stream} {command.key!r}: "
                    "give tables and wallets of one lobby the same shard prefix",
                    field="player",
                )
        return self.apps[home].handle(principal, request_id, command)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        """One partition: its application's methods. (Several: name the partition with ``app_for``.)"""
        if len(self.apps) == 1:
            return getattr(self.apps[0], name)  # type: ignore[no-any-return]
        raise AttributeError(name)

    def read_notifications(self, after: int = 0, limit: int = 1000, partition: int = 0) -> Any:
        return self.apps[partition].read_notifications(after, limit)

    @property
    def max_position(self) -> int:
        return self.apps[0].max_position

    def close(self) -> None:
        for app in self.apps:
            with contextlib.suppress(Exception):
                app.close()


def check_layout(app: PokdengApp, partition: int, partitions: int, *, record: bool) -> None:
    """The store's recorded layout (``store.layout``) must be the one it is given (``ConfigError``: the
    server or tool refuses to start); a store with none records it when ``record`` (a server's start)."""
    for _attempt in range(2):
        try:
            recorded: StoreLayout | None = app.repository.get(LAYOUT_UUID)
        except AggregateNotFoundError:
            recorded = None
        problem = layout_problem(recorded, partitions, partition)
        if problem is not None:
            raise ConfigError(f"partition {partition}'s store: {problem}")
        if recorded is not None or not record:
            return
        try:
            app.save(StoreLayout(partitions, partition))
            return
        except IntegrityError:  # (another server recorded it at once: read what it recorded)
            continue


def _close_all(apps: list[PokdengApp]) -> None:
    for app in apps:
        with contextlib.suppress(Exception):
            app.close()


def _ensure_schema(env: dict[str, str]) -> None:
    import psycopg

    from pokdeng_service.store.bounded import connect_kwargs

    with psycopg.connect(**connect_kwargs(env), autocommit=True) as conn:  # (a partition's own URL: any server)
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{env["POSTGRES_SCHEMA"]}"')
