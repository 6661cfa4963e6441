"""Ids that are look-alikes of others are refused where they are made (docs/rules.md, "Ids")."""

from __future__ import annotations

from pathlib import Path

import grpc

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_service.api.errors import details_of

from .client import error_of, open_table, open_wallets
from .conftest import StartServer, make_app, sqlite_env


def test_a_new_wallet_or_table_id_may_not_begin_or_end_with_a_space(tmp_path: Path, start_server: StartServer) -> None:
    """Found from the outside: ``"ann "`` opened beside ``"ann"``, a look-alike of another player."""
    app = make_app(sqlite_env(tmp_path))
    served = start_server(app)
    try:
        ops = served.api("operator")
        open_wallets(ops, ["ann"])
        for wallet_id in ("ann ", " ann", "a  b "):
            request = pb.OpenWalletRequest(wallet_id=wallet_id)
            refused = details_of(error_of(lambda r=request: ops.cmd("WalletService", "OpenWallet", r)))
            assert refused.code == grpc.StatusCode.INVALID_ARGUMENT, refused
            assert [v.field for v in refused.field_violations] == ["wallet_id"], refused
        refused = details_of(error_of(lambda: open_table(ops, " t", pb.PROFILE_CLASSIC, seats=2)))
        assert [v.field for v in refused.field_violations] == ["table_id"], refused
        ops.cmd("WalletService", "OpenWallet", pb.OpenWalletRequest(wallet_id="a b"))  # a space inside is fine
    finally:
        served.stop()
        app.close()


def test_a_new_table_id_may_not_hold_the_round_ids_hash_or_a_chain_prefixs_colon(
    tmp_path: Path, start_server: StartServer
) -> None:
    """Found from the outside: table ``qi1#1`` opened beside table ``qi1`` (whose first round is ``qi1#1``),
    and the round ``table:zzh1#1`` of table ``table:zzh1`` started its chain from the same text as table
    ``zzh1#1`` (a table's genesis is ``table:<id>``, a round's its id)."""
    app = make_app(sqlite_env(tmp_path))
    served = start_server(app)
    try:
        ops = served.api("operator")
        open_table(ops, "qi1", pb.PROFILE_CLASSIC, seats=2)
        for table_id in ("qi1#1", "table:zzh1", "zzh1#1", "wallet:ann", "#", ":"):
            refused = details_of(error_of(lambda t=table_id: open_table(ops, t, pb.PROFILE_CLASSIC, seats=2)))
            assert refused.code == grpc.StatusCode.INVALID_ARGUMENT, (table_id, refused)
            assert [v.field for v in refused.field_violations] == ["table_id"], refused
        open_table(ops, "zone/7-a_b.c", pb.PROFILE_CLASSIC, seats=2)  # a shard's slash and the rest are fine
    finally:
        served.stop()
        app.close()
