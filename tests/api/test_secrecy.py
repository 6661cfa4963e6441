"""Issue 5: nothing before the reveal exposes a round's server seed — not the events, the
logs, the errors or any API reply — and no seed is ever used twice."""

from __future__ import annotations

import logging
from pathlib import Path

import grpc
import pytest

from pokdeng_client.v1 import pokdeng_pb2 as pb

from .client import bet, error_of, open_table, open_wallets, seat, start_round
from .conftest import Served
from .test_events import subscribe


def _seed_of(served: Served, round_id: str) -> bytes:
    app = served.app
    seed: bytes = app.server_seed(round_id)  # the server's own copy
    return seed


def test_an_open_rounds_seed_is_in_no_reply_event_log_error_or_row(
    local: Served, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    ops, auditor, alice = local.api("operator"), local.api("auditor"), local.api("alice")
    open_wallets(ops, ["alice", "bob"])
    open_table(ops, "s", pb.PROFILE_CLASSIC, seats=2)
    seat(alice, "s", "alice", 1)
    seat(local.api("bob"), "s", "bob", 2)
    seen: list[bytes] = []
    for attempt in range(20):  # a banker's pok closes a round at the deal: play on to one that stays open
        opened = ops.cmd(
            "RoundService", "StartRound", pb.StartRoundRequest(table_id="s", client_seed=f"secrecy-{attempt}")
        )
        round_id = opened.round.round_id
        seed = _seed_of(local, round_id)
        seen = [opened.SerializeToString()]
        seen.append(bet(alice, round_id, 1, "alice", 100).SerializeToString())
        seen.append(bet(local.api("bob"), round_id, 2, "bob", 100).SerializeToString())
        dealt = ops.cmd("RoundService", "Deal", pb.DealRequest(round_id=round_id))
        seen.append(dealt.SerializeToString())
        if dealt.round.phase != pb.ROUND_PHASE_CLOSED:
            break
    else:
        raise AssertionError("twenty deals in a row ended in a banker's pok")
    for api in (ops, auditor, alice):
        seen.append(api.get("RoundService", "GetRound", pb.GetRoundRequest(round_id=round_id)).SerializeToString())
    seen.append(ops.get("AuditService", "VerifyRound", pb.VerifyRoundRequest(round_id=round_id)).SerializeToString())
    for batch in subscribe(auditor, 0, 1000, stop_at_head=True):
        seen.append(batch.SerializeToString())
    refusals = [
        error_of(lambda: ops.get("AuditService", "ExportRound", pb.ExportRoundRequest(round_id=round_id))),
        error_of(lambda: ops.get("RoundService", "Deal", pb.DealRequest(request_id="again", round_id=round_id))),
        error_of(
            lambda: alice.get(
                "RoundService", "Draw", pb.DrawRequest(request_id="x", round_id=round_id, seat=2, player="bob")
            )
        ),
    ]
    for error in refusals:
        assert isinstance(error, grpc.Call)
        seen.append(str(error.details()).encode())
        seen.extend(
            value if isinstance(value, bytes) else value.encode() for _k, value in error.trailing_metadata() or ()
        )
    seen.append(caplog.text.encode())
    seen.extend(path.read_bytes() for path in tmp_path.glob("pokdeng.sqlite*"))  # the store, WAL included
    for blob in seen:
        assert seed not in blob and seed.hex().encode() not in blob and seed.hex().upper().encode() not in blob
    # once the round closes, the seed is published and checks against the commitment
    while (current := ops.round(round_id)).phase != pb.ROUND_PHASE_CLOSED:
        if current.phase == pb.ROUND_PHASE_PLAYER_TURNS:
            ops.cmd("RoundService", "TimeOutTurn", pb.TimeOutTurnRequest(round_id=round_id))
        else:
            ops.cmd("RoundService", "BankerStay", pb.BankerStayRequest(round_id=round_id))
    closed = ops.round(round_id)
    assert closed.server_seed == seed.hex()


def test_no_seed_is_used_twice(local: Served) -> None:
    ops = local.api("operator")
    open_wallets(ops, ["alice"])
    open_table(ops, "u", pb.PROFILE_ANTE, min_stake=100, max_stake=1000, seats=0)
    seeds, commitments = set(), set()
    for _ in range(200):
        round_id = start_round(ops, "u", "same client seed").round_id
        bet(ops, round_id, 1, "alice", 100)
        closed = ops.cmd("RoundService", "Deal", pb.DealRequest(round_id=round_id)).round  # ante settles at the deal
        assert closed.phase == pb.ROUND_PHASE_CLOSED and len(bytes.fromhex(closed.server_seed)) == 32
        seeds.add(closed.server_seed)
        commitments.add(closed.commitment)
    assert len(seeds) == len(commitments) == 200
