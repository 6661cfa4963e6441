"""A whole round of every profile, driven only through gRPC, on SQLite and on PostgreSQL.

Each player acts with its own token, the operator runs the table, a player-banker plays
the banker's hand with its own token, and an auditor verifies the closed rounds. After
every round the books balance: wallet nets + house net + commission == 0, every wallet
moved by exactly its net, and nothing stays reserved.
"""

from __future__ import annotations

import json
import random

import grpc

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_service import audit
from pokdeng_service.api.errors import details_of
from pokdeng_service.store import merkle

from .client import (
    Api,
    Choices,
    assert_books,
    balances,
    bet,
    error_of,
    kind_of,
    open_table,
    open_wallets,
    payload,
    play_round,
    seat,
    start_round,
)
from .conftest import Served


def _audited(auditor: Api, round_id: str) -> None:
    verdict = auditor.get("AuditService", "VerifyRound", pb.VerifyRoundRequest(round_id=round_id))
    assert verdict.ok, verdict.first_difference
    assert {c.name for c in verdict.checks} >= {"chain", "commitment", "replay", "money"}
    bundle = auditor.get("AuditService", "ExportRound", pb.ExportRoundRequest(round_id=round_id))
    offline = audit.verify_bundle(bundle.bundle_json.encode())
    assert offline.ok, offline.first_difference
    assert json.loads(bundle.bundle_json)["bundle_digest"] == bundle.bundle_digest
    replay = auditor.get("AuditService", "ReplayRound", pb.ReplayRoundRequest(round_id=round_id))
    assert replay.ok and replay.events and kind_of(replay.events[-1]) == "round_closed"


def test_classic_round_with_a_backer(served: Served) -> None:
    ops, auditor, players = served.api("operator"), served.api("auditor"), served.players()
    names = ["alice", "bob", "carol"]
    open_wallets(ops, names)
    table = open_table(ops, "classic-1", pb.PROFILE_CLASSIC, seats=6)
    assert (table.profile, table.seats, table.dealer) == (pb.PROFILE_CLASSIC, 6, "")
    seat(players["alice"], "classic-1", "alice", 1)
    seat(players["alice"], "classic-1", "alice", 2)
    seat(players["bob"], "classic-1", "bob", 3)
    choices = Choices(random.Random(1))
    for n in range(1, 3):
        before = balances(ops, names)
        opened = start_round(ops, "classic-1")
        assert opened.round_id == f"classic-1#{n}" and opened.phase == pb.ROUND_PHASE_BETTING
        assert len(opened.commitment) == 64 and not opened.server_seed and opened.algorithm
        bet(players["alice"], opened.round_id, 1, "alice", 100)
        bet(players["alice"], opened.round_id, 2, "alice", 200)
        bet(players["bob"], opened.round_id, 3, "bob", 300)
        response = bet(players["carol"], opened.round_id, 3, "carol", 150)  # carol backs bob's hand
        assert [kind_of(e) for e in response.events] == ["bet_placed"]
        assert ops.wallet("carol").reserved == 5 * 150
        closed = play_round(ops, players, opened.round_id, choices)
        nets = assert_books(ops, closed, before)
        assert set(nets) == {"alice", "bob", "carol"}
        cards = [c for h in closed.hands for c in h.cards]
        assert len(cards) == len(set(cards)) and all(cards)
        assert {h.seat for h in closed.hands} == {0, 1, 2, 3}
        _audited(auditor, closed.round_id)
    assert ops.get("TableService", "GetTable", pb.GetTableRequest(table_id="classic-1")).table.round_no == 2
    # a checkpoint of the table's closed rounds, and each round's inclusion proof
    missing = error_of(
        lambda: auditor.get("AuditService", "GetInclusionProof", pb.GetInclusionProofRequest(round_id="classic-1#1"))
    )
    assert missing.code() == grpc.StatusCode.NOT_FOUND
    checkpoint = ops.cmd(
        "TableService", "CheckpointTable", pb.CheckpointTableRequest(table_id="classic-1", period="day 1")
    )
    assert [kind_of(e) for e in checkpoint.events] == ["checkpoint_recorded"]
    for round_id in ("classic-1#1", "classic-1#2"):
        proof = players["alice"].get(
            "AuditService", "GetInclusionProof", pb.GetInclusionProofRequest(round_id=round_id)
        )
        assert (proof.period, proof.size, proof.table_id) == ("day 1", 2, "classic-1")
        path = [bytes.fromhex(h) for h in proof.path]
        assert merkle.verify_inclusion(
            bytes.fromhex(proof.leaf), proof.index, proof.size, path, bytes.fromhex(proof.root)
        )


