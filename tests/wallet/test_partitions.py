"""With the platform's wallets a player plays at tables of any partition; with the store's, only in its own.

The store's wallet of a player lives in the partition of its id's shard, and a settlement is one
transaction in one store: a player whose wallet is in another partition than the table is refused
(docs/operations.md, "Partitions"). The platform's balance lives in no partition: the round's
outbox is in the table's partition, beside the round, and the same player stakes at tables of
two partitions in turn.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pokdeng_core.errors import InvalidCommand
from pokdeng_service import audit
from pokdeng_service.application.config import StoreConfig
from pokdeng_service.application.partitions import PartitionedPokdeng
from pokdeng_service.application.principal import SYSTEM
from pokdeng_service.wallet.config import WalletConfig
from pokdeng_service.wallet.outbox import load_transactions
from pokdeng_service.wallet.remote import attach, close_platform

from ..service import play
from .conftest import FUNDS, Platform

TABLES = ("asia/t1", "europe/t1")
PLAYER = "asia/alice"  # the shard of its id is asia


def _service(tmp_path: Path) -> PartitionedPokdeng:
    config = StoreConfig(kind="sqlite", sqlite_path=str(tmp_path / "pokdeng.sqlite"), partitions=2,
                         vault_key=play.VAULT_KEY)  # fmt: skip
    service = PartitionedPokdeng.open(config)
    assert service.partition(TABLES[0]) != service.partition(TABLES[1])
    return service


def _open_tables(service: PartitionedPokdeng) -> None:
    from pokdeng_service.application.commands import OpenTable, TakeSeat

    for table in TABLES:
        service.handle(SYSTEM, f"open-{table}", OpenTable(table, "kingmaker", min_stake=100, max_stake=1000))
        service.handle(SYSTEM, f"seat-{table}", TakeSeat(table, PLAYER, 1))


def _play(service: PartitionedPokdeng, table: str, n: int) -> str:
    from pokdeng_service.application.commands import StartRound
    from pokdeng_service.application.round_commands import Deal, PlaceBet, TimeOutTurn

    round_id = service.handle(SYSTEM, f"start-{table}-{n}", StartRound(table)).id
    service.handle(SYSTEM, f"bet-{round_id}", PlaceBet(round_id, 1, PLAYER, 500))
    service.handle(SYSTEM, f"deal-{round_id}", Deal(round_id))
    app = service.app_for(round_id, "round")
    for k in range(50):
        if app.round_state(round_id).is_closed:
            return round_id
        service.handle(SYSTEM, f"auto-{round_id}-{k}", TimeOutTurn(round_id))
    raise AssertionError(f"{round_id} did not close")


def test_the_platform_s_player_plays_at_tables_of_every_partition(platform: Platform, tmp_path: Path) -> None:
    platform.fund(PLAYER)
    service = _service(tmp_path)
    try:
        attach(service.apps, WalletConfig("remote", platform.url, timeout=0.5), recovery=False)
        _open_tables(service)
        rounds = [_play(service, table, n) for n in range(3) for table in TABLES]
        nets = 0
        for round_id in rounds:
            app = service.app_for(round_id, "round")
            txs = load_transactions(app, round_id)
            assert txs is not None and not txs.pending()
            settled = [e.data for e in app.get_round(round_id).events if e.kind == "round_settled"]
            nets += sum(net for data in settled for _player, _reserved, net in data["wallets"])
        assert platform.ledger.balance_of(PLAYER) == FUNDS + nets
        for k, app in enumerate(service.apps):  # (each store is the partition its layout records)
            verdicts = audit.verify_store(app, partition=k, partitions=len(service.apps))
            assert all(v.ok for v in verdicts), [v.render() for v in verdicts if not v.ok]
    finally:
        close_platform(service.apps)
        service.close()


def test_the_store_s_wallet_is_bound_to_its_partition(tmp_path: Path) -> None:
    from pokdeng_service.application.commands import Deposit, OpenWallet, StartRound
    from pokdeng_service.application.round_commands import PlaceBet

    service = _service(tmp_path)
    try:
        service.handle(SYSTEM, "open-wallet", OpenWallet(PLAYER))
        service.handle(SYSTEM, "deposit", Deposit(PLAYER, FUNDS))
        _open_tables(service)
        at_home = service.handle(SYSTEM, "start-home", StartRound(TABLES[0])).id
        service.handle(SYSTEM, "bet-home", PlaceBet(at_home, 1, PLAYER, 500))
        abroad = service.handle(SYSTEM, "start-abroad", StartRound(TABLES[1])).id
        with pytest.raises(InvalidCommand, match="another partition"):
            service.handle(SYSTEM, "bet-abroad", PlaceBet(abroad, 1, PLAYER, 500))
    finally:
        service.close()
