"""Every command type, sent twice with the same request id, answers the same and writes nothing more.

Every command of these scenarios goes through ``Api`` in *twice* mode: the retry must
return an equal response, say ``pokdeng-replayed: true`` in its trailing metadata, and
leave the store's last position where the first call left it.
"""

from __future__ import annotations

import random

from pokdeng_client.v1 import pokdeng_pb2 as pb

from .client import COMMANDS, Api, Choices, bet, kind_of, open_table, open_wallets, play_round, seat, start_round
from .conftest import Served


def _until(condition: bool, what: str) -> None:
    assert condition, what


def test_each_command_type_is_idempotent(served: Served) -> None:
    ops = served.api("operator", twice=True)
    players = served.players(twice=True)
    open_wallets(ops, {"alice": 100_000, "bob": 100_000, "carol": 100_000, "dave": 200_000})
    ops.cmd("WalletService", "Withdraw", pb.WithdrawRequest(wallet_id="alice", amount=1))
    handed = pb.OpenWalletSessionRequest(player="alice", token="alice's-session-token", currency_code="THB")
    session = ops.cmd("WalletService", "OpenWalletSession", handed).session
    assert (session.player, session.session_number, session.currency.code) == ("alice", 1, "THB")
    assert "session-token" not in str(session)  # (never shown again)

    # classic, house banker: draws, stays, the banker's reveal, draw and stay, a time-out, a void
    open_table(ops, "c", pb.PROFILE_CLASSIC, seats=6)
    seat(players["alice"], "c", "alice", 1)
    seat(players["bob"], "c", "bob", 2)
    seat(players["carol"], "c", "carol", 3)
    players["carol"].cmd("TableService", "LeaveSeat", pb.LeaveSeatRequest(table_id="c", player="carol"))
    choices = Choices(random.Random(8), reveal=0.5)
    wanted = {"Draw", "Stay", "BankerReveal", "BankerDraw", "BankerStay"}
    for _ in range(40):
        round_id = start_round(ops, "c").round_id
        bet(players["alice"], round_id, 1, "alice", 100)
        bet(players["bob"], round_id, 2, "bob", 100)
        play_round(ops, players, round_id, choices)
        if wanted <= choices.seen:
            break
    _until(wanted <= choices.seen, f"forty classic rounds without {wanted - choices.seen}")
    for _ in range(40):
        round_id = start_round(ops, "c").round_id
        bet(players["alice"], round_id, 1, "alice", 100)
        if (
            ops.cmd("RoundService", "Deal", pb.DealRequest(round_id=round_id)).round.phase
            == pb.ROUND_PHASE_PLAYER_TURNS
        ):
            ops.cmd("RoundService", "TimeOutTurn", pb.TimeOutTurnRequest(round_id=round_id))
            play_round(ops, players, round_id, choices)
            break
        play_round(ops, players, round_id, choices)
    round_id = start_round(ops, "c").round_id
    bet(players["alice"], round_id, 1, "alice", 100)
    contribution = pb.ContributeSeedRequest(round_id=round_id, player="alice", client_seed="alice's seed")
    players["alice"].cmd("RoundService", "ContributeSeed", contribution)
    ops.cmd("RoundService", "ContributeSeed", pb.ContributeSeedRequest(round_id=round_id, client_seed="the platform's"))
    voided = ops.cmd("RoundService", "VoidRound", pb.VoidRoundRequest(round_id=round_id, reason="dealer's error"))
    assert voided.round.outcome == pb.ROUND_OUTCOME_VOIDED and ops.wallet("alice").reserved == 0
    ops.cmd("TableService", "CheckpointTable", pb.CheckpointTableRequest(table_id="c"))

    # room: the banker bid, and the banker's disconnection between rounds
    open_table(ops, "r", pb.PROFILE_ROOM, min_stake=100, max_stake=1000, seats=5)
    for number, who in enumerate(("alice", "bob", "dave"), start=1):
        seat(players[who], "r", who, number)
    for who, rounds in (("alice", 5), ("bob", 0), ("dave", 10)):
        players[who].cmd(
            "TableService", "BidForBanker", pb.BidForBankerRequest(table_id="r", player=who, rounds=rounds)
        )
    assert ops.cmd("TableService", "CloseBankerBid", pb.CloseBankerBidRequest(table_id="r")).table.banker == "dave"
    round_id = start_round(ops, "r").round_id  # the banker drops out mid-round and is back at once
    bet(players["alice"], round_id, 1, "alice", 100)
    ops.cmd("TableService", "DisconnectBanker", pb.DisconnectBankerRequest(table_id="r", player="dave"))
    back = players["dave"].cmd(
        "TableService", "ReconnectBanker", pb.ReconnectBankerRequest(table_id="r", player="dave")
    )
    assert [kind_of(e) for e in back.events] == ["banker_reconnected"] and back.table.banker == "dave"
    play_round(ops, players, round_id, Choices(random.Random(3)))
    gone = ops.cmd("TableService", "DisconnectBanker", pb.DisconnectBankerRequest(table_id="r", player="dave"))
    assert gone.table.banker == "" and [kind_of(e) for e in gone.events] == ["banker_role_ended"]

    # kingmaker: side bets
    open_table(ops, "k", pb.PROFILE_KINGMAKER, min_stake=100, max_stake=100, seats=5)
    seat(players["alice"], "k", "alice", 1)
    side = Choices(random.Random(9), side_bet=1.0)
    for _ in range(150):
        round_id = start_round(ops, "k").round_id
        bet(players["alice"], round_id, 1, "alice", 100)
        play_round(ops, players, round_id, side)
        if "PlaceSideBet" in side.seen:
            break
    _until("PlaceSideBet" in side.seen, "no side-bet window in 150 rounds")

    retried = ops.retried.union(*(p.retried for p in players.values()))
    assert retried == COMMANDS, f"not retried: {sorted(COMMANDS - retried)}"


def test_a_retry_answers_as_the_first_call_even_later(local: Served) -> None:
    """The events in a command's answer are those of the first call, whatever happened since."""
    ops: Api = local.api("operator")
    open_wallets(ops, ["alice"])
    first = ops.cmd("WalletService", "Deposit", pb.DepositRequest(request_id="dep-x", wallet_id="alice", amount=7))
    ops.cmd("WalletService", "Deposit", pb.DepositRequest(wallet_id="alice", amount=5))
    again, call = ops.method("WalletService", "Deposit").with_call(
        pb.DepositRequest(request_id="dep-x", wallet_id="alice", amount=7), metadata=ops.metadata
    )
    assert list(again.events) == list(first.events) and again.request_id == "dep-x"
    assert again.wallet.balance == first.wallet.balance + 5  # the wallet as it is now
    assert dict(call.trailing_metadata())["pokdeng-replayed"] == "true"
