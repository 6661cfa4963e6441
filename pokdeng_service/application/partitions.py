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
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pokdeng_core import limits
from pokdeng_core.errors import InvalidCommand
from pokdeng_service.application.app import PokdengApp
from pokdeng_service.application.commands import Command
from pokdeng_service.application.config import StoreConfig
from pokdeng_service.application.principal import Principal
from pokdeng_service.application.views import CommandResult

if TYPE_CHECKING:  # the read models are imported where they are used (they import the application's views)
    from pokdeng_service.readmodels import RoundsPage, RoundSummary, TableSummary, WalletBalance


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
        apps = []
        for k in range(config.partitions):
            env = config.env(k)
            if config.kind == "postgres" and k:
                _ensure_schema(env)
            apps.append(PokdengApp(env, vault=vault, signing_keys=signing_keys))
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
        except BaseException:
            for app in apps:
                with contextlib.suppress(Exception):
                    app.close()
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


class PartitionedReadModels:
    """One ``readmodels.ReadModels`` per partition, each following its own store; recall is
    routed like the commands (a table's rounds by the table's shard, a player's by its
    wallet's). With neither named, every partition's last rounds are merged by closing time.

    The list queries have ``ReadModels``' signatures and answers (``readmodels.paging`` says how
    paging works): ``list_tables``/``list_wallets`` merge every partition by id (the same
    ``after`` pages them); ``page_rounds`` pages rounds with a cursor of one position per
    partition, merged newest first by closing time; ``list_rounds`` takes ``before_position``
    only when its query goes to one partition (a table or a player named, or one partition).
    """

    def __init__(self, service: PartitionedPokdeng, config: StoreConfig) -> None:
        from pokdeng_service.readmodels import ReadModels

        self.service = service
        self.models = [ReadModels(config.env(k)) for k in range(len(service.apps))]

    def run_in_background(self) -> None:
        for models, app in zip(self.models, self.service.apps, strict=True):
            models.run_in_background(app)

    def catch_up(self) -> int:
        return sum(models.catch_up(app) for models, app in zip(self.models, self.service.apps, strict=True))

    def stop(self) -> None:
        for models in self.models:
            with contextlib.suppress(Exception):
                models.stop()

    def last_rounds(self, table_id: str | None = None, player: str | None = None, limit: int = 10) -> Any:
        if table_id is not None:
            return self.models[self.service.partition(table_id, "table")].last_rounds(table_id, player, limit)
        if player is not None:
            return self.models[self.service.partition(player, "wallet")].last_rounds(table_id, player, limit)
        merged = [summary for models in self.models for summary in models.last_rounds(None, None, limit)]
        merged.sort(key=lambda summary: (summary.closed_at, summary.round_id))
        return tuple(merged[-limit:])

    def _home(self, table_id: str | None, player: str | None) -> int | None:
        """The one partition that holds a query's rounds (None: every partition)."""
        if table_id is not None:
            return self.service.partition(table_id, "table")
        if player is not None:
            return self.service.partition(player, "wallet")
        return 0 if len(self.models) == 1 else None

    def list_tables(
        self, after: str | None = None, limit: int = 100, profile: str | None = None
    ) -> tuple[TableSummary, ...]:
        """Every partition's tables by ``table_id`` ascending; next page: ``after`` = the last ``table_id``."""
        from pokdeng_service.readmodels.paging import merge_by_id

        runs = [models.list_tables(after, limit, profile) for models in self.models]
        return merge_by_id(runs, lambda table: table.table_id, limit)

    def list_wallets(self, after: str | None = None, limit: int = 100) -> tuple[WalletBalance, ...]:
        """Every partition's wallets by ``wallet_id`` ascending; next page: ``after`` = the last ``wallet_id``."""
        from pokdeng_service.readmodels.paging import merge_by_id

        runs = [models.list_wallets(after, limit) for models in self.models]
        return merge_by_id(runs, lambda wallet: wallet.wallet_id, limit)

    def list_rounds(
        self,
        table_id: str | None = None,
        player: str | None = None,
        closed_from: str | None = None,
        closed_to: str | None = None,
        outcome: str | None = None,
        before_position: int | None = None,
        limit: int = 10,
    ) -> tuple[RoundSummary, ...]:
        """``ReadModels.list_rounds`` in the partition of the table (or else the player). With neither and
        several partitions: the first page of :meth:`page_rounds`; ``before_position`` is refused there
        (positions of different logs do not compare: page with :meth:`page_rounds`' cursor)."""
        home = self._home(table_id, player)
        if home is not None:
            return self.models[home].list_rounds(
                table_id, player, closed_from, closed_to, outcome, before_position, limit
            )
        if before_position is not None:
            raise InvalidCommand(
                "before_position is a position in one partition's log: page every partition's rounds "
                "with a cursor (page_rounds)",
                field="before_position",
            )
        return self.page_rounds(None, None, closed_from, closed_to, outcome, None, limit).rounds

    def page_rounds(
        self,
        table_id: str | None = None,
        player: str | None = None,
        closed_from: str | None = None,
        closed_to: str | None = None,
        outcome: str | None = None,
        cursor: Sequence[int] | None = None,
        limit: int = 10,
    ) -> RoundsPage:
        """Closed rounds, newest first, ``ReadModels.list_rounds``' filters, and the cursor of the next page.

        ``cursor``: None for the first page, else the previous page's ``next_cursor`` unchanged (one
        log position per partition, so a page token must keep every entry), with the same filters;
        ``next_cursor`` None: no more rounds. A table's or a player's rounds come from its partition
        alone (the other entries stay as they were); otherwise every partition's newest rounds are
        merged by closing time (``closed_at``, then ``round_id``), newest first.
        """
        from pokdeng_service.readmodels.paging import RoundFilter, check_cursor, check_limit, merge_rounds

        check_limit(limit)
        query = RoundFilter.of(table_id, player, closed_from, closed_to, outcome)
        bounds = check_cursor(cursor, len(self.models))
        home = self._home(table_id, player)
        runs = [
            models.select_rounds(query, bounds[k] or None, limit + 1) if home in (None, k) else ()
            for k, models in enumerate(self.models)
        ]
        return merge_rounds(runs, bounds, limit)


def _ensure_schema(env: dict[str, str]) -> None:
    import psycopg

    from pokdeng_service.store.bounded import connect_kwargs

    with psycopg.connect(**connect_kwargs(env), autocommit=True) as conn:  # (a partition's own URL: any server)
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{env["POSTGRES_SCHEMA"]}"')
