"""The pokdeng.v1 servicers: check the request, check who may make it, call the application, convert.

Each RPC is thin: ``Fields`` validates the request (every violation reported at
once, before the application is called), ``auth.require_player`` and the
round's participants decide what a player token may do, the application does
the work, and ``convert`` builds the response. Every error goes through the one
map in ``pokdeng_service.api_errors``.

A command's response carries the events it recorded; a retry with the same
request id answers the same and writes nothing (trailing metadata
``pokdeng-replayed: true`` says it was a retry).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

import grpc

from pokdeng_core.errors import WrongPhase
from pokdeng_core.machine import RoundState
from pokdeng_core.table import MAX_SEATS, MAX_TURN_TIMEOUT
from pokdeng_service.api import convert
from pokdeng_service.api.auth import Authenticator, Principal, Role, require_player
from pokdeng_service.api.errors import (
    DeadlineExpired,
    FieldViolation,
    PermissionDenied,
    RequestInvalid,
    ResourceExhausted,
    Unavailable,
    abort,
)
from pokdeng_service.api.v1 import pokdeng_pb2 as pb
from pokdeng_service.api.v1 import pokdeng_pb2_grpc as pb_grpc
from pokdeng_service.application.errors import NotFound
from pokdeng_service.application.views import (
    CommandResult,
    Notification,
    RoundView,
    StatementLine,
    TableView,
    WalletView,
)
from pokdeng_service.audit import verification as audit

log = logging.getLogger("pokdeng.api")

MAX_ID = 128
MAX_CLIENT_SEED = 256
MAX_REASON = 500
MAX_INT64 = 2**63 - 1
REPLAYED = "pokdeng-replayed"

MAX_REVEAL = 17  # a table has at most 16 player seats (classic), plus slack
MAX_POSITION = 2**63 - 1  # log positions are int64 in every store


class Application(Protocol):
    """What the servicers need of the application (``PokdengApp`` or a partitioned front)."""

    def open_wallet(self, request_id: str, wallet_id: str) -> CommandResult: ...
    def deposit(self, request_id: str, wallet_id: str, amount: int) -> CommandResult: ...
    def withdraw(self, request_id: str, wallet_id: str, amount: int) -> CommandResult: ...
    def get_wallet(self, wallet_id: str) -> WalletView: ...
    def wallet_statement(self, wallet_id: str, after: int = 0, limit: int = 100) -> Sequence[StatementLine]: ...
    def open_table(
        self,
        request_id: str,
        table_id: str,
        profile: str,
        options: dict[str, bool] | None = None,
        *,
        min_stake: int,
        max_stake: int,
        seats: int = 5,
        dealer: str | None = None,
        turn_timeout: int = 30,
    ) -> CommandResult: ...
    def take_seat(self, request_id: str, table_id: str, player: str, seat: int) -> CommandResult: ...
    def leave_seat(self, request_id: str, table_id: str, player: str, seat: int | None = None) -> CommandResult: ...
    def bid_for_banker(self, request_id: str, table_id: str, player: str, rounds: int) -> CommandResult: ...
    def close_banker_bid(self, request_id: str, table_id: str) -> CommandResult: ...
    def disconnect_banker(self, request_id: str, table_id: str, player: str) -> CommandResult: ...
    def checkpoint_table(self, request_id: str, table_id: str, period: str = "") -> CommandResult: ...
    def inclusion_proof(self, round_id: str) -> dict[str, Any] | None: ...
    def get_table(self, table_id: str) -> TableView: ...
    def start_round(self, request_id: str, table_id: str, client_seed: str = "") -> CommandResult: ...
    def place_bet(self, request_id: str, round_id: str, seat: int, player: str, stake: int) -> CommandResult: ...
    def deal(self, request_id: str, round_id: str) -> CommandResult: ...
    def place_side_bet(self, request_id: str, round_id: str, seat: int, player: str) -> CommandResult: ...
    def close_side_bets(self, request_id: str, round_id: str) -> CommandResult: ...
    def draw(self, request_id: str, round_id: str, seat: int, player: str) -> CommandResult: ...
    def stay(self, request_id: str, round_id: str, seat: int, player: str) -> CommandResult: ...
    def banker_reveal(
        self, request_id: str, round_id: str, seats: Sequence[int], player: str | None = None
    ) -> CommandResult: ...
    def banker_draw(self, request_id: str, round_id: str, player: str | None = None) -> CommandResult: ...
    def banker_stay(self, request_id: str, round_id: str, player: str | None = None) -> CommandResult: ...
    def time_out_turn(self, request_id: str, round_id: str, expected_version: int | None = None) -> CommandResult: ...
    def void_round(self, request_id: str, round_id: str, reason: str) -> CommandResult: ...
    def round_state(self, round_id: str) -> RoundState: ...
    def get_round(self, round_id: str, with_events: bool = True) -> RoundView: ...
    def legal_commands(self, round_id: str, seat: int | None = None) -> tuple[str, ...]: ...
    def read_notifications(self, after: int = 0, limit: int = 1000) -> Sequence[Notification]: ...
    def verify_round(self, round_id: str, check_wallets: bool = True) -> Any: ...
    def replay_round(self, round_id: str) -> tuple[Any, list[Any]]: ...
    def export_bundle(self, round_id: str) -> dict[str, Any]: ...


class RecentRounds(Protocol):
    """A read model that lists closed rounds (``pokdeng_service.readmodels.ReadModels``)."""

    def last_rounds(self, table_id: str | None = None, player: str | None = None, limit: int = 10) -> Sequence[Any]:
        """Summaries with a ``round_id``, oldest first."""
        ...


# --- request validation ------------------------------------------------------------------------


class Fields:
    """Collects the field violations of one request; ``done()`` raises them all together."""

    def __init__(self) -> None:
        self.violations: list[FieldViolation] = []

    def bad(self, field: str, description: str) -> None:
        self.violations.append(FieldViolation(field, description))

    def ident(self, field: str, value: str, *, required: bool = True) -> str:
        if not value.strip():
            if required:
                self.bad(field, f"{field} is required (1 to {MAX_ID} characters)")
        elif len(value) > MAX_ID:
            self.bad(field, f"{field} has at most {MAX_ID} characters")
        elif any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
            self.bad(field, f"{field} may not contain control characters")
        return value

    def request_id(self, value: str) -> str:
        return self.ident("request_id", value)

    def positive(self, field: str, value: int) -> int:
        if value <= 0:
            self.bad(field, f"{field} must be a positive number of minor units")
        elif value > MAX_INT64:  # pragma: no cover - int64 on the wire
            self.bad(field, f"{field} is too large")
        return value

    def seat(self, field: str, value: int, *, banker: bool = False) -> int:
        low = 0 if banker else 1
        if not low <= value <= MAX_SEATS:
            self.bad(field, f"{field} must be {low} to {MAX_SEATS}")
        return value

    def text(self, field: str, value: str, *, most: int, required: bool) -> str:
        if required and not value.strip():
            self.bad(field, f"{field} is required (1 to {most} characters)")
        elif len(value) > most:
            self.bad(field, f"{field} has at most {most} characters")
        return value

    def between(self, field: str, value: int, low: int, high: int, default: int | None = None) -> int:
        if value == 0 and default is not None:
            return default
        if not low <= value <= high:
            self.bad(field, f"{field} must be {low} to {high}" + (" (0: the default)" if default is not None else ""))
        return value

    def done(self) -> None:
        if self.violations:
            raise RequestInvalid(self.violations)


# --- the event feed's wake-ups -----------------------------------------------------------------


class EventHub:
    """Wakes event subscribers when this server records something; subscribers also poll (other writers)."""

    def __init__(self, max_subscribers: int) -> None:
        self._condition = threading.Condition()
        self._generation = 0
        self._subscribers = 0
        self.max_subscribers = max_subscribers
        self.closing = threading.Event()

    @property
    def generation(self) -> int:
        return self._generation

    def notify(self) -> None:
        with self._condition:
            self._generation += 1
            self._condition.notify_all()

    def wait(self, generation: int, timeout: float) -> None:
        with self._condition:
            self._condition.wait_for(lambda: self._generation != generation or self.closing.is_set(), timeout)

    def close(self) -> None:
        self.closing.set()
        self.notify()

    def enter(self) -> None:
        with self._condition:
            if self._subscribers >= self.max_subscribers:
                raise ResourceExhausted(
                    f"this server serves at most {self.max_subscribers} event subscriptions at once",
                    limit=str(self.max_subscribers),
                )
            self._subscribers += 1

    def leave(self) -> None:
        with self._condition:
            self._subscribers -= 1


# --- plumbing shared by every servicer ---------------------------------------------------------

Request = TypeVar("Request")
Response = TypeVar("Response")
Handler = Callable[[Any, Request, grpc.ServicerContext], Response]


def _check_deadline(context: grpc.ServicerContext) -> None:
    remaining = context.time_remaining()
    if remaining is not None and remaining <= 0:
        raise DeadlineExpired("the call's deadline passed before it could run")


def unary(method: Handler[Request, Response]) -> Handler[Request, Response]:
    """Run a unary RPC: deadline check, then the body; any error ends the call through the error map."""

    @functools.wraps(method)
    def run(self: Any, request: Request, context: grpc.ServicerContext) -> Response:
        try:
            _check_deadline(context)
            return method(self, request, context)
        except Exception as exc:  # every error is mapped, unknown ones to INTERNAL
            error = exc
        abort(context, error)

    return run


def streaming(
    method: Callable[[Any, Request, grpc.ServicerContext], Iterator[Response]],
) -> Callable[[Any, Request, grpc.ServicerContext], Iterator[Response]]:
    @functools.wraps(method)
    def run(self: Any, request: Request, context: grpc.ServicerContext) -> Iterator[Response]:
        try:
            _check_deadline(context)
            yield from method(self, request, context)
            return
        except Exception as exc:
            error = exc
        abort(context, error)

    return run


class _Base:
    def __init__(self, app: Application, authenticator: Authenticator, hub: EventHub) -> None:
        self.app = app
        self.auth = authenticator
        self.hub = hub

    def principal(self, context: grpc.ServicerContext) -> Principal:
        return self.auth.of(context)

    def _done(self, result: CommandResult, context: grpc.ServicerContext) -> None:
        context.set_trailing_metadata(((REPLAYED, "true" if result.replayed else "false"),))
        if not result.replayed:
            self.hub.notify()

    @staticmethod
    def _viewer(principal: Principal) -> str | None:
        """The player whose view of a round applies, or None for operators and auditors (they see everything)."""
        return principal.player if principal.role is Role.PLAYER else None

    def _round_response(self, result: CommandResult, principal: Principal) -> pb.RoundCommandResponse:
        view = self.app.get_round(result.id)
        seen = convert.visibility_for(self._viewer(principal), view)
        return pb.RoundCommandResponse(
            request_id=result.request_id,
            events=convert.recorded_events(result.events, seen),
            round=convert.round_(view, seen, with_events=False),
        )

    def _table_response(self, result: CommandResult) -> pb.TableCommandResponse:
        return pb.TableCommandResponse(
            request_id=result.request_id,
            events=convert.recorded_events(result.events),
            table=convert.table(self.app.get_table(result.id)),
        )

    def _readable_round(self, principal: Principal, round_id: str) -> RoundView:
        """The round, if the caller may read it: a player only a round it takes part in."""
        view = self.app.get_round(round_id)
        if principal.role is Role.PLAYER and principal.player not in convert.participants(view):
            raise PermissionDenied(f"{principal.describe()} takes no part in round {round_id!r}", round=round_id)
        return view


# --- Wallets ---------------------------------------------------------------------------------


class WalletsServicer(_Base, pb_grpc.WalletsServicer):
    def _response(self, result: CommandResult, context: grpc.ServicerContext) -> pb.WalletCommandResponse:
        self._done(result, context)
        return pb.WalletCommandResponse(
            request_id=result.request_id,
            events=convert.recorded_events(result.events),
            wallet=convert.wallet(self.app.get_wallet(result.id)),
        )

    @unary
    def OpenWallet(self, request: pb.OpenWalletRequest, context: grpc.ServicerContext) -> pb.WalletCommandResponse:
        f = Fields()
        f.request_id(request.request_id)
        f.ident("wallet_id", request.wallet_id)
        f.done()
        return self._response(self.app.open_wallet(request.request_id, request.wallet_id), context)

    @unary
    def Deposit(self, request: pb.DepositRequest, context: grpc.ServicerContext) -> pb.WalletCommandResponse:
        return self._move_money(request, context, self.app.deposit)

    @unary
    def Withdraw(self, request: pb.WithdrawRequest, context: grpc.ServicerContext) -> pb.WalletCommandResponse:
        return self._move_money(request, context, self.app.withdraw)

    def _move_money(
        self, request: Any, context: grpc.ServicerContext, move: Callable[[str, str, int], CommandResult]
    ) -> pb.WalletCommandResponse:
        f = Fields()
        f.request_id(request.request_id)
        f.ident("wallet_id", request.wallet_id)
        f.positive("amount", request.amount)
        f.done()
        return self._response(move(request.request_id, request.wallet_id, request.amount), context)

    @unary
    def GetWallet(self, request: pb.GetWalletRequest, context: grpc.ServicerContext) -> pb.Wallet:
        f = Fields()
        f.ident("wallet_id", request.wallet_id)
        f.done()
        require_player(self.principal(context), request.wallet_id, "read the wallet", read=True)
        return convert.wallet(self.app.get_wallet(request.wallet_id))

    @unary
    def GetStatement(self, request: pb.GetStatementRequest, context: grpc.ServicerContext) -> pb.WalletStatement:
        f = Fields()
        f.ident("wallet_id", request.wallet_id)
        limit = f.between("limit", request.limit, 1, 1000, default=100)
        if request.after < 0:
            f.bad("after", "after must not be negative")
        f.done()
        require_player(self.principal(context), request.wallet_id, "read the statement", read=True)
        lines = self.app.wallet_statement(request.wallet_id, after=request.after, limit=limit)
        return convert.statement(request.wallet_id, lines, request.after)


# --- Tables ----------------------------------------------------------------------------------


class TablesServicer(_Base, pb_grpc.TablesServicer):
    def _table(self, result: CommandResult, context: grpc.ServicerContext) -> pb.TableCommandResponse:
        self._done(result, context)
        return self._table_response(result)

    def _round(
        self, result: CommandResult, context: grpc.ServicerContext, principal: Principal
    ) -> pb.RoundCommandResponse:
        self._done(result, context)
        return self._round_response(result, principal)

    @unary
    def OpenTable(self, request: pb.OpenTableRequest, context: grpc.ServicerContext) -> pb.TableCommandResponse:
        f = Fields()
        f.request_id(request.request_id)
        f.ident("table_id", request.table_id)
        profile = convert.PROFILE_FROM_PB.get(int(request.profile))
        if profile is None:
            f.bad("profile", "choose a profile: PROFILE_CLASSIC, PROFILE_ANTE, PROFILE_ROOM or PROFILE_KINGMAKER")
        options: dict[str, bool] = {}
        if profile == "classic":
            options = {"straights": request.options.straights, "ace_low": request.options.ace_low}
            if request.options.ace_low and not request.options.straights:
                f.bad("options.ace_low", "ace_low needs straights")
        elif request.options.straights or request.options.ace_low:
            f.bad("options", "only classic tables take options")
        f.positive("min_stake", request.min_stake)
        f.positive("max_stake", request.max_stake)
        if 0 < request.max_stake < request.min_stake:
            f.bad("max_stake", "max_stake must be at least min_stake")
        seats = request.seats
        if profile == "ante":
            seats = seats or 5
        else:
            f.between("seats", seats, 1, MAX_SEATS)
        timeout = f.between("turn_timeout", request.turn_timeout, 1, MAX_TURN_TIMEOUT, default=30)
        dealer = None
        if request.HasField("dealer"):
            dealer = f.ident("dealer", request.dealer)
        f.done()
        assert profile is not None
        result = self.app.open_table(
            request.request_id,
            request.table_id,
            profile,
            options,
            min_stake=request.min_stake,
            max_stake=request.max_stake,
            seats=seats,
            dealer=dealer,
            turn_timeout=timeout,
        )
        return self._table(result, context)

    def _seat_fields(self, request: pb.TakeSeatRequest | pb.LeaveSeatRequest | pb.BidForBankerRequest) -> Fields:
        f = Fields()
        f.request_id(request.request_id)
        f.ident("table_id", request.table_id)
        f.ident("player", request.player)
        return f

    @unary
    def TakeSeat(self, request: pb.TakeSeatRequest, context: grpc.ServicerContext) -> pb.TableCommandResponse:
        f = self._seat_fields(request)
        f.seat("seat", request.seat)
        f.done()
        require_player(self.principal(context), request.player, "take a seat")
        return self._table(
            self.app.take_seat(request.request_id, request.table_id, request.player, request.seat), context
        )

    @unary
    def LeaveSeat(self, request: pb.LeaveSeatRequest, context: grpc.ServicerContext) -> pb.TableCommandResponse:
        f = self._seat_fields(request)
        seat = f.seat("seat", request.seat) if request.HasField("seat") else None
        f.done()
        require_player(self.principal(context), request.player, "leave a seat")
        return self._table(self.app.leave_seat(request.request_id, request.table_id, request.player, seat), context)

    @unary
    def BidForBanker(self, request: pb.BidForBankerRequest, context: grpc.ServicerContext) -> pb.TableCommandResponse:
        f = self._seat_fields(request)
        f.between("rounds", request.rounds, 0, 1000)
        f.done()
        require_player(self.principal(context), request.player, "bid for banker")
        result = self.app.bid_for_banker(request.request_id, request.table_id, request.player, request.rounds)
        return self._table(result, context)

    @unary
    def CloseBankerBid(
        self, request: pb.CloseBankerBidRequest, context: grpc.ServicerContext
    ) -> pb.TableCommandResponse:
        f = Fields()
        f.request_id(request.request_id)
        f.ident("table_id", request.table_id)
        f.done()
        return self._table(self.app.close_banker_bid(request.request_id, request.table_id), context)

    @unary
    def DisconnectBanker(
        self, request: pb.DisconnectBankerRequest, context: grpc.ServicerContext
    ) -> pb.TableCommandResponse:
        f = Fields()
        f.request_id(request.request_id)
        f.ident("table_id", request.table_id)
        f.ident("player", request.player)
        f.done()
        result = self.app.disconnect_banker(request.request_id, request.table_id, request.player)
        return self._table(result, context)

    @unary
    def CheckpointTable(
        self, request: pb.CheckpointTableRequest, context: grpc.ServicerContext
    ) -> pb.TableCommandResponse:
        f = Fields()
        f.request_id(request.request_id)
        f.ident("table_id", request.table_id)
        f.text("period", request.period, most=MAX_ID, required=False)
        f.done()
        result = self.app.checkpoint_table(request.request_id, request.table_id, request.period)
        return self._table(result, context)

    @unary
    def StartRound(self, request: pb.StartRoundRequest, context: grpc.ServicerContext) -> pb.RoundCommandResponse:
        f = Fields()
        f.request_id(request.request_id)
        f.ident("table_id", request.table_id)
        f.text("client_seed", request.client_seed, most=MAX_CLIENT_SEED, required=False)
        f.done()
        result = self.app.start_round(request.request_id, request.table_id, request.client_seed)
        return self._round(result, context, self.principal(context))

    def _round_fields(self, request: Any, *, seat: bool = False, player: bool = False) -> Fields:
        f = Fields()
        f.request_id(request.request_id)
        f.ident("round_id", request.round_id)
        if seat:
            f.seat("seat", request.seat)
        if player:
            f.ident("player", request.player)
        return f

    @unary
    def PlaceBet(self, request: pb.PlaceBetRequest, context: grpc.ServicerContext) -> pb.RoundCommandResponse:
        f = self._round_fields(request, seat=True, player=True)
        f.positive("stake", request.stake)
        f.done()
        principal = self.principal(context)
        require_player(principal, request.player, "place a bet")
        result = self.app.place_bet(request.request_id, request.round_id, request.seat, request.player, request.stake)
        return self._round(result, context, principal)

    @unary
    def Deal(self, request: pb.DealRequest, context: grpc.ServicerContext) -> pb.RoundCommandResponse:
        self._round_fields(request).done()
        return self._round(self.app.deal(request.request_id, request.round_id), context, self.principal(context))

    @unary
    def PlaceSideBet(self, request: pb.PlaceSideBetRequest, context: grpc.ServicerContext) -> pb.RoundCommandResponse:
        self._round_fields(request, seat=True, player=True).done()
        principal = self.principal(context)
        require_player(principal, request.player, "place a side bet")
        result = self.app.place_side_bet(request.request_id, request.round_id, request.seat, request.player)
        return self._round(result, context, principal)

    @unary
    def CloseSideBets(self, request: pb.CloseSideBetsRequest, context: grpc.ServicerContext) -> pb.RoundCommandResponse:
        self._round_fields(request).done()
        result = self.app.close_side_bets(request.request_id, request.round_id)
        return self._round(result, context, self.principal(context))

    @unary
    def Draw(self, request: pb.DrawRequest, context: grpc.ServicerContext) -> pb.RoundCommandResponse:
        self._round_fields(request, seat=True, player=True).done()
        principal = self.principal(context)
        require_player(principal, request.player, "draw")
        result = self.app.draw(request.request_id, request.round_id, request.seat, request.player)
        return self._round(result, context, principal)

    @unary
    def Stay(self, request: pb.StayRequest, context: grpc.ServicerContext) -> pb.RoundCommandResponse:
        self._round_fields(request, seat=True, player=True).done()
        principal = self.principal(context)
        require_player(principal, request.player, "stay")
        result = self.app.stay(request.request_id, request.round_id, request.seat, request.player)
        return self._round(result, context, principal)

    def _banker(self, principal: Principal, round_id: str, player: str) -> str | None:
        """The banker argument for the app; a player token must be this round's player-banker itself."""
        if principal.role is not Role.PLAYER:
            return player or None
        if player != principal.player:
            raise PermissionDenied(f"{principal.describe()} may only play the banker's hand as itself", player=player)
        if self.app.round_state(round_id).banker_player != principal.player:
            raise PermissionDenied(f"{principal.describe()} is not the banker of round {round_id!r}", round=round_id)
        return player

    @unary
    def BankerReveal(self, request: pb.BankerRevealRequest, context: grpc.ServicerContext) -> pb.RoundCommandResponse:
        f = self._round_fields(request)
        if not request.seats:
            f.bad("seats", "name one or more seats to reveal")
        elif len(request.seats) > MAX_REVEAL:  # one violation, not one per seat: the trailers stay small
            f.bad("seats", f"name at most {MAX_REVEAL} seats to reveal")
        else:
            for i, seat in enumerate(request.seats):
                f.seat(f"seats[{i}]", seat)
        if len(set(request.seats)) != len(request.seats):
            f.bad("seats", "the seats must be distinct")
        f.ident("player", request.player, required=False)
        f.done()
        principal = self.principal(context)
        banker = self._banker(principal, request.round_id, request.player)
        result = self.app.banker_reveal(request.request_id, request.round_id, list(request.seats), banker)
        return self._round(result, context, principal)

    @unary
    def BankerDraw(self, request: pb.BankerDrawRequest, context: grpc.ServicerContext) -> pb.RoundCommandResponse:
        f = self._round_fields(request)
        f.ident("player", request.player, required=False)
        f.done()
        principal = self.principal(context)
        banker = self._banker(principal, request.round_id, request.player)
        return self._round(self.app.banker_draw(request.request_id, request.round_id, banker), context, principal)

    @unary
    def BankerStay(self, request: pb.BankerStayRequest, context: grpc.ServicerContext) -> pb.RoundCommandResponse:
        f = self._round_fields(request)
        f.ident("player", request.player, required=False)
        f.done()
        principal = self.principal(context)
        banker = self._banker(principal, request.round_id, request.player)
        return self._round(self.app.banker_stay(request.request_id, request.round_id, banker), context, principal)

    @unary
    def TimeOutTurn(self, request: pb.TimeOutTurnRequest, context: grpc.ServicerContext) -> pb.RoundCommandResponse:
        f = self._round_fields(request)
        expected = None
        if request.HasField("expected_version"):
            expected = f.between("expected_version", request.expected_version, 1, MAX_INT64)
        f.done()
        result = self.app.time_out_turn(request.request_id, request.round_id, expected)
        return self._round(result, context, self.principal(context))

    @unary
    def VoidRound(self, request: pb.VoidRoundRequest, context: grpc.ServicerContext) -> pb.RoundCommandResponse:
        f = self._round_fields(request)
        f.text("reason", request.reason, most=MAX_REASON, required=True)
        f.done()
        result = self.app.void_round(request.request_id, request.round_id, request.reason)
        return self._round(result, context, self.principal(context))


