"""The adapter switch through real ``pokdeng serve`` processes and the reference platform wallet (gRPC).

A round is opened on ``--wallet remote`` and alice and bob are each debited 5000 on the platform
(their store wallets exist too, opened with ``OpenWallet``). Then:

1. ``pokdeng wallet pending`` lists the two held debits and exits 1;
2. ``pokdeng serve --wallet internal`` (the default: a restart that lost ``POKDENG_WALLET``) refuses to
   start, naming the round and how to finish it;
3. with ``--wallet-allow-unfinished`` it starts, and every command that would settle or void the
   round is refused: FAILED_PRECONDITION ``WALLET_ADAPTER_MISMATCH``; the store's wallets are untouched;
4. back on ``--wallet remote`` the round plays out: the platform credits each player its reservation
   and net, nothing is pending (exit 0), ``reconcile`` finds no difference, ``verify --all`` passes.
"""

from __future__ import annotations

import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf.duration_pb2 import Duration

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_client.v1 import pokdeng_pb2_grpc as pb_grpc
from pokdeng_service.api.errors import details_of
from pokdeng_service.cli.main import main
from pokdeng_testkit.harness.server import FAST_RECONNECT, ServerError, ServerProcess, Store, child_env
from pokdeng_testkit.harness.tokens import Tokens

from .platform_server import Ledger, serve_grpc
from .soak import WalletServer

FUNDS = 1_000_000
PAIR = ("alice", "bob")


class Ops:
    """The operator's calls to one server."""

    def __init__(self, target: str, token: str) -> None:
        self.channel = grpc.insecure_channel(target, options=FAST_RECONNECT)
        self.metadata = (("authorization", f"Bearer {token}"),)
        self.stubs = {
            name: getattr(pb_grpc, f"{name}Stub")(self.channel)
            for name in ("TableService", "RoundService", "WalletService")
        }

    def __call__(self, service: str, method: str, **fields: Any) -> Any:
        descriptor = pb.DESCRIPTOR.services_by_name[service].methods_by_name[method]
        request = getattr(pb, descriptor.input_type.name)(**fields)
        return getattr(self.stubs[service], method)(request, metadata=self.metadata, timeout=10.0)

    def round(self, round_id: str) -> Any:
        return self("RoundService", "GetRound", round_id=round_id).round

    def step(self, round_id: str, tag: str) -> Any:
        """The round's next move: the deal in betting, else the automatic action of whoever is to act."""
        round_ = self.round(round_id)
        if round_.phase == pb.ROUND_PHASE_BETTING:
            return self("RoundService", "Deal", round_id=round_id, request_id=f"{tag}:deal")
        return self("RoundService", "TimeOutTurn", round_id=round_id, expected_version=round_.version,
                    request_id=f"{tag}:auto:{round_.version}")  # fmt: skip

    def close(self) -> None:
        self.channel.close()


def _refused(call: Any) -> Any:
    with pytest.raises(grpc.RpcError) as refused:
        call()
    details = details_of(refused.value)
    assert details.code == grpc.StatusCode.FAILED_PRECONDITION and details.reason == "WALLET_ADAPTER_MISMATCH", details
    return details


def _unfinished(store: Store) -> int:
    from pokdeng_service.application.partitions import PartitionedPokdeng
    from pokdeng_service.wallet.reconcile import recorded_rounds, unfinished

    service = PartitionedPokdeng.open_read_only(store.config())
    try:
        return len(unfinished(recorded_rounds(service.apps)))
    finally:
        service.close()


