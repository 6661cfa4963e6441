"""Model-based test of ``PokdengApp``: random sequences of valid and invalid commands.

A hypothesis ``RuleBasedStateMachine`` drives one application (the in-memory POPO store,
plus a short run on an SQLite file) through every command it has, across all four
profiles, several tables and wallets: wallets opened, funded and drained (valid amounts,
too large, malformed, topped up to int64 max), tables opened (valid and not), seats taken and left, the room's
banker bid, rounds started, bets (valid, too big, on another's seat, in the wrong phase),
deals, side bets, draws and stays (the right seat, the wrong seat or player, out of turn),
the banker's reveal, draw and stay, timeouts (the operator's, and the turn clock's with the
round's version it saw: current, stale, ahead), voids, checkpoints, and repeated request ids (the same
command: an idempotent replay; a different command: ``DuplicateRequest``).

After every step (the invariants live in ``model.ModelBase``, shared with the gRPC model):

* money balances to zero: the sum over wallets of (balance - deposits + withdrawals), plus
  every table's house_net and commission, is 0 (deposits and withdrawals are the model's
  own tally of the accepted ones);
* no reservation leaks: each wallet's reservations are exactly what the open rounds hold
  for it (its stakes, and the player-banker's cover); nothing for a closed round;
* every refused command changed nothing: ``max_position`` and every view (wallets, tables,
  rounds, including ids that do not exist yet) are the same after it;
* every closed round verifies (``audit.verify_round(app, round_id, check_wallets=False).ok``) and no
  wallet lost more than the round had reserved in it; at the end of a run every closed round
  verifies again with ``check_wallets=True``;
* every round that is not closed is its table's current round (no orphan round).

Runs are derandomized and server seeds come from a counter (``conftest.deterministic_seeds``):
the same sequences and the same cards on every run, so CI is deterministic and a failure
shrinks and replays.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    initialize,
    precondition,
    rule,
    run_state_machine_as_test,
)

from pokdeng_core.errors import DomainError
from pokdeng_core.round_state import BANKER, Phase, RoundState
from pokdeng_service.application import MAX_AMOUNT, PokdengApp
from pokdeng_service.application.errors import BankerCannotCover, DuplicateRequest
from pokdeng_service.application.views import CommandResult
from pokdeng_service.store.vault import SeedVault
from pokdeng_testkit.keys import VAULT_KEY
from tests.needs import long_run

from .model import ModelBase, view_or_none

PLAYERS = ("alice", "bob", "carol", "dave")
LATE = "erin"  # a wallet the rules may open later
GHOST = "ghost"  # never opened
WALLET_POOL = (*PLAYERS, LATE, GHOST)
TABLE_POOL = ("c1", "c2", "a1", "r1", "k1", "k2", "t9")  # t9: opened (or not) by the random rules only
PROFILES = ("classic", "ante", "room", "kingmaker")

PICK = st.integers(0, 2**16)
BAD_AMOUNTS = st.sampled_from([0, -1, -(2**63), MAX_AMOUNT + 1, 2**64, 2**100, True, False, 1.5, "100", None])
AMOUNTS = st.one_of(
    st.integers(1, 5_000),
    st.integers(1, 300_000),
    st.just(MAX_AMOUNT),
    BAD_AMOUNTS,
)
SEATS = st.one_of(st.integers(1, 6), st.sampled_from([0, -1, 17, 64, 65, 2**40, True, 2.0, "1", None]))
BAD_REQUEST_IDS = st.sampled_from(["", "   ", "x" * 129, "a\x00b", "tab\there", None, 7, b"bytes"])

FRESH = object()  # _do's default: a new request id

# Top-ups also reach wallets with stakes reserved: a deposit leaves room for twice what is reserved
# (what those stakes could still win), and a settlement is never refused for size
# (test_hostile_input.test_a_round_settles_after_its_winner_was_topped_up_to_int64_max).
TOP_UP_RESERVED_WALLETS = True

# what the runs did, summed over every example (the coverage check at the end of each test)
STATS: Counter[str] = Counter()


@dataclass(frozen=True)
class Call:
    name: str
    request_id: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]
    result: CommandResult


class ApplicationModel(ModelBase):
    """One application, the model's record of it, and every accepted command."""

    env: dict[str, str] = {"PERSISTENCE_MODULE": "eventsourcing.popo"}  # noqa: RUF012
    wallet_pool = WALLET_POOL
    table_pool = TABLE_POOL
    stats = STATS

    def __init__(self) -> None:
        super().__init__()
        self.app = PokdengApp(dict(self.env), vault=SeedVault.from_hex(VAULT_KEY))
        self.ids = itertools.count(1)
        self.accepted: list[Call] = []

    def teardown(self) -> None:
        try:
            self.final_audit()
        finally:
            self.app.close()

    # -- the command pipeline ---------------------------------------------------------------

    def _start_refused(self, error: DomainError, before: Any, rid: str, args: tuple[Any, ...]) -> DomainError:
        """The refusals that record (a room's start: its banker cannot cover the round, or every player was
        short of funds): no round opened, and the retry of the request decides afresh, writing nothing."""

        def retry() -> None:
            with pytest.raises(DomainError):  # no banker now, or nobody seated
                self.app.start_round(rid, *args)

        self.check_start_refused(before, args[0], isinstance(error, BankerCannotCover), retry)
        STATS["refused-recorded:start_round"] += 1
        return error

    def _rid(self) -> str:
        return f"q{next(self.ids)}"

    def _do(self, name: str, *args: Any, expect: str | None = None, request_id: Any = FRESH, **kwargs: Any) -> Any:
        """Issue a command; a refusal must change nothing. ``expect``: "ok", "refused" or None (either)."""
        rid = self._rid() if request_id is FRESH else request_id
        before = self.world()
        try:
            result = getattr(self.app, name)(rid, *args, **kwargs)
        except DomainError as error:
            if name == "start_round" and self.app.max_position > before.position:
                return self._start_refused(error, before, rid, args)
            after = self.read_world()
            assert after.position == before.position, f"refused {name} wrote events: {error!r}"
            assert after == before, f"refused {name} changed a view: {error!r}"
            assert expect != "ok", f"{name}{args}{kwargs} refused: {error!r}"
            STATS[f"refused:{name}"] += 1
            return error
        self.changed()
        assert expect != "refused", f"{name}{args}{kwargs} was accepted: {result!r}"
        assert isinstance(result, CommandResult) and result.request_id == rid
        if result.replayed:
            assert self.world() == before, f"a replayed {name} changed something"
            STATS[f"replayed:{name}"] += 1
            return result
        assert self.app.max_position > before.position, f"{name} accepted but wrote nothing"
        assert result.events, f"{name} accepted with no event of its stream"
        STATS[f"ok:{name}"] += 1
        self.accepted.append(Call(name, rid, args, tuple(sorted(kwargs.items())), result))
        if name == "open_wallet":
            self.flows[args[0]] = 0
        elif name == "deposit":
            self.flows[args[0]] += args[1]
        elif name == "withdraw":
            self.flows[args[0]] -= args[1]
        elif name == "open_table":
            self.tables.add(args[0])
        elif name == "start_round":
            self.rounds.append(result.id)
        if result.stream == "round":
            STATS[f"{name}:{self.app.round_state(result.id).rules.name}"] += 1
        return result

    # -- reading the model's world ----------------------------------------------------------

    def _any_round(self, pick: int) -> str:
        """A round id: mostly an open one, else any known round, or one that does not exist."""
        open_ids = [r for r, _s in self.open_rounds()]
        if open_ids and pick % 4:
            return open_ids[pick % len(open_ids)]
        known = [*self.rounds, "c1#999", "nowhere#1"]
        return known[pick % len(known)]

    # -- set-up --------------------------------------------------------------------------------

    @initialize(
        funds=st.tuples(*[st.sampled_from([200_000, 200_000, 40_000, 6_000, 0])] * len(PLAYERS)),
        order=st.permutations(PLAYERS),
    )
    def setup(self, funds: tuple[int, ...], order: list[str]) -> None:
        for name, amount in zip(PLAYERS, funds, strict=True):
            self._do("open_wallet", name, expect="ok")
            if amount:
                self._do("deposit", name, amount, expect="ok")
        self._do("open_table", "c1", "classic", None, min_stake=100, max_stake=1000, seats=6, expect="ok")
        self._do("open_table", "c2", "classic", None, min_stake=100, max_stake=1000, dealer=order[3], expect="ok")
        self._do("open_table", "a1", "ante", None, min_stake=100, max_stake=1000, expect="ok")
        self._do("open_table", "r1", "room", None, min_stake=100, max_stake=1000, seats=5, expect="ok")
        self._do("open_table", "k1", "kingmaker", None, min_stake=100, max_stake=1000, seats=5, expect="ok")
        self._do("open_table", "k2", "kingmaker", None, min_stake=50, max_stake=500, seats=4, expect="ok")
        seating = (("c1", order[:3]), ("c2", order[:2]), ("r1", order), ("k1", order[1:]), ("k2", order[::-1]))
        for table_id, seated in seating:
            for number, player in enumerate(seated, start=1):
                self._do("take_seat", table_id, player, number, expect="ok")

    # -- wallets -------------------------------------------------------------------------------

    @rule(wallet=st.sampled_from([*PLAYERS, LATE, "", " ", "x" * 129, "bad\nid"]))
    def open_wallet(self, wallet: str) -> None:
        self._do("open_wallet", wallet)

    @rule(wallet=st.sampled_from(WALLET_POOL), amount=AMOUNTS)
    def deposit(self, wallet: str, amount: Any) -> None:
        malformed = isinstance(amount, bool) or not isinstance(amount, int) or not 0 < amount <= MAX_AMOUNT
        self._do("deposit", wallet, amount, expect="refused" if malformed or wallet == GHOST else None)

    @rule(wallet=st.sampled_from(WALLET_POOL), amount=AMOUNTS, everything=st.booleans())
    def withdraw(self, wallet: str, amount: Any, everything: bool) -> None:
        view = view_or_none(self.app.get_wallet, wallet)
        if everything and view is not None and view.available > 0:
            self._do("withdraw", wallet, view.available, expect="ok")
            return
        too_much = view is None or (isinstance(amount, int) and amount > view.available)
        self._do("withdraw", wallet, amount, expect="refused" if too_much else None)

    @rule(wallet=st.sampled_from(WALLET_POOL), idle_only=st.booleans())
    def top_up_to_int64_max(self, wallet: str, idle_only: bool) -> None:
        """A deposit that takes the balance to the largest it may hold (int64 max, less room for twice
        what the wallet has reserved: what its stakes could still win); one more is refused."""
        view = view_or_none(self.app.get_wallet, wallet)
        if view is None:
            self._do("deposit", wallet, 1, expect="refused")
            return
        room = MAX_AMOUNT - view.balance - 2 * view.reserved
        if room <= 0:
            self._do("deposit", wallet, 1, expect="refused")
        elif view.reserved and (idle_only or not TOP_UP_RESERVED_WALLETS):
            return
        else:
            self._do("deposit", wallet, room, expect="ok")

    # -- tables --------------------------------------------------------------------------------

    @rule(
        table=st.sampled_from([*TABLE_POOL, "", "x" * 129]),
        profile=st.sampled_from([*PROFILES, "poker", ""]),
        limits=st.sampled_from([(100, 1000), (100, 100), (1000, 100), (0, 10), (-5, 10), (101, 999), (2, MAX_AMOUNT)]),
        seats=st.sampled_from([5, 1, 0, 16, 17, 99, True]),
        dealer=st.sampled_from([None, None, "dave", LATE, "", "x" * 200]),
        timeout=st.sampled_from([30, 1, 0, 3600, 3601, 2.5]),
        options=st.sampled_from([None, {}, {"straights": True}, {"ace_low": True}, {"bogus": True}]),
    )
    def open_table(
        self,
        table: str,
        profile: str,
        limits: tuple[int, int],
        seats: Any,
        dealer: str | None,
        timeout: Any,
        options: dict[str, bool] | None,
    ) -> None:
        low, high = limits
        self._do(
            "open_table",
            table,
            profile,
            options,
            min_stake=low,
            max_stake=high,
            seats=seats,
            dealer=dealer,
            turn_timeout=timeout,
            expect="refused" if table in self.tables else None,
        )

    @rule(table=st.sampled_from(TABLE_POOL), player=st.sampled_from(WALLET_POOL), seat=SEATS)
    def take_seat(self, table: str, player: str, seat: Any) -> None:
        self._do("take_seat", table, player, seat)

    @rule(table=st.sampled_from(TABLE_POOL), player=st.sampled_from(WALLET_POOL), seat=st.none() | SEATS)
    def leave_seat(self, table: str, player: str, seat: Any) -> None:
        self._do("leave_seat", table, player, seat)

    @rule(
        table=st.sampled_from(TABLE_POOL),
        player=st.sampled_from(WALLET_POOL),
        rounds=st.sampled_from([0, 5, 10, 3, -1, 1001, True]),
    )
    def bid_for_banker(self, table: str, player: str, rounds: Any) -> None:
        self._do("bid_for_banker", table, player, rounds)

    def _rooms_without_banker(self) -> list[str]:
        views = [self.app.get_table(t) for t in sorted(self.tables)]
        return [v.table_id for v in views if v.profile == "room" and v.banker is None]

    @precondition(lambda self: bool(self._rooms_without_banker()))
    @rule(pick=PICK, rounds=st.sampled_from([10, 5, 5, 0]), close=st.booleans())
    def hold_banker_bid(self, pick: int, rounds: int, close: bool) -> None:
        """A seated player of a room without a banker bids (or skips); maybe the bid closes."""
        rooms = self._rooms_without_banker()
        table = rooms[pick % len(rooms)]
        view = self.app.get_table(table)
        bidders = {b[0] for b in view.bids}
        free = [s.player for s in view.seats if s.player not in bidders]
        if free and view.current_round is None:
            self._do("bid_for_banker", table, free[pick % len(free)], rounds)
        if close:
            self._do("close_banker_bid", table)

    @rule(table=st.sampled_from(TABLE_POOL))
    def close_banker_bid(self, table: str) -> None:
        self._do("close_banker_bid", table)

    @rule(table=st.sampled_from(TABLE_POOL), player=st.sampled_from(WALLET_POOL), banker=st.booleans())
    def disconnect_banker(self, table: str, player: str, banker: bool) -> None:
        view = view_or_none(self.app.get_table, table)
        if banker and view is not None and view.banker is not None:
            player = view.banker
        self._do("disconnect_banker", table, player)

    @rule(table=st.sampled_from(TABLE_POOL), period=st.sampled_from(["", "week 1", "x" * 129, 5]))
    def checkpoint_table(self, table: str, period: Any) -> None:
        self._do("checkpoint_table", table, period)

    # -- rounds: starting and betting -------------------------------------------------------

    @rule(table=st.sampled_from(TABLE_POOL), seed=st.sampled_from(["", "lucky", "x" * 257, "ไพ่ป๊อก", 42]))
    def start_round(self, table: str, seed: Any) -> None:
        busy = table in self.tables and self.app.get_table(table).current_round is not None
        self._do("start_round", table, seed, expect="refused" if busy or table not in self.tables else None)

    @precondition(lambda self: bool(self.idle_tables()))
    @rule(pick=PICK)
    def start_round_at_idle_table(self, pick: int) -> None:
        idle = self.idle_tables()
        self._do("start_round", idle[pick % len(idle)], f"seed {pick}")

    @precondition(lambda self: self.has_round(Phase.BETTING))
    @rule(pick=PICK, size=st.sampled_from(["min", "max", "mid", "mid", "over", "under", "odd", "huge"]))
    def place_bet(self, pick: int, size: str) -> None:
        rounds = self.open_rounds(Phase.BETTING)
        round_id, state = rounds[pick % len(rounds)]
        choices = self.bet_choices(state)
        if not choices:
            return
        seat, player = choices[pick % len(choices)]
        low, high = state.min_stake, state.max_stake
        stake = {
            "min": low,
            "max": high,
            "mid": (low + high) // 4 * 2,
            "over": high + 2,
            "under": low - 2,
            "odd": low + 1,
            "huge": MAX_AMOUNT,
        }[size]
        bad = stake > high or stake < low or (state.rules.wager_split and stake % 2)
        self._do("place_bet", round_id, seat, player, stake, expect="refused" if bad else None)

    @precondition(lambda self: self.has_round())
    @rule(pick=PICK, mode=st.sampled_from(["other_seat", "wrong_phase", "banker", "ghost"]))
    def place_bet_refused(self, pick: int, mode: str) -> None:
        """Bets that must be refused: on another's seat (not classic), out of betting, by the banker, no wallet."""
        rounds = self.open_rounds()
        round_id, state = rounds[pick % len(rounds)]
        held = [(s, h) for s, h in state.seats if h is not None]
        stake = state.min_stake
        if mode == "wrong_phase" and state.phase is not Phase.BETTING:
            seat, player = state.seats[pick % len(state.seats)][0], PLAYERS[pick % len(PLAYERS)]
        elif mode == "other_seat" and state.rules.name != "classic" and len(held) > 1:
            seat = held[pick % len(held)][0]
            player = next(h for s, h in held if s != seat)
        elif mode == "banker" and state.banker_player is not None and state.seats:
            seat, player = state.seats[pick % len(state.seats)][0], state.banker_player
        elif mode == "ghost" and state.seats:
            seat, player = state.seats[pick % len(state.seats)][0], GHOST
        else:
            return
        self._do("place_bet", round_id, seat, player, stake, expect="refused")

    @rule(
        pick=PICK,
        seat=SEATS,
        player=st.sampled_from([*WALLET_POOL, "", None]),
        stake=AMOUNTS,
    )
    def place_bet_anything(self, pick: int, seat: Any, player: Any, stake: Any) -> None:
        self._do("place_bet", self._any_round(pick), seat, player, stake)

    @rule(pick=PICK)
    def deal(self, pick: int) -> None:
        round_id = self._any_round(pick)
        self._do("deal", round_id)

    # -- side bets -------------------------------------------------------------------------------

    @precondition(lambda self: self.has_round(Phase.SIDE_BETS))
    @rule(pick=PICK, mode=st.sampled_from(["legal", "legal", "any_seat", "other_player", "twice"]))
    def place_side_bet(self, pick: int, mode: str) -> None:
        """While the window is open: a holder matches its stake (legal), or a side bet that may not be."""
        rounds = self.open_rounds(Phase.SIDE_BETS)
        round_id, state = rounds[pick % len(rounds)]
        legal = [s for s, _h in state.seats if "place_side_bet" in self.app.legal_commands(round_id, s)]
        if mode == "legal" and legal:
            seat = legal[pick % len(legal)]
            self._do("place_side_bet", round_id, seat, state.holder(seat))
        elif mode == "other_player" and legal:
            seat = legal[pick % len(legal)]
            other = next(p for p in (*PLAYERS, GHOST) if p != state.holder(seat))
            self._do("place_side_bet", round_id, seat, other, expect="refused")
        elif mode == "twice" and state.side_bets:
            bet = state.side_bets[pick % len(state.side_bets)]
            self._do("place_side_bet", round_id, bet.seat, bet.player, expect="refused")
        else:
            seat, holder = state.seats[pick % len(state.seats)]
            self._do("place_side_bet", round_id, seat, holder, expect=None if seat in legal else "refused")

    @rule(pick=PICK, seat=SEATS, player=st.sampled_from(WALLET_POOL))
    def place_side_bet_anything(self, pick: int, seat: Any, player: str) -> None:
        self._do("place_side_bet", self._any_round(pick), seat, player)

    @rule(pick=PICK)
    def close_side_bets(self, pick: int) -> None:
        round_id = self._any_round(pick)
        self._do("close_side_bets", round_id)

    # -- the players' turns ------------------------------------------------------------------

    @precondition(lambda self: self.has_round(Phase.PLAYER_TURNS))
    @rule(
        pick=PICK, draw=st.booleans(), mode=st.sampled_from(["right", "right", "wrong_player", "out_of_turn", "gone"])
    )
    def player_action(self, pick: int, draw: bool, mode: str) -> None:
        rounds = self.open_rounds(Phase.PLAYER_TURNS)
        round_id, state = rounds[pick % len(rounds)]
        turn = state.turn
        assert turn is not None, state
        holder = state.holder(turn)
        name = "draw" if draw else "stay"
        if mode == "right":
            if state.rules.name == "ante" or holder is None:
                return
            legal = self.app.legal_commands(round_id, turn)
            self._do(name, round_id, turn, holder, expect="ok" if name in legal else "refused")
        elif mode == "wrong_player":
            other = next(p for p in (*PLAYERS, GHOST) if p != holder)
            self._do(name, round_id, turn, other, expect="refused")
        elif mode == "out_of_turn":
            others = [s for s in state.in_play if s != turn]
            if others:
                seat = others[pick % len(others)]
                self._do(name, round_id, seat, state.holder(seat) or GHOST, expect="refused")
        else:
            self._do(name, round_id, 16, holder or GHOST, expect="refused")

    @rule(pick=PICK, seat=SEATS, player=st.sampled_from(WALLET_POOL), draw=st.booleans())
    def player_action_anything(self, pick: int, seat: Any, player: str, draw: bool) -> None:
        self._do("draw" if draw else "stay", self._any_round(pick), seat, player)

    # -- the banker's turn -------------------------------------------------------------------

    @precondition(lambda self: self.has_round(Phase.BANKER_TURN))
    @rule(
        pick=PICK,
        action=st.sampled_from(["reveal", "draw", "stay"]),
        who=st.sampled_from(["banker", "banker", "other"]),
        seats=st.sampled_from(["some", "some", "all", "dup", "unknown", "empty", "revealed"]),
    )
    def banker_action(self, pick: int, action: str, who: str, seats: str) -> None:
        rounds = self.open_rounds(Phase.BANKER_TURN)
        round_id, state = rounds[pick % len(rounds)]
        banker = state.banker_player
        player = banker if who == "banker" else next(p for p in (*PLAYERS, "") if p != banker)
        legal = self.app.legal_commands(round_id, BANKER)
        if action != "reveal":
            name = f"banker_{action}"
            ok = who == "banker" and name in legal
            self._do(name, round_id, player, expect="ok" if ok else "refused")
            return
        waiting = [s for s in state.in_play if s not in state.revealed]
        chosen: list[Any]
        if seats == "some" and waiting:
            chosen = [s for i, s in enumerate(waiting) if (pick >> i) & 1] or waiting[:1]
        elif seats == "all":
            chosen = waiting
        elif seats == "dup" and waiting:
            chosen = [waiting[0], waiting[0]]
        elif seats == "unknown":
            chosen = [15]
        elif seats == "revealed" and state.revealed:
            chosen = sorted(state.revealed)[:1]
        else:
            chosen = []
        valid = seats in ("some", "all") and bool(chosen)
        ok = who == "banker" and valid and "banker_reveal" in legal
        self._do("banker_reveal", round_id, tuple(chosen), player, expect="ok" if ok else "refused")

    @rule(
        pick=PICK,
        action=st.sampled_from(["reveal", "draw", "stay"]),
        player=st.sampled_from([None, *WALLET_POOL]),
        seats=st.lists(st.integers(-2, 20), max_size=4),
    )
    def banker_action_anything(self, pick: int, action: str, player: str | None, seats: list[int]) -> None:
        round_id = self._any_round(pick)
        if action == "reveal":
            self._do("banker_reveal", round_id, tuple(seats), player)
        else:
            self._do(f"banker_{action}", round_id, player)

    # -- the operator's moves ----------------------------------------------------------------

    @rule(pick=PICK, version=st.sampled_from(["none", "none", "current", "stale", "ahead", "text"]))
    def time_out_turn(self, pick: int, version: str) -> None:
        """The operator's timeout, or the turn clock's (only if the round has not moved since it looked)."""
        round_id = self._any_round(pick)
        if version == "none":
            self._do("time_out_turn", round_id)
            return
        view = dict(self.world().rounds).get(round_id)
        current = view.version if view is not None else 1
        expected = {"current": current, "stale": current - 1, "ahead": current + 1, "text": str(current)}[version]
        self._do("time_out_turn", round_id, expected, expect="refused" if version != "current" else None)

    @rule(pick=PICK, reason=st.sampled_from(["dealer shuffled wrong", "", "   ", "x" * 501, None]))
    def void_round(self, pick: int, reason: Any) -> None:
        self._do("void_round", self._any_round(pick), reason)

    @rule(pick=PICK, choice=PICK)
    def advance(self, pick: int, choice: int) -> None:
        """The next legal move somewhere, as a client playing by the rules would make it: a step of
        an open round, or at an idle table a new round (room: the banker bid first), a seat taken
        or a seat left."""
        targets: list[tuple[str, RoundState | None]] = [*self.open_rounds()]
        targets.extend((table_id, None) for table_id in self.idle_tables())
        if not targets:
            return
        target, state = targets[pick % len(targets)]
        if state is None:
            self._at_idle_table(target, choice)
            return
        round_id = target
        phase = state.phase
        if phase is Phase.BETTING:
            choices = self.bet_choices(state)
            if choices and (not state.bets or (choice % 3 and len(state.bets) < 3)):
                seat, player = choices[choice % len(choices)]
                self._do("place_bet", round_id, seat, player, state.min_stake)
            else:
                self._do("deal", round_id, expect="ok" if state.bets else "refused")
        elif phase is Phase.SIDE_BETS:
            open_seats = [s for s, h in state.seats if "place_side_bet" in self.app.legal_commands(round_id, s)]
            if open_seats and choice % 3:
                seat = open_seats[choice % len(open_seats)]
                self._do("place_side_bet", round_id, seat, state.holder(seat))
            else:
                self._do("close_side_bets", round_id, expect="ok")
        elif phase is Phase.PLAYER_TURNS:
            turn = state.turn
            assert turn is not None
            legal = self.app.legal_commands(round_id, turn)
            if choice % 7 == 0 or not legal:
                self._do("time_out_turn", round_id, expect="ok")
            else:
                self._do("draw" if choice % 2 else "stay", round_id, turn, state.holder(turn), expect="ok")
        elif phase is Phase.BANKER_TURN:
            legal = self.app.legal_commands(round_id, BANKER)
            banker = state.banker_player
            waiting = [s for s in state.in_play if s not in state.revealed]
            if not legal or choice % 11 == 0:
                self._do("time_out_turn", round_id, expect="ok")
            elif "banker_reveal" in legal and choice % 3 == 0 and waiting:
                chosen = tuple(s for i, s in enumerate(waiting) if (choice >> (i + 2)) & 1) or (waiting[0],)
                self._do("banker_reveal", round_id, chosen, banker, expect="ok")
            else:
                self._do("banker_draw" if choice % 2 else "banker_stay", round_id, banker, expect="ok")
        else:  # pragma: no cover - transient phases are never seen between commands
            raise AssertionError(f"round {round_id} rests in {phase}")

    def _at_idle_table(self, table_id: str, choice: int) -> None:
        view = self.app.get_table(table_id)
        seated = [s.player for s in view.seats]
        if view.profile == "room" and view.banker is None and seated:
            bidders = {b[0] for b in view.bids}
            free = [p for p in seated if p not in bidders]
            if free and choice % 3:
                self._do("bid_for_banker", table_id, free[choice % len(free)], (10, 5, 0)[choice % 3])
            else:
                self._do("close_banker_bid", table_id)
        elif choice % 6 == 0 and seated:
            player = seated[choice % len(seated)]
            seat = None if choice % 12 else next(s.seat for s in view.seats if s.player == player)
            self._do("leave_seat", table_id, player, seat, expect="ok")
        elif choice % 6 == 1 and view.profile != "ante":
            taken = {s.seat for s in view.seats}
            free_seats = [n for n in range(1, view.seat_count + 1) if n not in taken]
            newcomers = [p for p in self.flows if p not in seated and p not in (view.banker, view.dealer)]
            if free_seats and newcomers:
                self._do("take_seat", table_id, newcomers[choice % len(newcomers)], free_seats[0])
        else:
            self._do("start_round", table_id, f"seed {choice}")

    # hypothesis chooses among the rules evenly: more doors into ``advance`` keep rounds moving
    # between the noise, so that most rounds reach the players' and the banker's turns
    @rule(pick=PICK, choice=PICK)
    def advance_again(self, pick: int, choice: int) -> None:
        self.advance(pick, choice)

    @rule(pick=PICK, choice=PICK)
    def advance_once_more(self, pick: int, choice: int) -> None:
        self.advance(pick, choice)

    @rule(pick=PICK, choice=PICK)
    def advance_and_again(self, pick: int, choice: int) -> None:
        self.advance(pick, choice)

    @rule(pick=PICK, choice=PICK)
    def advance_twice(self, pick: int, choice: int) -> None:
        self.advance(pick, choice)
        self.advance(pick // 7, choice // 3)

    @rule(pick=PICK, choice=PICK)
    def advance_a_while(self, pick: int, choice: int) -> None:
        for step in range(4):
            self.advance(pick >> step, choice >> step)

    @rule(pick=PICK, choice=PICK)
    def advance_some_more(self, pick: int, choice: int) -> None:
        for step in range(3):
            self.advance(pick + step, choice >> step)

    # -- request ids ---------------------------------------------------------------------------

    @precondition(lambda self: bool(self.accepted))
    @rule(pick=PICK)
    def repeat_request(self, pick: int) -> None:
        """The same command with the same request id: the first answer, nothing written."""
        call = self.accepted[pick % len(self.accepted)]
        result = self._do(call.name, *call.args, request_id=call.request_id, expect="ok", **dict(call.kwargs))
        assert result.replayed, call
        assert (result.stream, result.id, result.events) == (call.result.stream, call.result.id, call.result.events)

    @precondition(lambda self: bool(self.accepted))
    @rule(pick=PICK, other=st.sampled_from(["deposit", "open_wallet", "void_round", "start_round", "time_out_turn"]))
    def reuse_request_id(self, pick: int, other: str) -> None:
        """A used request id for a different command: DuplicateRequest, nothing written."""
        call = self.accepted[pick % len(self.accepted)]
        args: tuple[Any, ...] = {
            "deposit": (PLAYERS[pick % 4], 7 + pick),
            "open_wallet": (f"w{pick}",),
            "void_round": (self._any_round(pick), "reuse"),
            "start_round": (TABLE_POOL[pick % len(TABLE_POOL)], "reuse"),
            "time_out_turn": (self._any_round(pick),),
        }[other]
        if (other, args, ()) == (call.name, call.args, call.kwargs):
            args = ("alice", 999_999_999)
            other = "deposit"
        error = self._do(other, *args, request_id=call.request_id, expect="refused")
        assert isinstance(error, DuplicateRequest), error

    @rule(rid=BAD_REQUEST_IDS, wallet=st.sampled_from(PLAYERS))
    def malformed_request_id(self, rid: Any, wallet: str) -> None:
        self._do("deposit", wallet, 100, request_id=rid, expect="refused")


MUST_BE_ACCEPTED = (
    "open_wallet",
    "deposit",
    "withdraw",
    "open_table",
    "take_seat",
    "leave_seat",
    "bid_for_banker",
    "close_banker_bid",
    "start_round",
    "place_bet",
    "deal",
    "place_side_bet",
    "close_side_bets",
    "draw",
    "stay",
    "banker_reveal",
    "banker_draw",
    "banker_stay",
    "time_out_turn",
    "void_round",
)

RUN = settings(  # (--long: ten times the examples)
    max_examples=500 if long_run() else 50,
    stateful_step_count=200,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def _check_coverage(stats: Counter[str], names: tuple[str, ...]) -> None:
    missing = [n for n in names if not stats[f"ok:{n}"]]
    assert not missing, f"the run never got these accepted: {missing} ({sorted(stats.items())})"
    assert any(k.startswith("replayed:") for k in stats), "no request was repeated"
    assert stats["closed rounds verified"] > 0


@pytest.mark.soak
def test_application_model_in_memory() -> None:
    STATS.clear()
    cast(Any, run_state_machine_as_test)(ApplicationModel, settings=RUN)  # (hypothesis does not annotate it)
    _check_coverage(STATS, MUST_BE_ACCEPTED)


def test_application_model_on_sqlite(tmp_path: Path) -> None:
    """A short run on an SQLite file: the same invariants through the real recorder's transactions."""
    counter = itertools.count()

    class OnSqlite(ApplicationModel):
        def __init__(self) -> None:
            self.env = {
                "PERSISTENCE_MODULE": "eventsourcing.sqlite",
                "SQLITE_DBNAME": str(tmp_path / f"model-{next(counter)}.sqlite"),
            }
            super().__init__()

    STATS.clear()
    short = settings(RUN, max_examples=8, stateful_step_count=80)
    cast(Any, run_state_machine_as_test)(OnSqlite, settings=short)
    _check_coverage(STATS, ("deposit", "start_round", "place_bet", "deal"))


@pytest.mark.parametrize("profile", PROFILES)
def test_every_profile_plays_in_the_model(profile: str) -> None:
    """Smoke: the model's advance rule plays a round of each profile to its close (no random noise)."""
    model = ApplicationModel()
    try:
        model.setup((200_000,) * len(PLAYERS), list(PLAYERS))
        table = {"classic": "c1", "ante": "a1", "room": "r1", "kingmaker": "k1"}[profile]
        if profile == "room":
            model._do("bid_for_banker", "r1", PLAYERS[0], 10, expect="ok")
            model._do("close_banker_bid", "r1", expect="ok")
        model._do("start_round", table, "smoke", expect="ok")
        round_id = model.rounds[-1]
        for step in range(60):
            if model.app.round_state(round_id).is_closed:
                break
            model.advance(0, step + 1)
            model.money_balances()
            model.no_reservation_leaks()
        assert model.app.round_state(round_id).is_closed
        model.closed_rounds_verify()
    finally:
        model.teardown()