def test_ante_round_on_betting_positions(served: Served) -> None:
    ops, auditor, players = served.api("operator"), served.api("auditor"), served.players()
    names = ["alice", "bob", "carol"]
    open_wallets(ops, names)
    table = open_table(ops, "ante-1", pb.PROFILE_ANTE, min_stake=100, max_stake=1000, seats=0)
    assert table.seats == 5 and not table.seated
    before = balances(ops, names)
    opened = start_round(ops, "ante-1")
    assert [s.seat for s in opened.seats] == [1, 2, 3, 4, 5] and not any(s.player for s in opened.seats)
    for number, who, stake in [(1, "alice", 200), (2, "alice", 400), (2, "bob", 200), (5, "carol", 1000)]:
        bet(players[who], opened.round_id, number, who, stake)
    dealt = ops.cmd("RoundService", "Deal", pb.DealRequest(round_id=opened.round_id))
    kinds = [kind_of(e) for e in dealt.events]
    assert kinds[:2] == ["client_seed_fixed", "cards_dealt"] and kinds[-1] == "round_closed"
    assert kinds.count("bet_settled") == 4
    closed = ops.round(opened.round_id)
    assert len(closed.hands) == 6 and all(len(h.cards) == 2 for h in closed.hands)
    assert_books(ops, closed, before)
    settled = [payload(e) for e in closed.events if kind_of(e) == "bet_settled"]
    assert all(s["ante_net"] + s["bet_net"] == s["net"] for s in settled)
    _audited(auditor, closed.round_id)


def test_room_round_with_a_banker_bid(served: Served) -> None:
    ops, auditor, players = served.api("operator"), served.api("auditor"), served.players()
    names = ["alice", "bob", "carol", "dave"]
    open_wallets(ops, {"alice": 100_000, "bob": 100_000, "carol": 100_000, "dave": 200_000})
    open_table(ops, "room-1", pb.PROFILE_ROOM, min_stake=100, max_stake=1000, seats=5)
    for number, who in enumerate(names, start=1):
        seat(players[who], "room-1", who, number)
    for who, rounds in [("alice", 10), ("bob", 5), ("carol", 0), ("dave", 10)]:
        request = pb.BidForBankerRequest(table_id="room-1", player=who, rounds=rounds)
        table = players[who].cmd("TableService", "BidForBanker", request).table
    assert [(b.player, b.rounds) for b in table.bids] == [("alice", 10), ("bob", 5), ("carol", 0), ("dave", 10)]
    table = ops.cmd("TableService", "CloseBankerBid", pb.CloseBankerBidRequest(table_id="room-1")).table
    assert table.banker == "dave" and table.banker_rounds_left == 10  # a tie on 10 goes to the larger wallet
    assert "dave" not in [s.player for s in table.seated]
    choices = Choices(random.Random(3), reveal=0.7)
    for _ in range(3):
        before = balances(ops, names)
        opened = start_round(ops, "room-1")
        assert opened.banker_player == "dave"
        for who in ("alice", "bob", "carol"):
            number = next(s.seat for s in opened.seats if s.player == who)
            bet(players[who], opened.round_id, number, who, 500)
        assert ops.wallet("dave").reserved == 5 * 500 * 3
        closed = play_round(ops, players, opened.round_id, choices)
        nets = assert_books(ops, closed, before)
        assert "dave" in nets and closed.house_net == 0
        payloads = [payload(e) for e in closed.events]
        kinds = [kind_of(e) for e in closed.events]
        settled = payloads[kinds.index("round_settled")]
        player_commission = sum(p["commission"] for p, k in zip(payloads, kinds, strict=True) if k == "bet_settled")
        assert closed.commission == player_commission + settled["banker_commission"]  # 3% of winners and banker
        _audited(auditor, closed.round_id)
    assert ops.get("TableService", "GetTable", pb.GetTableRequest(table_id="room-1")).table.banker_rounds_left == 7