def test_a_served_switch_with_a_round_open_loses_no_platform_money(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = Ledger(tmp_path / "platform-ledger.sqlite")
    for player in PAIR:
        ledger.open_player(player, FUNDS)
    platform, port = serve_grpc(ledger, [])
    store = Store.sqlite(tmp_path / "pokdeng.sqlite")
    tokens = Tokens()
    tokens_file = tokens.write(tmp_path / "tokens.json")
    remote = WalletServer(store, tokens_file, tmp_path / "remote.log")
    remote.wallet_url = f"127.0.0.1:{port}"
    internal = ServerProcess(store, tokens_file, tmp_path / "internal.log", name="internal server")
    since = datetime.now(tz=UTC) - timedelta(seconds=1)
    try:
        # the round, on the platform's wallets
        remote.start(timeout=60)
        ops = Ops(remote.target, tokens.operator)
        ops("TableService", "OpenTable", request_id="open", table_id="t1", profile=pb.PROFILE_CLASSIC,
            min_stake=100, max_stake=1000, seats=5, turn_timeout=Duration(seconds=3600))  # fmt: skip
        for seat, player in enumerate(PAIR, 1):
            ops("TableService", "TakeSeat", request_id=f"seat-{seat}", table_id="t1", player=player, seat=seat)
            ops("WalletService", "OpenWallet", request_id=f"wallet-{player}", wallet_id=player, currency_code="THB")
            ops("WalletService", "Deposit", request_id=f"deposit-{player}", wallet_id=player, amount=100_000)
        round_id = ops("RoundService", "StartRound", request_id="start", table_id="t1").round.round_id
        for seat, player in enumerate(PAIR, 1):
            ops("RoundService", "PlaceBet", request_id=f"bet-{seat}", round_id=round_id, seat=seat, player=player,
                stake=1000)  # fmt: skip
        assert ledger.balances() == {p: FUNDS - 5000 for p in PAIR}
        ops.close()
        remote.stop()
        capsys.readouterr()
        assert main(["wallet", "pending", *store.serve_args()]) == 1
        assert "2 debits held by 1 open rounds" in capsys.readouterr().out

        # the restart on the internal wallets is refused, naming the round and how to finish it
        with pytest.raises(ServerError) as refused:
            internal.start(timeout=60)
        assert f"round {round_id}: open, debits held: alice 5000, bob 5000" in str(refused.value)
        assert "--wallet remote" in str(refused.value)

        # started anyway: nothing settles or voids the round on the store's wallets
        internal.extra_args = ("--wallet-allow-unfinished",)
        internal.start(timeout=60)
        ops = Ops(internal.target, tokens.operator)
        _refused(lambda: ops("RoundService", "VoidRound", request_id="void", round_id=round_id, reason="switch"))
        for _ in range(20):
            try:
                ops.step(round_id, "internal")
            except grpc.RpcError:
                break
        details = _refused(lambda: ops.step(round_id, "internal"))
        assert round_id in details.message and "--wallet remote" in details.message
        assert ops.round(round_id).phase != pb.ROUND_PHASE_CLOSED
        for player in PAIR:
            wallet = ops("WalletService", "GetWallet", wallet_id=player).wallet
            assert (wallet.balance, wallet.reserved) == (100_000, 0)
        assert ledger.balances() == {p: FUNDS - 5000 for p in PAIR}
        ops.close()
        internal.stop()

        # back on the platform's wallets: the round is finished there
        remote.start(timeout=60)
        ops = Ops(remote.target, tokens.operator)
        for _ in range(20):
            if ops.round(round_id).phase == pb.ROUND_PHASE_CLOSED:
                break
            ops.step(round_id, "remote")
        round_ = ops.round(round_id)
        assert round_.phase == pb.ROUND_PHASE_CLOSED and round_.outcome == pb.ROUND_OUTCOME_SETTLED
        nets = {r.player: r.net for r in round_.results}
        ops.close()
        deadline = time.monotonic() + 30
        while _unfinished(store) and time.monotonic() < deadline:
            time.sleep(0.2)
        remote.stop()
        assert ledger.balances() == {p: FUNDS + nets[p] for p in PAIR}
        capsys.readouterr()
        assert main(["wallet", "pending", *store.serve_args()]) == 0
        until = datetime.now(tz=UTC) + timedelta(seconds=1)
        reconciled = ["wallet", "reconcile", *store.serve_args(), "--wallet-url", f"127.0.0.1:{port}",
                      "--since", since.isoformat(), "--until", until.isoformat()]  # fmt: skip
        assert main(reconciled) == 0, capsys.readouterr().out
        assert "0 differences, 0 pending, 0 held by open rounds" in capsys.readouterr().out
        verify = subprocess.run(
            [sys.executable, "-m", "pokdeng_service.cli", "verify", "--all", "--quiet", *store.serve_args()],
            capture_output=True, text=True, timeout=120, env=child_env(), cwd=str(tmp_path),
        )  # fmt: skip
        assert verify.returncode == 0, verify.stdout + verify.stderr
    finally:
        remote.close()
        internal.close()
        platform.stop(0).wait(5)
        ledger.close()