# --- Queries ---------------------------------------------------------------------------------


class QueriesServicer(_Base, pb_grpc.QueriesServicer):
    def __init__(
        self, app: Application, authenticator: Authenticator, hub: EventHub, recent: RecentRounds | None = None
    ) -> None:
        super().__init__(app, authenticator, hub)
        self.recent = recent

    @unary
    def GetTable(self, request: pb.GetTableRequest, context: grpc.ServicerContext) -> pb.Table:
        f = Fields()
        f.ident("table_id", request.table_id)
        f.done()
        return convert.table(self.app.get_table(request.table_id))

    @unary
    def GetRound(self, request: pb.GetRoundRequest, context: grpc.ServicerContext) -> pb.Round:
        f = Fields()
        f.ident("round_id", request.round_id)
        f.done()
        principal = self.principal(context)
        view = self._readable_round(principal, request.round_id)
        return convert.round_(view, convert.visibility_for(self._viewer(principal), view))

    @unary
    def GetLegalCommands(self, request: pb.GetLegalCommandsRequest, context: grpc.ServicerContext) -> pb.LegalCommands:
        f = Fields()
        f.ident("round_id", request.round_id)
        seat = f.seat("seat", request.seat, banker=True) if request.HasField("seat") else None
        f.done()
        principal = self.principal(context)
        state = self.app.round_state(request.round_id)
        if principal.role is Role.PLAYER:
            if seat is None:
                raise PermissionDenied(
                    f"{principal.describe()} may ask only about its own seats", round=request.round_id
                )
            holder = state.banker_player if seat == 0 else dict(state.seats).get(seat)
            if holder != principal.player:
                raise PermissionDenied(f"seat {seat} is not held by {principal.describe()}", seat=str(seat))
        answer = pb.LegalCommands(
            round_id=request.round_id,
            phase=convert.PHASE_TO_PB.get(state.phase.value, pb.ROUND_PHASE_UNSPECIFIED),
            commands=list(self.app.legal_commands(request.round_id, seat)),
        )
        if seat is not None:
            answer.seat = seat
        return answer

    @unary
    def ListRecentRounds(
        self, request: pb.ListRecentRoundsRequest, context: grpc.ServicerContext
    ) -> pb.ListRecentRoundsResponse:
        f = Fields()
        f.ident("table_id", request.table_id, required=False)
        f.ident("player", request.player, required=False)
        limit = f.between("limit", request.limit, 1, 100, default=10)
        f.done()
        principal = self.principal(context)
        player = request.player or None
        if principal.role is Role.PLAYER:
            if player is not None and player != principal.player:
                raise PermissionDenied(f"{principal.describe()} may list only its own rounds", player=player)
            player = principal.player
        views = self._recent(request.table_id or None, player, limit)
        viewer = self._viewer(principal)
        return pb.ListRecentRoundsResponse(rounds=[convert.round_(v, convert.visibility_for(viewer, v)) for v in views])

    def _recent(self, table_id: str | None, player: str | None, limit: int) -> list[RoundView]:
        """The last closed rounds, newest first: from the read models, else by walking the table's rounds."""
        if self.recent is not None:
            summaries = self.recent.last_rounds(table_id=table_id, player=player, limit=limit)
            return [self.app.get_round(s.round_id) for s in reversed(summaries)]
        if table_id is None:
            raise RequestInvalid([FieldViolation("table_id", "name the table (this server has no round index)")])
        table = self.app.get_table(table_id)
        out: list[RoundView] = []
        for number in range(table.round_no, 0, -1):  # a table's rounds are "<table_id>#<n>"
            try:
                view = self.app.get_round(f"{table_id}#{number}")
            except NotFound:
                continue
            if view.phase != "closed":
                continue
            if player is None or player in convert.stakeholders(view):
                out.append(view)
                if len(out) == limit:
                    break
        return out