def test_a_room_banker_short_of_another_round_when_it_opens_loses_the_role(served: Served) -> None:
    """The banker's funds are checked when a round opens too: its role ends (recorded) and no round opens."""
    ops, players = served.api("operator"), served.players()
    open_wallets(ops, {"alice": 100_000, "bob": 100_000, "dave": 3_000})
    open_table(ops, "room-2", pb.PROFILE_ROOM, min_stake=100, max_stake=1000, seats=5)
    for number, who in enumerate(["alice", "bob", "dave"], start=1):
        seat(players[who], "room-2", who, number)
    bid = pb.BidForBankerRequest(table_id="room-2", player="dave", rounds=5)  # 3000 covers the three seated
    players["dave"].cmd("TableService", "BidForBanker", bid)
    ops.cmd("TableService", "CloseBankerBid", pb.CloseBankerBidRequest(table_id="room-2"))
    withdraw = pb.WithdrawRequest(wallet_id="dave", amount=1_001)  # 1999 left: the two seated need 2000
    ops.cmd("WalletService", "Withdraw", withdraw)
    request = pb.StartRoundRequest(request_id="open-1", table_id="room-2")
    before = ops.get("TableService", "GetTable", pb.GetTableRequest(table_id="room-2")).table
    details = details_of(error_of(lambda: ops.get("RoundService", "StartRound", request)))
    assert details.code == grpc.StatusCode.FAILED_PRECONDITION and details.reason == "BANKER_CANNOT_COVER"
    assert details.metadata == {"banker": "dave", "table_id": "room-2"} and "dave" in details.message
    table = ops.get("TableService", "GetTable", pb.GetTableRequest(table_id="room-2")).table
    assert table.banker == "" and table.banker_rounds_left == 0 and table.version == before.version + 1
    assert table.round_no == 0 and not table.current_round_id
    opened = error_of(lambda: ops.get("RoundService", "GetRound", pb.GetRoundRequest(round_id="room-2#1")))
    assert opened.code() == grpc.StatusCode.NOT_FOUND
    # the request id was not used: its retry decides afresh (no banker yet), and after the bid it starts the round
    details = details_of(error_of(lambda: ops.get("RoundService", "StartRound", request)))
    assert details.code == grpc.StatusCode.FAILED_PRECONDITION and details.reason == "WRONG_PHASE"
    assert ops.get("TableService", "GetTable", pb.GetTableRequest(table_id="room-2")).table.version == table.version
    bid = pb.BidForBankerRequest(table_id="room-2", player="alice", rounds=5)
    players["alice"].cmd("TableService", "BidForBanker", bid)
    ops.cmd("TableService", "CloseBankerBid", pb.CloseBankerBidRequest(table_id="room-2"))
    assert ops.cmd("RoundService", "StartRound", request).round.round_id == "room-2#1"
    assert ops.wallet("dave").available == 1_999


def test_kingmaker_round_with_a_side_bet(served: Served) -> None:
    """Rounds are played until the banker's up card opens the side bets (an 8 or 9: about 2 rounds in 13)."""
    ops, auditor, players = served.api("operator"), served.api("auditor"), served.players()
    names = ["alice", "bob", "carol", "dave", "erin"]
    open_wallets(ops, names)
    open_table(ops, "king-1", pb.PROFILE_KINGMAKER, min_stake=1000, max_stake=1000, seats=5)
    for number, who in enumerate(names, start=1):
        seat(players[who], "king-1", who, number)
    choices = Choices(random.Random(5), side_bet=1.0)
    for _ in range(150):
        before = balances(ops, names)
        opened = start_round(ops, "king-1")
        for number, who in enumerate(names, start=1):
            bet(players[who], opened.round_id, number, who, 1000)
        closed = play_round(ops, players, opened.round_id, choices)
        assert_books(ops, closed, before)
        if closed.side_bets:
            break
    else:  # pragma: no cover - probability below 1e-9
        raise AssertionError("no side-bet window in 150 rounds")
    assert "PlaceSideBet" in choices.seen and "CloseSideBets" in choices.seen
    assert {b.player for b in closed.side_bets} == set(names)
    (side,) = [payload(e) for e in closed.events if kind_of(e) == "side_bets_settled"]
    for _seat, _player, stake, net in side["results"]:
        assert net == (stake * 12 // 10 if side["natural"] else -stake)
    up_card = next(e.cards_dealt.banker_up_card for e in closed.events if kind_of(e) == "cards_dealt")
    assert up_card[:-1] in ("8", "9")
    _audited(auditor, closed.round_id)
