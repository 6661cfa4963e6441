"""Model-based test through the gRPC API, with access control under fuzzing.

The same idea as ``test_model_application``, over a real server on loopback (POPO store,
fixed tokens): a hypothesis state machine sends random sequences of valid and invalid
commands of every kind, each with a caller chosen among the operator, the player the
request names, another player, the auditor, no token and a forged token. The invariants of
``model.ModelBase`` (money, reservations, closed rounds verify, no orphan round) are checked
after every step, and besides:

* no call ever ends with UNKNOWN or INTERNAL, and a refused call writes nothing and changes
  no view (the application's ``max_position`` and every wallet, table and open round);
* no token, or a forged one: UNAUTHENTICATED; the auditor's commands: PERMISSION_DENIED;
  a player token on an operator's command: PERMISSION_DENIED;
* a player token acting for another player (seat, bet, side bet, draw, stay, banker bid,
  the banker's hand, another's wallet or statement, another's seat's legal commands, a
  round it takes no part in): PERMISSION_DENIED, nothing written;
* whatever a player token gets accepted names that player, and touches no other player's
  seat (a seat command changes that player's seats only; a bet reserves in that player's
  wallet and the player-banker's cover only);
* the event feed is the operator's and the auditor's only, delivers every position once and
  in order, and carries no server seed of a round not yet closed;
* a player reading an open round (or answered by its own round command) sees no card of a
  hand it may not see yet, neither in the hands nor in the events' payloads.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

import grpc
import pytest
from google.protobuf.message import Message
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule, run_state_machine_as_test

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_core.round_state import BANKER, Phase, RoundState
from pokdeng_service.api.convert import participants
from pokdeng_service.api.errors import details_of
from pokdeng_service.api.server import create_server
from pokdeng_service.application import PokdengApp
from pokdeng_service.auth import METHOD_ROLES, Role
from pokdeng_service.store.vault import SeedVault
from pokdeng_testkit.keys import VAULT_KEY
from tests.api.client import COMMANDS, TOKENS, Api
from tests.api.conftest import token_store
from tests.needs import long_run

from .model import ModelBase, Seeds, view_or_none

Code = grpc.StatusCode
PLAYERS = ("alice", "bob", "carol", "dave")
LATE = "erin"  # has a token; a wallet the rules may open
GHOST = "ghost"  # no token, no wallet
WALLET_POOL = (*PLAYERS, LATE, GHOST)
TABLE_POOL = ("c1", "c2", "a1", "r1", "k1", "t9")
REFUSALS = frozenset(
    {
        Code.INVALID_ARGUMENT,
        Code.FAILED_PRECONDITION,
        Code.NOT_FOUND,
        Code.ALREADY_EXISTS,
        Code.PERMISSION_DENIED,
        Code.UNAUTHENTICATED,
    }
)
CALLERS = ("operator", "self", "self", "other", "auditor", "anon", "forged")
PICK = st.integers(0, 2**16)
PLAYER_METHODS = frozenset(  # the commands a player token may send (for itself): table and round commands
    name.rsplit("/", 1)[1]
    for name, roles in METHOD_ROLES.items()
    if Role.PLAYER in roles and name.rsplit("/", 1)[1] in COMMANDS
)
BANKER_METHODS = frozenset({"BankerReveal", "BankerDraw", "BankerStay"})
ROUND_METHODS = ("PlaceBet", "Deal", "PlaceSideBet", "CloseSideBets", "Draw", "Stay", *sorted(BANKER_METHODS))
ROUND_METHODS += ("TimeOutTurn", "VoidRound")

STATS: Counter[str] = Counter()


def service_of(method: str) -> str:
    for name in METHOD_ROLES:
        if name.endswith(f"/{method}"):
            return name.split(".v1.", 1)[1].split("/", 1)[0]
    raise KeyError(method)


@dataclass(frozen=True)
class Sent:
    caller: str
    method: str
    request: Message
    response: Message


class GrpcModel(ModelBase):
    """A server over one application; every call goes through the API with some caller's token."""

    wallet_pool = WALLET_POOL
    table_pool = TABLE_POOL
    stats = STATS

    def __init__(self) -> None:
        super().__init__()
        self.app = PokdengApp({"PERSISTENCE_MODULE": "eventsourcing.popo"}, vault=SeedVault.from_hex(VAULT_KEY))
        self.server, port = create_server("127.0.0.1:0", self.app, tokens=token_store(), max_workers=2)
        self.server.start()
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        ids: Iterator[int] = itertools.count(1)
        self.apis = {who: Api(self.channel, TOKENS[who], ids=ids, prefix=who) for who in TOKENS}
        self.apis["anon"] = Api(self.channel, None, ids=ids, prefix="anon")
        self.apis["forged"] = Api(self.channel, "operator-token-0123456788", ids=ids, prefix="forged")
        self.sent: list[Sent] = []

    def teardown(self) -> None:
        try:
            self.final_audit()
        finally:
            self.channel.close()
            self.server.stop(None).wait(10)
            self.app.close()

    # -- calls -----------------------------------------------------------------------------------

    def who(self, caller: str, player: str) -> str:
        """The token a caller mode stands for, given the player the request names."""
        if caller == "self":
            return player if player in TOKENS else "operator"
        if caller == "other":
            return next(p for p in (*PLAYERS, LATE) if p != player)
        return caller

    def expected(self, who: str, method: str, player: str | None) -> frozenset[Code] | None:
        """What access control alone decides for this caller (None: the rules decide)."""
        if who in ("anon", "forged"):
            return frozenset({Code.UNAUTHENTICATED})
        if who == "auditor":
            return frozenset({Code.PERMISSION_DENIED})
        if who == "operator":
            return None
        if method not in PLAYER_METHODS:
            return frozenset({Code.PERMISSION_DENIED})
        if method in BANKER_METHODS:
            return None  # decided below, against the round's banker
        if player != who:  # the fields may be refused first when they are malformed
            return frozenset({Code.PERMISSION_DENIED, Code.INVALID_ARGUMENT})
        return None

    def call(self, who: str, method: str, request: Message, expect: Any = None) -> Any:
        """Send a command; returns the response, or the status code of a refusal (which must change nothing).

        ``expect``: None (anything allowed), "ok", or a set of status codes the refusal must have."""
        api = self.apis[who]
        if "request_id" in request.DESCRIPTOR.fields_by_name and not request.request_id:  # type: ignore[attr-defined]
            request.request_id = api.next_id()  # type: ignore[attr-defined]
        player = getattr(request, "player", None)
        decided = self.expected(who, method, player)
        if decided is not None:
            expect = decided
        before = self.world()
        try:
            response, rpc = api.method(service_of(method), method).with_call(request, metadata=api.metadata, timeout=30)
        except grpc.RpcError as error:
            code = error.code()
            assert code in REFUSALS, f"{method} by {who}: {code} {details_of(error).message} ({request})"
            if method == "StartRound" and self.app.max_position > before.position:
                return self._start_refused(api, error, before, request)
            after = self.read_world()
            assert after.position == before.position, f"refused {method} by {who} wrote events ({code})"
            assert after == before, f"refused {method} by {who} changed a view ({code})"
            assert expect != "ok", f"{method} by {who} refused: {code} {details_of(error).message} ({request})"
            if isinstance(expect, frozenset):
                assert code in expect, f"{method} by {who}: {code}, expected {set(expect)} ({request})"
            STATS[f"{code.name}:{method}"] += 1
            return code
        self.changed()
        assert not isinstance(expect, frozenset), f"{method} by {who} accepted, expected {set(expect)} ({request})"
        replayed = dict(rpc.trailing_metadata() or ()).get("pokdeng-replayed")
        assert replayed in ("true", "false"), replayed
        after = self.world()
        if replayed == "true":
            assert after == before, f"a replayed {method} changed something"
            STATS[f"replayed:{method}"] += 1
            return response
        assert after.position > before.position, f"{method} accepted but wrote nothing"
        if who in TOKENS and who not in ("operator", "auditor"):
            self._check_player_call(who, method, request, before, after)
            if service_of(method) == "RoundService":  # what the player's own round command shows it
                view = self.app.get_round(response.round.round_id)
                self._hidden_cards(who, view, response.round.hands, response.events)
        STATS[f"ok:{method}"] += 1
        STATS[f"ok by {'player' if who in PLAYERS or who == LATE else who}"] += 1
        self.sent.append(Sent(who, method, request, response))
        self._record(method, request, response)
        self.changed()  # (the world's rounds follow the model's record, just updated)
        return response

    def _start_refused(self, api: Api, error: grpc.RpcError, before: Any, request: Any) -> Any:
        """The refusals that record (a room's start: its banker cannot cover the round, or every player was
        short of funds): no round opened, and the same request sent again is refused and writes nothing."""
        code, reason = error.code(), details_of(error).reason
        assert code == Code.FAILED_PRECONDITION and reason in ("BANKER_CANNOT_COVER", "RULE_VIOLATION"), (code, reason)

        def retry() -> None:
            with pytest.raises(grpc.RpcError) as again:  # no banker now, or nobody seated
                api.method("RoundService", "StartRound").with_call(request, metadata=api.metadata, timeout=30)
            assert again.value.code() == Code.FAILED_PRECONDITION

        self.check_start_refused(before, request.table_id, reason == "BANKER_CANNOT_COVER", retry)
        STATS[f"refused-recorded:StartRound:{reason}"] += 1
        return code

    def _check_player_call(self, who: str, method: str, request: Any, before: Any, after: Any) -> None:
        """What a player token got accepted is its own business."""
        assert method in PLAYER_METHODS, method
        assert request.player == who, f"{who} got {method} accepted for {request.player!r}"
        if method in BANKER_METHODS:
            assert self.app.round_state(request.round_id).banker_player == who
        if method in ("TakeSeat", "LeaveSeat", "BidForBanker"):
            old, new = before.table(request.table_id), after.table(request.table_id)
            moved = {(s.seat, s.player) for s in old.seats} ^ {(s.seat, s.player) for s in new.seats}
            assert all(p == who for _s, p in moved), f"{who}'s {method} moved {moved}"
            assert old.banker == new.banker or old.banker == who, (old.banker, new.banker)
            assert before.wallets == after.wallets, f"{who}'s {method} changed a wallet"
        if method in ("PlaceBet", "PlaceSideBet"):
            banker = self.app.round_state(request.round_id).banker_player
            touched = {w for (w, old), (_w, new) in zip(before.wallets, after.wallets, strict=True) if old != new}
            assert touched <= {who, banker}, f"{who}'s {method} touched {touched}"

    def _record(self, method: str, request: Any, response: Any) -> None:
        if method == "OpenWallet":
            self.flows[request.wallet_id] = 0
        elif method == "Deposit":
            self.flows[request.wallet_id] += request.amount
        elif method == "Withdraw":
            self.flows[request.wallet_id] -= request.amount
        elif method == "OpenTable":
            self.tables.add(request.table_id)
        elif method == "StartRound":
            self.rounds.append(response.round.round_id)

    # -- choosing --------------------------------------------------------------------------------

    def any_round(self, pick: int) -> str:
        open_ids = [r for r, _s in self.open_rounds()]
        if open_ids and pick % 4:
            return open_ids[pick % len(open_ids)]
        known = [*self.rounds, "c1#999"]
        return known[pick % len(known)]

    # -- set-up ----------------------------------------------------------------------------------

    @initialize(funds=st.tuples(*[st.sampled_from([200_000, 200_000, 30_000, 0])] * len(PLAYERS)))
    def setup(self, funds: tuple[int, ...]) -> None:
        for name, amount in zip(PLAYERS, funds, strict=True):
            self.call("operator", "OpenWallet", pb.OpenWalletRequest(wallet_id=name), expect="ok")
            if amount:
                self.call("operator", "Deposit", pb.DepositRequest(wallet_id=name, amount=amount), expect="ok")
        for table_id, profile, extra in (
            ("c1", pb.PROFILE_CLASSIC, {"seats": 6}),
            ("c2", pb.PROFILE_CLASSIC, {"seats": 4, "dealer": "dave"}),
            ("a1", pb.PROFILE_ANTE, {}),
            ("r1", pb.PROFILE_ROOM, {"seats": 5}),
            ("k1", pb.PROFILE_KINGMAKER, {"seats": 5}),
        ):
            request: Message = pb.OpenTableRequest(
                table_id=table_id, profile=profile, min_stake=100, max_stake=1000, **extra
            )
            self.call("operator", "OpenTable", request, expect="ok")
        for table_id, seated in (("c1", PLAYERS[:3]), ("c2", PLAYERS[:2]), ("r1", PLAYERS), ("k1", PLAYERS[1:])):
            for number, player in enumerate(seated, start=1):
                request = pb.TakeSeatRequest(table_id=table_id, player=player, seat=number)
                self.call(player, "TakeSeat", request, expect="ok")

    # -- wallets ---------------------------------------------------------------------------------

    @rule(
        method=st.sampled_from(["OpenWallet", "Deposit", "Withdraw"]),
        caller=st.sampled_from(CALLERS),
        wallet=st.sampled_from([*WALLET_POOL, "", "x" * 129]),
        amount=st.one_of(st.integers(1, 50_000), st.sampled_from([0, -1, 2**63 - 1, -(2**63)])),
    )
    def wallet_command(self, method: str, caller: str, wallet: str, amount: int) -> None:
        if method == "OpenWallet":
            request: Message = pb.OpenWalletRequest(wallet_id=LATE if wallet == GHOST else wallet)
        elif method == "Deposit":
            request = pb.DepositRequest(wallet_id=wallet, amount=amount)
        else:
            request = pb.WithdrawRequest(wallet_id=wallet, amount=amount)
        self.call(self.who(caller, wallet), method, request)

    # -- tables ----------------------------------------------------------------------------------

    @rule(
        method=st.sampled_from(["TakeSeat", "LeaveSeat", "BidForBanker"]),
        caller=st.sampled_from(CALLERS),
        table=st.sampled_from(TABLE_POOL),
        player=st.sampled_from([*WALLET_POOL, ""]),
        number=st.sampled_from([1, 2, 3, 4, 5, 0, 18, -1, 5, 10]),
        all_seats=st.booleans(),
    )
    def seat_command(self, method: str, caller: str, table: str, player: str, number: int, all_seats: bool) -> None:
        if method == "TakeSeat":
            request: Message = pb.TakeSeatRequest(table_id=table, player=player, seat=number)
        elif method == "LeaveSeat":
            request = pb.LeaveSeatRequest(table_id=table, player=player)
            if not all_seats:
                request.seat = number
        else:
            request = pb.BidForBankerRequest(table_id=table, player=player, rounds=number)
        self.call(self.who(caller, player), method, request)

    @rule(
        method=st.sampled_from(["OpenTable", "CloseBankerBid", "DisconnectBanker", "CheckpointTable", "StartRound"]),
        caller=st.sampled_from(["operator", "operator", "alice", "auditor", "anon"]),
        table=st.sampled_from(TABLE_POOL),
        profile=st.sampled_from([1, 2, 3, 4, 0, 99]),
        banker=st.booleans(),
    )
    def table_command(self, method: str, caller: str, table: str, profile: int, banker: bool) -> None:
        if method == "OpenTable":
            request: Message = pb.OpenTableRequest(
                table_id=table,
                profile=cast(pb.Profile.ValueType, profile),  # (0 and 99 too: no such profile)
                min_stake=100,
                max_stake=1000,
                seats=5,
            )
        elif method == "CloseBankerBid":
            request = pb.CloseBankerBidRequest(table_id=table)
        elif method == "DisconnectBanker":
            view = view_or_none(self.app.get_table, table)
            player = view.banker if banker and view is not None and view.banker else "alice"
            request = pb.DisconnectBankerRequest(table_id=table, player=player)
        elif method == "CheckpointTable":
            request = pb.CheckpointTableRequest(table_id=table)
        else:
            request = pb.StartRoundRequest(table_id=table, client_seed="fuzz")
        self.call(caller, method, request)

    # -- rounds ----------------------------------------------------------------------------------

    @rule(
        method=st.sampled_from(ROUND_METHODS),
        caller=st.sampled_from(CALLERS),
        pick=PICK,
        number=st.sampled_from([1, 2, 3, 4, 5, 0, 18]),
        player=st.sampled_from([*WALLET_POOL, ""]),
        stake=st.sampled_from([100, 500, 1000, 1001, 99, 0, -5, 2**63 - 1]),
    )
    def round_command(self, method: str, caller: str, pick: int, number: int, player: str, stake: int) -> None:
        round_id = self.any_round(pick)
        request: Message
        if method == "PlaceBet":
            request = pb.PlaceBetRequest(round_id=round_id, seat=number, player=player, stake=stake)
        elif method in ("PlaceSideBet", "Draw", "Stay"):
            cls = {"PlaceSideBet": pb.PlaceSideBetRequest, "Draw": pb.DrawRequest, "Stay": pb.StayRequest}[method]
            request = cls(round_id=round_id, seat=number, player=player)
        elif method == "BankerReveal":
            request = pb.BankerRevealRequest(round_id=round_id, seats=[number, (number + pick) % 6], player=player)
        elif method in ("BankerDraw", "BankerStay"):
            banker_cls: Any = pb.BankerDrawRequest if method == "BankerDraw" else pb.BankerStayRequest
            request = banker_cls(round_id=round_id, player=player)
        elif method == "VoidRound":
            request = pb.VoidRoundRequest(round_id=round_id, reason="fuzz" if pick % 5 else "")
        else:
            round_cls: Any = {"Deal": pb.DealRequest, "CloseSideBets": pb.CloseSideBetsRequest}.get(
                method, pb.TimeOutTurnRequest
            )
            request = round_cls(round_id=round_id)
        who = self.who(caller, player)
        expect: Any = None
        if method in BANKER_METHODS and who in TOKENS and who not in ("operator", "auditor"):
            banker = view_or_none(self.app.round_state, round_id)
            if banker is None or player != who or banker.banker_player != who:
                expect = frozenset({Code.PERMISSION_DENIED, Code.INVALID_ARGUMENT, Code.NOT_FOUND})
        self.call(who, method, request, expect)

    @precondition(lambda self: self.has_round())
    @rule(pick=PICK, method=st.sampled_from(["PlaceBet", "PlaceSideBet", "Draw", "Stay", "Banker", "LeaveSeat"]))
    def impersonate(self, pick: int, method: str) -> None:
        """A player token acting for another player with an otherwise well-formed request: PERMISSION_DENIED."""
        round_id, state = self.open_rounds()[pick % len(self.open_rounds())]
        held = [(s, h) for s, h in state.seats if h is not None] or [(1, "alice")]
        seat, victim = held[pick % len(held)]
        thief = next(p for p in (*PLAYERS, LATE) if p != victim)
        request: Message
        if method == "PlaceBet":
            request = pb.PlaceBetRequest(round_id=round_id, seat=seat, player=victim, stake=state.min_stake)
        elif method == "PlaceSideBet":
            request = pb.PlaceSideBetRequest(round_id=round_id, seat=seat, player=victim)
        elif method in ("Draw", "Stay"):
            seat = state.turn or seat
            victim = state.holder(seat) or victim
            thief = next(p for p in (*PLAYERS, LATE) if p != victim)
            cls = pb.DrawRequest if method == "Draw" else pb.StayRequest
            request = cls(round_id=round_id, seat=seat, player=victim)
        elif method == "Banker":
            banker = state.banker_player or ""
            thief = next(p for p in (*PLAYERS, LATE) if p != banker)
            request = pb.BankerStayRequest(round_id=round_id, player=banker)
            if pick % 2:  # or as itself, not being the banker
                request = pb.BankerDrawRequest(round_id=round_id, player=thief)
            method = request.DESCRIPTOR.name.removesuffix("Request")
        else:
            request = pb.LeaveSeatRequest(table_id=state.table_id, player=victim, seat=seat)
        self.call(thief, method, request, frozenset({Code.PERMISSION_DENIED}))

    # -- the game, played by the rules (the player's own token, the operator for the house) -----

    @rule(pick=PICK, choice=PICK, by_operator=st.booleans())
    def advance(self, pick: int, choice: int, by_operator: bool) -> None:
        targets: list[tuple[str, RoundState | None]] = [*self.open_rounds()]
        targets.extend((table_id, None) for table_id in self.idle_tables())
        if not targets:
            return
        target, state = targets[pick % len(targets)]
        if state is None:
            self._at_idle_table(target, choice)
        else:
            self._play(target, state, choice, by_operator)

    @rule(pick=PICK, choice=PICK, by_operator=st.booleans())
    def advance_again(self, pick: int, choice: int, by_operator: bool) -> None:
        self.advance(pick, choice, by_operator)

    @rule(pick=PICK, choice=PICK, by_operator=st.booleans())
    def advance_once_more(self, pick: int, choice: int, by_operator: bool) -> None:
        self.advance(pick, choice, by_operator)

    @rule(pick=PICK, choice=PICK)
    def advance_a_while(self, pick: int, choice: int) -> None:
        for step in range(4):
            self.advance(pick >> step, choice >> step, by_operator=bool(choice >> (step + 8) & 1))

    def _as(self, player: str | None, by_operator: bool) -> str:
        return "operator" if by_operator or player is None or player not in TOKENS else player

    def _at_idle_table(self, table_id: str, choice: int) -> None:
        view = self.app.get_table(table_id)
        seated = [s.player for s in view.seats]
        if view.profile == "room" and view.banker is None and seated:
            bidders = {b[0] for b in view.bids}
            free = [p for p in seated if p not in bidders]
            if free and choice % 3:
                bidder = free[choice % len(free)]
                request: Message = pb.BidForBankerRequest(
                    table_id=table_id, player=bidder, rounds=(10, 5, 0)[choice % 3]
                )
                self.call(self._as(bidder, False), "BidForBanker", request)
            else:
                self.call("operator", "CloseBankerBid", pb.CloseBankerBidRequest(table_id=table_id))
        elif choice % 7 == 0 and seated:
            player = seated[choice % len(seated)]
            request = pb.LeaveSeatRequest(table_id=table_id, player=player)
            self.call(self._as(player, False), "LeaveSeat", request, expect="ok")
        elif choice % 7 == 1 and view.profile != "ante":
            taken = {s.seat for s in view.seats}
            free_seats = [n for n in range(1, view.seat_count + 1) if n not in taken]
            newcomers = [p for p in self.flows if p not in seated and p not in (view.banker, view.dealer)]
            if free_seats and newcomers:
                player = newcomers[choice % len(newcomers)]
                request = pb.TakeSeatRequest(table_id=table_id, player=player, seat=free_seats[0])
                self.call(self._as(player, False), "TakeSeat", request)
        else:
            self.call("operator", "StartRound", pb.StartRoundRequest(table_id=table_id, client_seed=f"seed {choice}"))

    def _play(self, round_id: str, state: RoundState, choice: int, by_operator: bool) -> None:
        phase = state.phase
        if phase is Phase.BETTING:
            choices = self.bet_choices(state)
            if choices and (not state.bets or (choice % 3 and len(state.bets) < 3)):
                seat, player = choices[choice % len(choices)]
                request: Message = pb.PlaceBetRequest(
                    round_id=round_id, seat=seat, player=player, stake=state.min_stake
                )
                self.call(self._as(player, by_operator), "PlaceBet", request)
            else:
                self.call("operator", "Deal", pb.DealRequest(round_id=round_id), "ok" if state.bets else None)
        elif phase is Phase.SIDE_BETS:
            legal = [s for s, _h in state.seats if "place_side_bet" in self.app.legal_commands(round_id, s)]
            if legal and choice % 3:
                seat = legal[choice % len(legal)]
                holder = state.holder(seat)
                request = pb.PlaceSideBetRequest(round_id=round_id, seat=seat, player=holder or "")
                self.call(self._as(holder, by_operator), "PlaceSideBet", request)
            else:
                self.call("operator", "CloseSideBets", pb.CloseSideBetsRequest(round_id=round_id), "ok")
        elif phase is Phase.PLAYER_TURNS:
            turn = state.turn
            assert turn is not None
            holder = state.holder(turn)
            if choice % 7 == 0 or not self.app.legal_commands(round_id, turn):
                self.call("operator", "TimeOutTurn", pb.TimeOutTurnRequest(round_id=round_id), "ok")
            else:
                cls: Any = pb.DrawRequest if choice % 2 else pb.StayRequest
                method = "Draw" if choice % 2 else "Stay"
                decision = cls(round_id=round_id, seat=turn, player=holder or "")
                self.call(self._as(holder, by_operator), method, decision, "ok")
        elif phase is Phase.BANKER_TURN:
            banker_legal = self.app.legal_commands(round_id, BANKER)
            banker = state.banker_player
            who = self._as(banker, by_operator)
            waiting = [s for s in state.in_play if s not in state.revealed]
            if not banker_legal or choice % 11 == 0:
                self.call("operator", "TimeOutTurn", pb.TimeOutTurnRequest(round_id=round_id), "ok")
            elif "banker_reveal" in banker_legal and choice % 3 == 0 and waiting:
                chosen = [s for i, s in enumerate(waiting) if (choice >> (i + 2)) & 1] or waiting[:1]
                request = pb.BankerRevealRequest(round_id=round_id, seats=chosen, player=banker or "")
                self.call(who, "BankerReveal", request, "ok")
            else:
                method = "BankerDraw" if choice % 2 else "BankerStay"
                banker_cls: Any = pb.BankerDrawRequest if choice % 2 else pb.BankerStayRequest
                self.call(who, method, banker_cls(round_id=round_id, player=banker or ""), "ok")

    # -- request ids -----------------------------------------------------------------------------

    @precondition(lambda self: bool(self.sent))
    @rule(pick=PICK)
    def repeat_request(self, pick: int) -> None:
        """The same request again (same caller): answered as a retry with the first events, nothing written."""
        sent = self.sent[pick % len(self.sent)]
        response = self.call(sent.caller, sent.method, sent.request, "ok")
        assert response.request_id == sent.response.request_id  # type: ignore[attr-defined]
        assert list(response.events) == list(sent.response.events)  # type: ignore[attr-defined]

    @precondition(lambda self: bool(self.sent))
    @rule(pick=PICK)
    def reuse_request_id(self, pick: int) -> None:
        """A request id its caller used on a different command: INVALID_ARGUMENT (DUPLICATE_REQUEST),
        nothing written. (Request ids are scoped to their caller: another caller's ids are its own.)"""
        own = [s for s in self.sent if s.caller == "operator"]  # (ids are scoped: the operator's own)
        if not own:
            return
        sent = own[pick % len(own)]
        request_id = sent.request.request_id  # type: ignore[attr-defined]
        request = pb.DepositRequest(request_id=request_id, wallet_id=PLAYERS[pick % 4], amount=7_777_777 + pick)
        assert self.call("operator", "Deposit", request, frozenset({Code.INVALID_ARGUMENT})) is Code.INVALID_ARGUMENT

    # -- reads -----------------------------------------------------------------------------------

    @rule(pick=PICK, reader=st.sampled_from([*PLAYERS, LATE, "auditor", "operator", "anon"]))
    def read(self, pick: int, reader: str) -> None:
        """Reads under access control: a player reads its own wallet, seats and rounds only."""
        api = self.apis[reader]
        wallet = WALLET_POOL[pick % len(WALLET_POOL)]
        self._read(api, reader, "WalletService", "GetWallet", pb.GetWalletRequest(wallet_id=wallet), wallet)
        statement = pb.ListStatementEntriesRequest(wallet_id=wallet)
        self._read(api, reader, "WalletService", "ListStatementEntries", statement, wallet)
        if not self.rounds:
            return
        open_ids = [r for r, _s in self.open_rounds(Phase.PLAYER_TURNS, Phase.BANKER_TURN, Phase.SIDE_BETS)]
        round_id = open_ids[pick % len(open_ids)] if open_ids and pick % 3 else self.rounds[pick % len(self.rounds)]
        view = self.app.get_round(round_id)
        member = participants(view)
        answer = self._read(api, reader, "RoundService", "GetRound", pb.GetRoundRequest(round_id=round_id), member)
        if answer is not None and reader in TOKENS and reader not in ("operator", "auditor"):
            self._hidden_cards(reader, view, answer.round.hands, answer.round.events)
        state = self.app.round_state(round_id)
        holders = dict(state.seats) | {BANKER: state.banker_player}
        seat = pick % 4
        request = pb.GetLegalCommandsRequest(round_id=round_id, seat=seat)
        position = seat in holders and seat != BANKER and holders[seat] is None and state.rules.fixed_positions
        askers = member if position else {holders.get(seat)} - {None}  # an ante position: the round's bettors
        self._read(api, reader, "RoundService", "GetLegalCommands", request, askers)
        if view.phase == "closed":
            verify = pb.VerifyRoundRequest(round_id=round_id)
            verdict = self._read(api, reader, "AuditService", "VerifyRound", verify, member)
            assert verdict is None or verdict.ok, verdict

    @rule(reader=st.sampled_from(["operator", "auditor", "auditor", "alice", "anon"]), batch=st.sampled_from([0, 7]))
    def event_feed(self, reader: str, batch: int) -> None:
        """The event feed, read to its head: operators and auditors only; every position once, in order;
        no server seed of a round not yet closed anywhere in it."""
        api = self.apis[reader]
        request = pb.SubscribeEventsRequest(after_position=0, batch_size=batch, stop_at_head=True)
        head = self.app.max_position
        try:
            batches = list(api.method("EventService", "SubscribeEvents")(request, metadata=api.metadata, timeout=30))
        except grpc.RpcError as error:
            expected = Code.UNAUTHENTICATED if reader == "anon" else Code.PERMISSION_DENIED
            assert reader not in ("operator", "auditor") and error.code() == expected, (reader, error.code())
            return
        assert reader in ("operator", "auditor"), f"{reader} read the event feed"
        positions = [n.position for b in batches for n in b.events]
        assert positions == list(range(1, head + 1)), (positions[:5], head)
        revealed = {view.server_seed for view in map(self.app.get_round, self.rounds) if view.server_seed}
        secret = {seed.hex() for seed in Seeds.issued} - revealed
        for item in (n for b in batches for n in b.events):
            text = item.event.canonical_data.decode() + str(item)  # (the stored data, and every typed field)
            leaked = [seed for seed in secret if seed in text]
            assert not leaked, f"an unrevealed server seed in {item.event.WhichOneof('event')} at {item.position}"
        STATS["event feeds read"] += 1

    def _read(self, api: Api, reader: str, service: str, method: str, request: Message, owners: Any) -> Any:
        """A read; whether it may succeed follows from who reads and who owns what is read."""
        owners = {owners} if isinstance(owners, str) else set(owners)
        before = self.app.max_position
        try:
            answer = api.get(service, method, request)
        except grpc.RpcError as error:
            code = error.code()
            assert self.app.max_position == before
            if reader == "anon":
                assert code == Code.UNAUTHENTICATED
            elif reader in ("operator", "auditor"):
                assert code == Code.NOT_FOUND, (method, reader, code, details_of(error).message)
            else:
                assert code in (Code.PERMISSION_DENIED, Code.NOT_FOUND), (method, code)
                assert code == Code.NOT_FOUND or reader not in owners, (method, reader, owners, code)
            STATS[f"read {code.name}"] += 1
            return None
        assert reader != "anon"
        assert self.app.max_position == before, f"{method} wrote"
        if reader not in ("operator", "auditor"):
            assert reader in owners, f"{reader} read {method} {request} owned by {owners}"
        STATS["read ok"] += 1
        return answer

    def _hidden_cards(self, reader: str, view: Any, hands: Any, events: Any) -> None:
        """An open round shows a player no face of a hand it may not see yet: not in the hands, and
        (one deck: a card's text names one card) nowhere in the events' payloads either."""
        if view.phase == "closed":
            return
        shown = {int(e.data["seat"]) for e in view.events if e.kind == "pok_declared"}
        shown |= {int(s) for e in view.events if e.kind == "hands_revealed" for s, _c in e.data["hands"]}
        up_card = any(e.kind == "cards_dealt" and e.data.get("banker_up_card") for e in view.events)
        secret: set[str] = set()
        for hand in view.hands:
            mine = hand.holder == reader or (hand.seat == 0 and view.banker == reader)
            if mine or hand.revealed or hand.seat in shown:
                continue
            secret.update(hand.cards[1:] if hand.seat == 0 and up_card else hand.cards)
        for hand in hands:
            for index, card in enumerate(hand.cards):
                visible = hand.seat == 0 and index == 0 and up_card
                assert visible or card not in secret, f"{reader} sees seat {hand.seat}'s card {card}"
        if view.profile != "ante" and secret:
            quoted = {f'"{card}"' for card in secret}
            for event in events:
                text = event.canonical_data.decode() + str(event)  # (the stored data, and the typed fields)
                leaked = [q for q in quoted if q in text]
                assert not leaked, f"{reader} reads {leaked} in {event.WhichOneof('event')}: {text}"
            STATS["hidden hands checked"] += 1