# --- Audit -----------------------------------------------------------------------------------


class AuditServicer(_Base, pb_grpc.AuditServicer):
    def _auditable(self, request: Any, context: grpc.ServicerContext) -> str:
        f = Fields()
        f.ident("round_id", request.round_id)
        f.done()
        principal = self.principal(context)
        if principal.role is Role.PLAYER:
            view = self._readable_round(principal, request.round_id)
            if view.phase != "closed":
                raise WrongPhase(f"round {request.round_id} is still open: a player audits closed rounds")
        return str(request.round_id)

    @unary
    def ReplayRound(self, request: pb.ReplayRoundRequest, context: grpc.ServicerContext) -> pb.ReplayRoundResponse:
        round_id = self._auditable(request, context)
        verdict, replayed = self.app.replay_round(round_id)
        return convert.replay(round_id, verdict, replayed)

    @unary
    def VerifyRound(self, request: pb.VerifyRoundRequest, context: grpc.ServicerContext) -> pb.Verdict:
        round_id = self._auditable(request, context)
        return convert.verdict(round_id, self.app.verify_round(round_id))

    @unary
    def ExportRound(self, request: pb.ExportRoundRequest, context: grpc.ServicerContext) -> pb.RoundBundle:
        round_id = self._auditable(request, context)
        bundle = self.app.export_bundle(round_id)
        return pb.RoundBundle(
            round_id=round_id,
            bundle_json=audit.bundle_bytes(bundle).decode("utf-8"),
            bundle_digest=str(bundle.get("bundle_digest", "")),
        )

    @unary
    def GetInclusionProof(
        self, request: pb.GetInclusionProofRequest, context: grpc.ServicerContext
    ) -> pb.InclusionProof:
        round_id = self._auditable(request, context)
        proof = self.app.inclusion_proof(round_id)
        if proof is None:
            raise NotFound(f"no checkpoint covers round {round_id!r} yet", round=round_id)
        return pb.InclusionProof(
            round_id=round_id,
            table_id=str(proof["table_id"]),
            period=str(proof["period"]),
            checkpoint_position=int(proof["checkpoint_position"]),
            checkpoint_digest=str(proof["checkpoint_digest"]),
            root=str(proof["root"]),
            size=int(proof["size"]),
            index=int(proof["index"]),
            leaf=str(proof["leaf"]),
            path=[str(h) for h in proof["path"]],
        )


