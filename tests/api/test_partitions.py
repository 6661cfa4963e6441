"""Every command reaches the partition of its stream over gRPC: a server with ``--partitions 2``
checkpoints tables in both partitions (CheckpointTable once failed with INTERNAL: a route table
of method names had no entry for it), on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_service.application.commands import COMMANDS, CheckpointTable, OpenWallet, OpenWalletSession
from pokdeng_service.application.config import StoreConfig
from pokdeng_service.application.partitions import PartitionedPokdeng
from pokdeng_service.application.principal import SYSTEM
from pokdeng_service.application.round_commands import PlaceBet
from pokdeng_testkit.keys import VAULT_KEY
from pokdeng_testkit.pgserver import PostgresServerInfo

from .client import bet, open_table, open_wallets, start_round
from .conftest import StartServer


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def two_partitions(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[PartitionedPokdeng]:
    if request.param == "sqlite":
        config = StoreConfig(kind="sqlite", sqlite_path=str(tmp_path / "p.sqlite"), partitions=2, vault_key=VAULT_KEY)
    else:
        info: PostgresServerInfo = request.getfixturevalue("postgres_database")
        config = StoreConfig(kind="postgres", postgres_url=info.url, partitions=2, vault_key=VAULT_KEY)
    service = PartitionedPokdeng.open(config)
    try:
        yield service
    finally:
        service.close()


def test_every_table_command_reaches_its_partition(
    two_partitions: PartitionedPokdeng, start_server: StartServer
) -> None:
    service = two_partitions
    served = start_server(service)
    ops = served.api("operator")
    tables = {"t0": "alice", "asia/t": "asia/alice"}
    assert {service.partition(t) for t in tables} == {0, 1}
    for table, player in tables.items():
        open_wallets(ops, [player])
        open_table(ops, table, pb.PROFILE_ANTE, min_stake=100, max_stake=1000, seats=0)
        round_id = start_round(ops, table).round_id
        bet(ops, round_id, 1, player, 200)
        ops.cmd("RoundService", "Deal", pb.DealRequest(round_id=round_id))
        assert ops.round(round_id).phase == pb.ROUND_PHASE_CLOSED
        checkpointed = ops.cmd(
            "TableService", "CheckpointTable", pb.CheckpointTableRequest(table_id=table, period="p1")
        )
        assert checkpointed.table.table_id == table
        proof = ops.get("AuditService", "GetInclusionProof", pb.GetInclusionProofRequest(round_id=round_id))
        assert (proof.table_id, proof.size, proof.index) == (table, 1, 0)
        owner = service.apps[service.partition(table)]
        assert owner.get_table(table).version == checkpointed.table.version
    served.stop()


def test_the_router_takes_the_partition_from_the_command_itself(two_partitions: PartitionedPokdeng) -> None:
    """No table of method names: every command type names its stream, and the router reads it."""
    service = two_partitions
    for command_type in COMMANDS:
        assert command_type.stream in ("wallet", "table", "round", "log", "session"), command_type
    assert COMMANDS[0] is OpenWallet
    service.handle(SYSTEM, "w0", OpenWallet("asia/bob"))
    assert service.apps[service.partition("asia/bob", "wallet")].get_wallet("asia/bob").balance == 0
    service.handle(SYSTEM, "s0", OpenWalletSession("asia/bob", "a-session-token"))  # (the player's partition, too)
    assert service.apps[service.partition("asia/bob", "wallet")].load_sessions("asia/bob") is not None
    with pytest.raises(Exception, match="another partition"):
        service.handle(SYSTEM, "b0", PlaceBet("asia/t#1", 1, "zed", 100))
    with pytest.raises(Exception, match="not found"):
        service.handle(SYSTEM, "c0", CheckpointTable("asia/none"))