RUN = settings(  # (--long: ten times the examples)
    max_examples=400 if long_run() else 40,
    stateful_step_count=100,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@pytest.mark.soak
def test_grpc_model() -> None:
    STATS.clear()
    cast(Any, run_state_machine_as_test)(GrpcModel, settings=RUN)  # (hypothesis does not annotate it)
    ok = {k.split(":", 1)[1] for k in STATS if k.startswith("ok:")}
    missing = {"Deposit", "OpenTable", "TakeSeat", "StartRound", "PlaceBet", "Deal", "Draw", "Stay"} - ok
    assert not missing, (missing, sorted(STATS.items()))
    for needed in ("PERMISSION_DENIED:", "UNAUTHENTICATED:", "replayed:", "INVALID_ARGUMENT:"):
        assert any(k.startswith(needed) for k in STATS), (needed, sorted(STATS.items()))
    assert STATS["ok by player"] > 0 and STATS["closed rounds verified"] > 0, sorted(STATS.items())


@pytest.mark.parametrize("profile", ["classic", "ante", "room", "kingmaker"])
def test_grpc_model_plays_every_profile(profile: str) -> None:
    """Smoke: the model's own moves play a round of each profile to its close through the API."""
    model = GrpcModel()
    try:
        model.setup((200_000,) * len(PLAYERS))
        table = {"classic": "c1", "ante": "a1", "room": "r1", "kingmaker": "k1"}[profile]
        if profile == "room":
            model.call("alice", "BidForBanker", pb.BidForBankerRequest(table_id="r1", player="alice", rounds=10))
            model.call("operator", "CloseBankerBid", pb.CloseBankerBidRequest(table_id="r1"), "ok")
        model.call("operator", "StartRound", pb.StartRoundRequest(table_id=table), "ok")
        round_id = model.rounds[-1]
        for step in range(60):
            state = model.app.round_state(round_id)
            if state.is_closed:
                break
            model._play(round_id, state, step + 1, by_operator=False)
            model.money_balances()
            model.no_reservation_leaks()
        assert model.app.round_state(round_id).is_closed
        model.closed_rounds_verify()
        assert STATS["ok by player"] > 0
    finally:
        model.teardown()


def test_grpc_model_checks_a_room_start_that_unseats_every_player() -> None:
    """A refusal that records (found by this model in CI): the room's banker covers the round, every seated
    player is short of room stake x 5; the model checks what the refused StartRound recorded and its retry."""
    STATS.clear()
    model = GrpcModel()
    try:
        model.setup((200_000, 0, 0, 0))
        model.call("alice", "BidForBanker", pb.BidForBankerRequest(table_id="r1", player="alice", rounds=10))
        model.call("operator", "CloseBankerBid", pb.CloseBankerBidRequest(table_id="r1"), "ok")
        code = model.call("operator", "StartRound", pb.StartRoundRequest(table_id="r1"))
        assert code == Code.FAILED_PRECONDITION
        assert STATS["refused-recorded:StartRound:RULE_VIOLATION"] == 1, sorted(STATS.items())
        model.money_balances()
        model.no_reservation_leaks()
    finally:
        model.teardown()
