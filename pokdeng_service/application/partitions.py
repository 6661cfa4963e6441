"""Tables spread over several event stores (partitions) when one store's write rate is not enough.

One PostgreSQL events table serialises its writers (about 1 ms a commit, see
BASELINES.md), so a deployment scales writes by giving groups of tables their own
store. A partition is chosen by the *shard* of an id: the text before the first
``/`` (``asia/t1`` and ``asia/alice`` share the shard ``asia``). Ids with no shard
live in partition 0. A round, its table and every wallet that bets on it must share
a partition, because a settlement is one atomic transaction in one store; the
operator names tables and wallets of one lobby with the same shard.

The mapping is stable: ``crc32(shard) % partitions``; changing the number of
partitions of a running deployment needs a migration (docs/operations.md).
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Callable
from typing import Any

from pokdeng_core.errors import InvalidCommand
from pokdeng_service.application.app import PokdengApp
from pokdeng_service.application.config import StoreConfig


def shard_of(identifier: str) -> str:
    return identifier.split("/", 1)[0] if "/" in identifier else ""


def partition_of(identifier: str, partitions: int) -> int:
    shard = shard_of(identifier)
    if not shard or partitions == 1:
        return 0
    return zlib.crc32(shard.encode()) % partitions


def table_of_round(round_id: str) -> str:
    return round_id.rsplit("#", 1)[0]


# method name -> (argument name, position among the positional arguments, kind of id)
_ROUTES: dict[str, tuple[str, int, str]] = {}
for _name in ("open_wallet", "deposit", "withdraw"):
    _ROUTES[_name] = ("wallet_id", 1, "wallet")
for _name in ("get_wallet", "wallet_statement"):
    _ROUTES[_name] = ("wallet_id", 0, "wallet")
for _name in (
    "open_table",
    "take_seat",
    "leave_seat",
    "bid_for_banker",
    "close_banker_bid",
    "disconnect_banker",
    "start_round",
):
    _ROUTES[_name] = ("table_id", 1, "table")
_ROUTES["get_table"] = ("table_id", 0, "table")
for _name in (
    "place_bet",
    "deal",
    "place_side_bet",
    "close_side_bets",
    "draw",
    "stay",
    "banker_reveal",
    "banker_draw",
    "banker_stay",
    "time_out_turn",
    "void_round",
):
    _ROUTES[_name] = ("round_id", 1, "round")
for _name in (
    "round_state",
    "get_round",
    "round_events",
    "legal_commands",
    "verify_round",
    "replay_round",
    "export_bundle",
    "inclusion_proof",
):
    _ROUTES[_name] = ("round_id", 0, "round")


class PartitionedPokdeng:
    """The application's commands and queries, routed to the partition that holds each id."""

    def __init__(self, apps: list[PokdengApp]) -> None:
        if not apps:
            raise ValueError("at least one partition")
        self.apps = apps

    @classmethod
    def open(cls, config: StoreConfig) -> PartitionedPokdeng:
        vault = config.vault()
        apps = []
        for k in range(config.partitions):
            env = config.env(k)
            if config.kind == "postgres" and k:
                _ensure_schema(env)
            apps.append(PokdengApp(env, vault=vault))
        return cls(apps)

    def partition(self, identifier: str, kind: str = "table") -> int:
        key = table_of_round(identifier) if kind == "round" else identifier
        return partition_of(key, len(self.apps))

    def app_for(self, identifier: str, kind: str = "table") -> PokdengApp:
        return self.apps[self.partition(identifier, kind)]

    def __getattr__(self, name: str) -> Callable[..., Any]:
        route = _ROUTES.get(name)
        if route is None:
            if len(self.apps) == 1:
                return getattr(self.apps[0], name)  # type: ignore[no-any-return]
            raise AttributeError(name)
        arg, index, kind = route

        def call(*args: Any, **kwargs: Any) -> Any:
            identifier = kwargs[arg] if arg in kwargs else args[index]
            app = self.app_for(identifier, kind)
            if name in ("place_bet", "place_side_bet"):
                player = kwargs.get("player", args[3] if len(args) > 3 else "")
                if player and self.partition(player, "wallet") != self.partition(identifier, "round"):
                    raise InvalidCommand(
                        f"wallet {player!r} lives in another partition than round {identifier!r}: "
                        "give tables and wallets of one lobby the same shard prefix",
                        field="player",
                    )
            return getattr(app, name)(*args, **kwargs)

        return call

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
    wallet's). With neither named, every partition's last rounds are merged by closing time."""

    def __init__(self, service: PartitionedPokdeng, config: StoreConfig) -> None:
        from pokdeng_service.readmodels.models import ReadModels

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


def _ensure_schema(env: dict[str, str]) -> None:
    import psycopg

    with psycopg.connect(
        dbname=env["POSTGRES_DBNAME"],
        host=env["POSTGRES_HOST"],
        port=int(env["POSTGRES_PORT"]),
        user=env["POSTGRES_USER"],
        password=env["POSTGRES_PASSWORD"],
        autocommit=True,
    ) as conn:
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{env["POSTGRES_SCHEMA"]}"')
