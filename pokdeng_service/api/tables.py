"""The Tables service: table commands (seats, the banker bid, checkpoints) and round commands."""

from __future__ import annotations

from pokdeng_service.api import convert
from pokdeng_service.api.replies import round_reply, table_reply
from pokdeng_service.api.rpcs import OPERATOR, PLAYERS, Rpc, command
from pokdeng_service.api.v1 import pokdeng_pb2 as pb
from pokdeng_service.application import commands as c


def open_table(request: pb.OpenTableRequest) -> c.OpenTable:
    profile = convert.PROFILE_FROM_PB.get(int(request.profile), "")
    options = {"straights": request.options.straights, "ace_low": request.options.ace_low}
    seats = request.seats or 5 if profile == "ante" else request.seats  # ante has five fixed positions
    return c.OpenTable(
        request.table_id,
        profile,
        options if profile == "classic" or any(options.values()) else None,
        min_stake=request.min_stake,
        max_stake=request.max_stake,
        seats=seats,
        dealer=request.dealer if request.HasField("dealer") else None,
        turn_timeout=request.turn_timeout or 30,
    )


def place_bet(request: pb.PlaceBetRequest) -> c.PlaceBet:
    seed = request.client_seed if request.HasField("client_seed") else None
    return c.PlaceBet(request.round_id, request.seat, request.player, request.stake, seed)


def contribute_seed(request: pb.ContributeSeedRequest) -> c.ContributeSeed:
    return c.ContributeSeed(request.round_id, request.player, request.client_seed)  # player "": the platform


RPCS: tuple[Rpc, ...] = (
    command("Tables", "OpenTable", OPERATOR, open_table, table_reply),
    command("Tables", "TakeSeat", PLAYERS, lambda r: c.TakeSeat(r.table_id, r.player, r.seat), table_reply),
    command(
        "Tables",
        "LeaveSeat",
        PLAYERS,
        lambda r: c.LeaveSeat(r.table_id, r.player, r.seat if r.HasField("seat") else None),
        table_reply,
    ),
    command("Tables", "BidForBanker", PLAYERS, lambda r: c.BidForBanker(r.table_id, r.player, r.rounds), table_reply),
    command("Tables", "CloseBankerBid", OPERATOR, lambda r: c.CloseBankerBid(r.table_id), table_reply),
    command("Tables", "DisconnectBanker", OPERATOR, lambda r: c.DisconnectBanker(r.table_id, r.player), table_reply),
    command("Tables", "ReconnectBanker", PLAYERS, lambda r: c.ReconnectBanker(r.table_id, r.player), table_reply),
    command("Tables", "CheckpointTable", OPERATOR, lambda r: c.CheckpointTable(r.table_id, r.period), table_reply),
    command("Tables", "StartRound", OPERATOR, lambda r: c.StartRound(r.table_id, r.client_seed), round_reply),
    command("Tables", "PlaceBet", PLAYERS, place_bet, round_reply),
    command("Tables", "ContributeSeed", PLAYERS, contribute_seed, round_reply),
    command("Tables", "Deal", OPERATOR, lambda r: c.Deal(r.round_id), round_reply),
    command("Tables", "PlaceSideBet", PLAYERS, lambda r: c.PlaceSideBet(r.round_id, r.seat, r.player), round_reply),
    command("Tables", "CloseSideBets", OPERATOR, lambda r: c.CloseSideBets(r.round_id), round_reply),
    command("Tables", "Draw", PLAYERS, lambda r: c.Draw(r.round_id, r.seat, r.player), round_reply),
    command("Tables", "Stay", PLAYERS, lambda r: c.Stay(r.round_id, r.seat, r.player), round_reply),
    command(
        "Tables",
        "BankerReveal",
        PLAYERS,
        lambda r: c.BankerReveal(r.round_id, tuple(r.seats), r.player or None),
        round_reply,
    ),
    command("Tables", "BankerDraw", PLAYERS, lambda r: c.BankerDraw(r.round_id, r.player or None), round_reply),
    command("Tables", "BankerStay", PLAYERS, lambda r: c.BankerStay(r.round_id, r.player or None), round_reply),
    command(
        "Tables",
        "TimeOutTurn",
        OPERATOR,
        lambda r: c.TimeOutTurn(r.round_id, r.expected_version if r.HasField("expected_version") else None),
        round_reply,
    ),
    command("Tables", "VoidRound", OPERATOR, lambda r: c.VoidRound(r.round_id, r.reason), round_reply),
)