# --- Events ----------------------------------------------------------------------------------


class EventsServicer(_Base, pb_grpc.EventsServicer):
    def __init__(
        self, app: Application, authenticator: Authenticator, hub: EventHub, *, poll: float, heartbeat: float
    ) -> None:
        super().__init__(app, authenticator, hub)
        self.poll = poll
        self.heartbeat = heartbeat

    @streaming
    def SubscribeEvents(
        self, request: pb.SubscribeEventsRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.EventBatch]:
        f = Fields()
        if not 0 <= request.after_position < MAX_POSITION:
            f.bad("after_position", f"after_position is 0 to {MAX_POSITION - 1}")
        batch = f.between("batch_size", request.batch_size, 1, 1000, default=100)
        partitions = len(getattr(self.app, "apps", ())) or 1  # a partitioned front has one app per store
        f.between("partition", request.partition, 0, partitions - 1)
        f.done()
        self.hub.enter()
        try:
            yield from self._follow(request.after_position, batch, request.stop_at_head, request.partition, context)
        finally:
            self.hub.leave()

    def _read(self, after: int, batch: int, partition: int) -> Sequence[Notification]:
        if partition:
            items: Sequence[Notification] = self.app.read_notifications(after, batch, partition=partition)  # type: ignore[call-arg]
            return items
        return self.app.read_notifications(after, batch)

    def _follow(
        self, after: int, batch: int, stop_at_head: bool, partition: int, context: grpc.ServicerContext
    ) -> Iterator[pb.EventBatch]:
        told_caught_up = False
        last_sent = time.monotonic()
        while context.is_active():
            if self.hub.closing.is_set():
                raise Unavailable(f"the server is shutting down: resume after position {after}", position=str(after))
            generation = self.hub.generation
            items = self._read(after, batch, partition)
            if items:
                after = items[-1].position
                caught_up = len(items) < batch
                yield pb.EventBatch(
                    events=[convert.notification(n) for n in items],
                    last_position=after,
                    caught_up=caught_up,
                    partition=partition,
                )
                told_caught_up, last_sent = caught_up, time.monotonic()
                if not caught_up:
                    continue
            elif not told_caught_up or time.monotonic() - last_sent >= self.heartbeat:
                yield pb.EventBatch(last_position=after, caught_up=True, partition=partition)  # or a heartbeat
                told_caught_up, last_sent = True, time.monotonic()
            if stop_at_head:
                return
            self.hub.wait(generation, self.poll)
