"""A small gRPC client for the API tests: stubs, a bearer token, request ids, and a round driver.

``Api.cmd(service, method, request)`` sends a command (filling in a fresh request id);
in *twice* mode it sends every command a second time with the same request id and
checks that the answer is the same, that the retry is flagged in the trailing
metadata, and that no event was written. ``Api.get(service, method, request)`` reads.

``play_round`` plays a round to its close through the API only: the operator deals,
closes side bets and acts for the house; each player acts with its own token; a
player-banker plays the banker's hand with its own token.
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import grpc

from pokdeng_client import events
from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_client.v1 import pokdeng_pb2_grpc as pb_grpc

PLAYERS = ("alice", "bob", "carol", "dave", "erin", "frank")
TOKENS: dict[str, str] = {
    "operator": "operator-token-0123456789",
    "auditor": "auditor-token-0123456789",
    **{p: f"{p}-token-0123456789" for p in PLAYERS},
}
TIMEOUT = 30.0
SERVICE_OF: dict[str, str] = {m.name: s.name for s in pb.DESCRIPTOR.services_by_name.values() for m in s.methods}
"""Each method's service (method names are unique across the API's services)."""
COMMANDS = frozenset(
    m.name
    for s in ("WalletService", "TableService", "RoundService")
    for m in pb.DESCRIPTOR.services_by_name[s].methods
    if "request_id" in m.input_type.fields_by_name
)
"""The game's commands (the checkpoint signer's SignTreeHead is tested on its own)."""


@dataclass
class Api:
    channel: grpc.Channel
    token: str | None
    ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    prefix: str = "req"
    twice: bool = False
    max_position: Callable[[], int] | None = None
    retried: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.stubs: dict[str, Any] = {
            name: getattr(pb_grpc, f"{name}Stub")(self.channel) for name in pb.DESCRIPTOR.services_by_name
        }

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.token}"),) if self.token else ()

    def method(self, service: str, name: str) -> Any:
        """The stub method ``name``; ``service`` must be its service."""
        assert SERVICE_OF[name] == service, f"{name} is a method of {SERVICE_OF[name]}, not {service}"
        return getattr(self.stubs[service], name)

    def next_id(self) -> str:
        return f"{self.prefix}-{next(self.ids)}"

    def cmd(self, service: str, name: str, request: Any) -> Any:
        if not request.request_id:
            request.request_id = self.next_id()
        method = self.method(service, name)
        before = self.max_position() if self.twice and self.max_position else None
        response, call = method.with_call(request, metadata=self.metadata, timeout=TIMEOUT)
        replayed = dict(call.trailing_metadata() or ()).get("pokdeng-replayed")
        assert replayed == "false", f"{name}: a first call reported {replayed!r}"
        if self.twice:
            written = self.max_position() if self.max_position else None
            again, call2 = method.with_call(request, metadata=self.metadata, timeout=TIMEOUT)
            assert again == response, f"{name}: a retry answered differently"
            assert dict(call2.trailing_metadata() or ()).get("pokdeng-replayed") == "true", name
            if self.max_position is not None:
                assert before is not None and written is not None and written > before, f"{name} wrote nothing"
                assert self.max_position() == written, f"{name}: the retry wrote events"
            self.retried.add(name)
        return response

    def get(self, service: str, name: str, request: Any) -> Any:
        return self.method(service, name)(request, metadata=self.metadata, timeout=TIMEOUT)

    # -- shortcuts ------------------------------------------------------------------------------

    def round(self, round_id: str) -> pb.Round:
        result: pb.Round = self.get("RoundService", "GetRound", pb.GetRoundRequest(round_id=round_id)).round
        return result

    def wallet(self, wallet_id: str) -> pb.Wallet:
        result: pb.Wallet = self.get("WalletService", "GetWallet", pb.GetWalletRequest(wallet_id=wallet_id)).wallet
        return result

    def table(self, table_id: str) -> pb.Table:
        result: pb.Table = self.get("TableService", "GetTable", pb.GetTableRequest(table_id=table_id)).table
        return result

    def legal(self, round_id: str, seat: int | None = None) -> list[str]:
        request = pb.GetLegalCommandsRequest(round_id=round_id)
        if seat is not None:
            request.seat = seat
        commands = self.get("RoundService", "GetLegalCommands", request).commands
        return [pb.CommandKind.Name(c.kind).removeprefix("COMMAND_KIND_").lower() for c in commands]


def kind_of(event: Any) -> str:
    """An event's kind in snake case: its typed member's name ("bet_placed", "wallet_deposited"), or for a
    message without one (a replayed event) its EventKind without the prefix."""
    if "event" in event.DESCRIPTOR.oneofs_by_name:
        member: str | None = event.WhichOneof("event")
        if member is not None:
            return member
    return pb.EventKind.Name(event.kind).removeprefix("EVENT_KIND_").lower()


def payload(event: Any) -> dict[str, Any]:
    """An event's stored data: its canonical JSON (a redacted event's typed member, mapped back)."""
    if event.canonical_data:
        data: dict[str, Any] = json.loads(event.canonical_data)
        return data
    return events.data_of(getattr(event, event.WhichOneof("event")))


def error_of(call: Callable[..., Any]) -> grpc.RpcError:
    """The ``grpc.RpcError`` a call raises (fails the test if it succeeds)."""
    try:
        call()
    except grpc.RpcError as error:
        return error
    raise AssertionError("the call succeeded")


# --- set-up ------------------------------------------------------------------------------------


def open_wallets(ops: Api, names: Mapping[str, int] | list[str], amount: int = 1_000_000) -> None:
    funds = names if isinstance(names, Mapping) else dict.fromkeys(names, amount)
    for name, money in funds.items():
        ops.cmd("WalletService", "OpenWallet", pb.OpenWalletRequest(wallet_id=name))
        ops.cmd("WalletService", "Deposit", pb.DepositRequest(wallet_id=name, amount=money))


def open_table(
    ops: Api,
    table_id: str,
    profile: pb.Profile.ValueType,
    *,
    min_stake: int = 100,
    max_stake: int = 10_000,
    seats: int = 6,
    dealer: str | None = None,
) -> pb.Table:
    request = pb.OpenTableRequest(
        table_id=table_id, profile=profile, min_stake=min_stake, max_stake=max_stake, seats=seats
    )
    if dealer is not None:
        request.dealer = dealer
    table: pb.Table = ops.cmd("TableService", "OpenTable", request).table
    return table


def seat(player: Api, table_id: str, who: str, number: int) -> None:
    player.cmd("TableService", "TakeSeat", pb.TakeSeatRequest(table_id=table_id, player=who, seat=number))


def start_round(ops: Api, table_id: str, client_seed: str = "grpc tests") -> pb.Round:
    response = ops.cmd("RoundService", "StartRound", pb.StartRoundRequest(table_id=table_id, client_seed=client_seed))
    result: pb.Round = response.round
    return result


def bet(player: Api, round_id: str, number: int, who: str, stake: int) -> pb.PlaceBetResponse:
    request = pb.PlaceBetRequest(round_id=round_id, seat=number, player=who, stake=stake)
    result: pb.PlaceBetResponse = player.cmd("RoundService", "PlaceBet", request)
    return result


# --- playing a round ---------------------------------------------------------------------------


@dataclass
class Choices:
    rng: random.Random
    draw: float = 0.5
    side_bet: float = 1.0
    reveal: float = 0.5
    banker_draw: float = 0.5
    seen: set[str] = field(default_factory=set)  # the commands made while playing


def play_round(ops: Api, players: Mapping[str, Api], round_id: str, choices: Choices, max_steps: int = 200) -> pb.Round:
    """Play ``round_id`` from betting to its close through the API; returns the closed round (operator view)."""
    for _ in range(max_steps):
        current = ops.round(round_id)
        phase = current.phase
        if phase == pb.ROUND_PHASE_CLOSED:
            return current
        if phase == pb.ROUND_PHASE_BETTING:
            ops.cmd("RoundService", "Deal", pb.DealRequest(round_id=round_id))
            choices.seen.add("Deal")
        elif phase == pb.ROUND_PHASE_SIDE_BETS:
            holders = {s.seat: s.player for s in current.seats}
            for b in current.bets:
                api = players[b.player]
                mine = holders.get(b.seat) == b.player and "place_side_bet" in api.legal(round_id, b.seat)
                if mine and choices.rng.random() < choices.side_bet:
                    request = pb.PlaceSideBetRequest(round_id=round_id, seat=b.seat, player=b.player)
                    api.cmd("RoundService", "PlaceSideBet", request)
                    choices.seen.add("PlaceSideBet")
            ops.cmd("RoundService", "CloseSideBets", pb.CloseSideBetsRequest(round_id=round_id))
            choices.seen.add("CloseSideBets")
        elif phase == pb.ROUND_PHASE_PLAYER_TURNS:
            number = current.turn
            holder = {s.seat: s.player for s in current.seats}[number]
            api = players[holder]
            if "draw" in api.legal(round_id, number):
                name = "Draw" if choices.rng.random() < choices.draw else "Stay"
                request_type = pb.DrawRequest if name == "Draw" else pb.StayRequest
                api.cmd("RoundService", name, request_type(round_id=round_id, seat=number, player=holder))
                choices.seen.add(name)
            else:  # pragma: no cover - the engine plays automatic steps itself
                ops.cmd("RoundService", "TimeOutTurn", pb.TimeOutTurnRequest(round_id=round_id))
        elif phase == pb.ROUND_PHASE_BANKER_TURN:
            banker = current.banker_player
            api = players[banker] if banker else ops
            legal = api.legal(round_id, 0)
            waiting = [h.seat for h in current.hands if h.seat != 0 and not h.revealed]
            if "banker_reveal" in legal and waiting and choices.rng.random() < choices.reveal:
                chosen = sorted(choices.rng.sample(waiting, choices.rng.randint(1, len(waiting))))
                api.cmd(
                    "RoundService",
                    "BankerReveal",
                    pb.BankerRevealRequest(round_id=round_id, seats=chosen, player=banker),
                )
                choices.seen.add("BankerReveal")
            elif "banker_draw" in legal:
                name = "BankerDraw" if choices.rng.random() < choices.banker_draw else "BankerStay"
                banker_request = pb.BankerDrawRequest if name == "BankerDraw" else pb.BankerStayRequest
                api.cmd("RoundService", name, banker_request(round_id=round_id, player=banker))
                choices.seen.add(name)
            else:  # pragma: no cover
                ops.cmd("RoundService", "TimeOutTurn", pb.TimeOutTurnRequest(round_id=round_id))
        else:  # pragma: no cover
            raise AssertionError(f"round {round_id} stuck in phase {pb.RoundPhase.Name(phase)}")
    raise AssertionError(f"round {round_id} did not close in {max_steps} steps")


def assert_books(ops: Api, closed: pb.Round, before: Mapping[str, int]) -> dict[str, int]:
    """The round balances, every wallet moved by its net, nothing stays reserved; returns the nets."""
    assert closed.phase == pb.ROUND_PHASE_CLOSED and closed.outcome == pb.ROUND_OUTCOME_SETTLED
    nets = {r.player: r.net for r in closed.results}
    assert sum(nets.values()) + closed.house_net + closed.commission == 0
    for name, balance in before.items():
        wallet = ops.wallet(name)
        assert wallet.reserved == 0, name
        assert wallet.balance == balance + nets.get(name, 0), name
    assert closed.server_seed and closed.commitment
    return nets


def balances(ops: Api, names: list[str] | tuple[str, ...]) -> dict[str, int]:
    return {n: ops.wallet(n).balance for n in names}
