"""The table state machine (pokdeng_core/table.py): opening, seats, the room's banker bid and tenure, rounds.

RULES.md section 3 (room: banker bid, tenure, unseating; classic: a player named as dealer; ante:
positions, not seats), seed 002 and docs/rules.md items 9-11 and 17. Every refused command raises a
``DomainError`` subclass and records nothing.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pokdeng_core.errors import DomainError, InsufficientFunds, InvalidCommand, NotYourTurn, UnknownSeat, WrongPhase
from pokdeng_core.profiles import ANTE_V1, CLASSIC_V1, KINGMAKER_V1, ROOM_V1, Profile, get_profile
from pokdeng_core.table import MAX_SEATS, MAX_TURN_TIMEOUT, decide_table, winning_bid
from pokdeng_core.table_commands import (
    BidForBanker,
    CloseBankerBid,
    DisconnectBanker,
    FinishRound,
    LeaveSeat,
    OpenTable,
    RecordCheckpoint,
    StartRound,
    TableCommand,
    TakeSeat,
)
from pokdeng_core.table_events import (
    TABLE_EVENT_BY_KIND,
    TABLE_EVENT_TYPES,
    BankerAssigned,
    BankerBidLapsed,
    BankerBidPlaced,
    BankerDisconnected,
    BankerRoleEnded,
    CheckpointRecorded,
    PlayerLeft,
    PlayerSeated,
    RoundFinished,
    RoundStarted,
    TableEvent,
    TableOpened,
)
from pokdeng_core.table_state import TableState, evolve_table

E = TypeVar("E", bound=DomainError)
T = TypeVar("T")

ROOT = "ab" * 32  # a SHA-256 root in hex
PROFILES = {"classic": CLASSIC_V1, "ante": ANTE_V1, "room": ROOM_V1, "kingmaker": KINGMAKER_V1}

# --- helpers -------------------------------------------------------------------------------


def run(state: TableState, *commands: TableCommand) -> tuple[TableState, tuple[TableEvent, ...]]:
    """Decide and apply each command in turn; the state after all of them and the last command's events."""
    events: tuple[TableEvent, ...] = ()
    for command in commands:
        events = decide_table(state, command)
        for event in events:
            state = evolve_table(state, event)
    return state, events


def refused(state: TableState, command: TableCommand, error: type[E] = DomainError) -> E:  # type: ignore[assignment]
    """The command is refused with ``error`` (a DomainError): no events come back, the state is untouched."""
    before = state
    with pytest.raises(error) as info:
        decide_table(state, command)
    assert isinstance(info.value, DomainError)
    assert info.value.message
    assert state == before
    return info.value


def open_table(
    profile: str | Profile = "room",
    *,
    table_id: str = "t1",
    min_stake: int = 10,
    max_stake: int = 100,
    seats: int = 5,
    dealer: str | None = None,
    turn_timeout: int = 30,
) -> OpenTable:
    rules = PROFILES[profile] if isinstance(profile, str) else profile
    return OpenTable(table_id, rules, min_stake, max_stake, seats, dealer, turn_timeout)


def opened(profile: str | Profile = "room", **kwargs: object) -> TableState:
    state, _ = run(TableState(), open_table(profile, **kwargs))  # type: ignore[arg-type]
    return state


def seated(profile: str = "room", players: Sequence[str] = ("a", "b", "c"), **kwargs: object) -> TableState:
    state = opened(profile, **kwargs)
    for seat, player in enumerate(players, start=1):
        state, _ = run(state, TakeSeat(player, seat))
    return state


def with_banker(
    players: Sequence[str] = ("a", "b", "c"), banker: str = "a", rounds: int = 5, capital: int = 10_000
) -> TableState:
    """A room whose seated ``players`` held the bid and ``banker`` won it."""
    state = seated("room", players)
    state, _ = run(state, BidForBanker(banker, rounds, capital), CloseBankerBid())
    assert state.banker == banker
    return state


def next_id(state: TableState) -> str:
    return f"{state.table_id}#{state.round_no + 1}"


def start(state: TableState, funds: Iterable[tuple[str, int]] = ()) -> tuple[TableState, tuple[TableEvent, ...]]:
    return run(state, StartRound(next_id(state), tuple(funds)))


def finish(state: TableState, **kwargs: object) -> tuple[TableState, tuple[TableEvent, ...]]:
    assert state.round_id is not None
    return run(state, FinishRound(state.round_id, "settled", **kwargs))  # type: ignore[arg-type]


def play(state: TableState, **kwargs: object) -> tuple[TableState, tuple[TableEvent, ...]]:
    """Start and finish one round; the finishing events."""
    state, _ = start(state)
    return finish(state, **kwargs)


def replay(events: Iterable[TableEvent]) -> TableState:
    state = TableState()
    for event in events:
        state = evolve_table(state, event)
    return state


# --- opening -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(PROFILES))
def test_open_table_records_the_table(name: str) -> None:
    seats = 1 if name == "ante" else 3
    state, events = run(TableState(), open_table(name, table_id="tab", min_stake=20, max_stake=200, seats=seats))
    profile = PROFILES[name]
    assert events == (
        TableOpened(
            "tab",
            name,
            profile.version,
            tuple(sorted(profile.options.items())),
            20,
            200,
            5 if name == "ante" else 3,
            None,
            30,
        ),
    )
    assert state.is_open and state.profile == profile and state.rules == profile
    assert (state.table_id, state.min_stake, state.max_stake, state.turn_timeout) == ("tab", 20, 200, 30)
    assert state.seats == () and state.banker is None and state.round_no == 0 and state.round_id is None


def test_open_table_keeps_classic_options() -> None:
    rules = get_profile("classic", straights=True, ace_low=True)
    state, (event,) = run(TableState(), open_table(rules, seats=16))
    assert isinstance(event, TableOpened)
    assert event.profile_options == (("ace_low", True), ("straights", True))
    assert state.profile == rules and state.rules.straights and state.rules.ace_low
    assert state.seat_count == 16


def test_ante_has_five_positions_not_seats() -> None:
    for seats in (0, 1, 5, 99):
        state = opened("ante", seats=seats, min_stake=100, max_stake=1000)
        assert state.seat_count == 5
        assert state.round_seats() == tuple((p, None) for p in range(1, 6))


@pytest.mark.parametrize(
    ("min_stake", "max_stake"), [(0, 100), (-10, 100), (0, 0), (101, 100), (10, 0), (10, -5), (-5, -1)]
)
def test_stake_limits_must_be_positive_and_ordered(min_stake: int, max_stake: int) -> None:
    error = refused(TableState(), open_table(min_stake=min_stake, max_stake=max_stake), InvalidCommand)
    assert error.field == ("min_stake" if min_stake <= 0 else "max_stake")  # the field at fault


@pytest.mark.parametrize(("min_stake", "max_stake"), [(10.5, 100), (10, 100.0), (True, 100), ("10", 100)])
def test_stake_limits_are_whole_numbers(min_stake: object, max_stake: object) -> None:
    refused(TableState(), open_table(min_stake=min_stake, max_stake=max_stake), InvalidCommand)  # type: ignore[arg-type]


def test_equal_stake_limits_are_allowed() -> None:
    state = opened(min_stake=50, max_stake=50)
    assert (state.min_stake, state.max_stake) == (50, 50)


@pytest.mark.parametrize(("min_stake", "max_stake"), [(101, 1000), (100, 1001), (1, 1), (3, 3)])
def test_ante_stake_limits_must_be_even(min_stake: int, max_stake: int) -> None:
    error = refused(TableState(), open_table("ante", min_stake=min_stake, max_stake=max_stake), InvalidCommand)
    assert error.field == ("min_stake" if min_stake % 2 else "max_stake")  # found from the outside: always min
    opened("ante", min_stake=min_stake + min_stake % 2, max_stake=max_stake + max_stake % 2)


@pytest.mark.parametrize("name", ["classic", "room", "kingmaker"])
def test_odd_stake_limits_are_fine_without_a_wager_split(name: str) -> None:
    state = opened(name, min_stake=101, max_stake=1001)
    assert (state.min_stake, state.max_stake) == (101, 1001)


@pytest.mark.parametrize(("name", "most"), [("classic", 16), ("room", 5), ("kingmaker", 5)])
def test_seat_counts_per_profile(name: str, most: int) -> None:
    assert most <= MAX_SEATS
    for seats in (1, most):
        assert opened(name, seats=seats).seat_count == seats
    for seats in (0, -1, most + 1, MAX_SEATS + 1):
        error = refused(TableState(), open_table(name, seats=seats), InvalidCommand)
        assert error.field == "seats"


def test_classic_holds_seventeen_hands_with_the_dealer() -> None:
    # "2 to 17 hands in all, the dealer's included": 16 player seats.
    assert opened("classic", seats=16, dealer="d").seat_count == 16
    refused(TableState(), open_table("classic", seats=17, dealer="d"), InvalidCommand)


def test_only_classic_names_a_dealer() -> None:
    state = opened("classic", dealer="dee")
    assert state.dealer == "dee" and state.round_banker == "dee" and state.banker is None
    for name in ("ante", "room", "kingmaker"):
        error = refused(TableState(), open_table(name, dealer="dee", min_stake=100, max_stake=1000), InvalidCommand)
        assert error.field == "dealer"
    assert opened("classic").round_banker is None  # the house deals


@pytest.mark.parametrize("dealer", ["", "x" * 129, "de\naler", "\x00"])
def test_a_dealer_needs_a_valid_player_id(dealer: str) -> None:
    error = refused(TableState(), open_table("classic", dealer=dealer), InvalidCommand)
    assert error.field == "dealer"


@pytest.mark.parametrize("timeout", [0, -1, MAX_TURN_TIMEOUT + 1, 10**9])
def test_turn_timeout_range(timeout: int) -> None:
    error = refused(TableState(), open_table(turn_timeout=timeout), InvalidCommand)
    assert error.field == "turn_timeout"


@pytest.mark.parametrize("timeout", [1, 30, MAX_TURN_TIMEOUT])
def test_turn_timeout_limits_are_inclusive(timeout: int) -> None:
    assert opened(turn_timeout=timeout).turn_timeout == timeout


@pytest.mark.parametrize("table_id", ["", "x" * 129, "tab\n1", "t\t"])
def test_table_ids(table_id: str) -> None:
    error = refused(TableState(), open_table(table_id=table_id), InvalidCommand)
    assert error.field == "table_id"


def test_long_and_sharded_table_ids_are_fine() -> None:
    assert opened(table_id="x" * 128).table_id == "x" * 128
    assert opened(table_id="asia/room-7").table_id == "asia/room-7"


def test_a_table_opens_once() -> None:
    for name in PROFILES:
        state = opened(name, min_stake=100, max_stake=1000)
        refused(state, open_table(name, min_stake=100, max_stake=1000), WrongPhase)
        refused(state, open_table("classic", table_id="other"), WrongPhase)


def test_only_registered_profiles_open_a_table() -> None:
    # The table's events name the profile and replay rebuilds it from the registry: a profile that
    # is not registered, or differs from the registered one, would be replayed as another game.
    unknown_version = ROOM_V1.model_copy(update={"version": 99})
    altered = ROOM_V1.model_copy(update={"max_hands": 3, "reserve_multiple": 2})
    for rules in (unknown_version, altered):
        error = refused(TableState(), open_table(rules), InvalidCommand)
        assert error.field == "profile"
    refused(TableState(), OpenTable("t", "room", 10, 100, 5), InvalidCommand)  # type: ignore[arg-type]


def test_commands_on_a_table_that_is_not_open() -> None:
    for command in (
        TakeSeat("a", 1),
        LeaveSeat("a"),
        LeaveSeat("a", 1),
        BidForBanker("a", 5, 1000),
        CloseBankerBid(),
        StartRound("#1"),
        FinishRound("#1", "settled"),
        DisconnectBanker("a"),
        RecordCheckpoint("p", 1, 1, 1, ROOT),
    ):
        refused(TableState(), command)


def test_not_a_table_command() -> None:
    refused(opened(), object(), InvalidCommand)  # type: ignore[arg-type]


# --- seats ---------------------------------------------------------------------------------


def test_take_seat() -> None:
    state, events = run(opened(), TakeSeat("b", 3))
    assert events == (PlayerSeated(3, "b"),)
    state, _ = run(state, TakeSeat("a", 1), TakeSeat("c", 5))
    assert state.seats == ((1, "a"), (3, "b"), (5, "c"))
    assert state.holder(3) == "b" and state.holder(2) is None
    assert state.players == ("a", "b", "c")


def test_a_taken_seat() -> None:
    state = seated("classic", ["a"])
    refused(state, TakeSeat("b", 1))
    refused(state, TakeSeat("a", 1))


@pytest.mark.parametrize("seat", [0, -1, 6, 100])
def test_a_seat_out_of_range(seat: int) -> None:
    error = refused(opened(seats=5), TakeSeat("a", seat), UnknownSeat)
    assert error.details["seat"] == seat


def test_a_seat_number_is_an_integer() -> None:
    refused(opened(), TakeSeat("a", 1.0), UnknownSeat)  # type: ignore[arg-type]
    refused(opened(), TakeSeat("a", True), UnknownSeat)


@pytest.mark.parametrize("player", ["", "p" * 129, "a\nb"])
def test_a_seat_needs_a_player_id(player: str) -> None:
    error = refused(opened(), TakeSeat(player, 1), InvalidCommand)
    assert error.field == "player"


def test_the_room_banker_cannot_sit() -> None:
    state = with_banker(["a", "b"], banker="a")
    assert state.seats == ((2, "b"),)
    refused(state, TakeSeat("a", 1))
    refused(state, TakeSeat("a", 3))


def test_the_classic_dealer_cannot_sit() -> None:
    state = opened("classic", dealer="dee")
    refused(state, TakeSeat("dee", 1))
    run(state, TakeSeat("other", 1))


def test_classic_players_hold_many_seats() -> None:
    state = opened("classic", seats=16)
    for seat in range(1, 17):
        state, _ = run(state, TakeSeat("a", seat))
    assert state.seats_of("a") == tuple(range(1, 17))
    assert state.players == ("a",)


@pytest.mark.parametrize("name", ["room", "kingmaker"])
def test_room_and_kingmaker_players_hold_one_seat(name: str) -> None:
    state, _ = run(opened(name), TakeSeat("a", 1))
    refused(state, TakeSeat("a", 2))
    state, _ = run(state, TakeSeat("b", 2))
    assert state.seats == ((1, "a"), (2, "b"))


def test_ante_refuses_seats() -> None:
    state = opened("ante", min_stake=100, max_stake=1000)
    for seat in (1, 5):
        refused(state, TakeSeat("a", seat))
    refused(state, LeaveSeat("a"), UnknownSeat)


# --- leaving -------------------------------------------------------------------------------


def test_leave_a_seat() -> None:
    state, events = run(seated("room", ["a", "b"]), LeaveSeat("a", 1))
    assert events == (PlayerLeft(1, "a", "left"),)
    assert state.seats == ((2, "b"),)
    state, _ = run(state, TakeSeat("c", 1))  # the seat is free again
    assert state.holder(1) == "c"


def test_leave_one_of_several_seats() -> None:
    state = opened("classic")
    state, _ = run(state, TakeSeat("a", 1), TakeSeat("a", 3), TakeSeat("b", 2))
    state, events = run(state, LeaveSeat("a", 3))
    assert events == (PlayerLeft(3, "a", "left"),)
    assert state.seats == ((1, "a"), (2, "b"))


def test_leave_all_seats() -> None:
    state = opened("classic")
    state, _ = run(state, TakeSeat("a", 4), TakeSeat("b", 2), TakeSeat("a", 1))
    state, events = run(state, LeaveSeat("a"))
    assert events == (PlayerLeft(1, "a", "left"), PlayerLeft(4, "a", "left"))
    assert state.seats == ((2, "b"),)


def test_leave_a_seat_held_by_another() -> None:
    state = seated("room", ["a", "b"])
    error = refused(state, LeaveSeat("a", 2), NotYourTurn)
    assert error.details["seat"] == 2
    refused(state, LeaveSeat("a", 4), NotYourTurn)  # an empty seat
    refused(state, LeaveSeat("a", 99), NotYourTurn)  # not a seat at all
    refused(state, LeaveSeat("a", 1.0), NotYourTurn)  # type: ignore[arg-type]
    refused(state, LeaveSeat("a", True), NotYourTurn)


def test_leave_without_a_seat() -> None:
    refused(seated("room", ["a"]), LeaveSeat("z"), UnknownSeat)


def test_no_leaving_during_a_round() -> None:
    state, _ = start(seated("classic", ["a", "b"]))
    refused(state, LeaveSeat("a"), WrongPhase)
    refused(state, LeaveSeat("a", 1), WrongPhase)
    state, _ = finish(state)
    state, _ = run(state, LeaveSeat("a"))
    assert state.seats == ((2, "b"),)


def test_a_room_banker_leaving_ends_its_role() -> None:
    state = with_banker(["a", "b", "c"], banker="b", rounds=10)
    assert state.tenure_left == 10
    state, events = run(state, LeaveSeat("b"))
    assert events == (BankerRoleEnded("b", "left"),)
    assert state.banker is None and state.tenure_left == 0 and state.needs_bid
    assert state.seats == ((1, "a"), (3, "c"))
    refused(state, StartRound(next_id(state)), WrongPhase)  # a new bid first


def test_a_room_banker_leaving_a_numbered_seat_is_refused() -> None:
    state = with_banker(["a", "b"], banker="a")
    refused(state, LeaveSeat("a", 1), NotYourTurn)


def test_a_room_banker_cannot_leave_during_a_round() -> None:
    state, _ = start(with_banker(["a", "b"], banker="a"))
    refused(state, LeaveSeat("a"), WrongPhase)


# --- the room's banker bid -----------------------------------------------------------------


@pytest.mark.parametrize("name", ["classic", "ante", "kingmaker"])
def test_only_the_room_has_a_banker_bid(name: str) -> None:
    state = seated(name, ["a"], min_stake=100, max_stake=1000) if name != "ante" else opened(name, min_stake=100)
    refused(state, BidForBanker("a", 10, 10**9))
    refused(state, CloseBankerBid())


def test_only_seated_players_bid() -> None:
    state = seated("room", ["a"])
    refused(state, BidForBanker("z", 10, 10**6), NotYourTurn)


@pytest.mark.parametrize("rounds", [10, 5, 0])
def test_bid_rounds(rounds: int) -> None:
    state, events = run(seated("room", ["a", "b"]), BidForBanker("a", rounds, 200))
    assert events == (BankerBidPlaced("a", rounds, 200),)
    assert state.bids == (("a", rounds, 200),)


@pytest.mark.parametrize("rounds", [1, 4, 6, 9, 11, 20, -5, -10, 10.0, 5.0, False])
def test_other_bid_rounds_are_refused(rounds: int) -> None:
    error = refused(seated("room", ["a"]), BidForBanker("a", rounds, 10**6), InvalidCommand)
    assert error.field == "rounds"


@pytest.mark.parametrize("capital", [-1, 1000.0, True, "1000"])
def test_bid_capital_is_a_whole_amount(capital: object) -> None:
    error = refused(seated("room", ["a"]), BidForBanker("a", 0, capital), InvalidCommand)  # type: ignore[arg-type]
    assert error.field == "capital"


def test_the_banker_minimum_capital() -> None:
    # room stake (max_stake 100) x seated players (3) = 300
    state = seated("room", ["a", "b", "c"], max_stake=100)
    assert state.banker_minimum == 300
    error = refused(state, BidForBanker("a", 5, 299), InsufficientFunds)
    assert (error.required, error.available, error.wallet) == (300, 299, "a")
    assert error.details == {"required": 300, "available": 299, "wallet": "a"}
    error = refused(state, BidForBanker("b", 10, 0), InsufficientFunds)
    assert (error.required, error.available) == (300, 0)
    state, _ = run(state, BidForBanker("a", 5, 300))
    assert state.bids == (("a", 5, 300),)


def test_the_minimum_follows_the_seated_players() -> None:
    assert seated("room", ["a"], max_stake=100).banker_minimum == 100
    state = seated("room", ["a", "b", "c", "d", "e"], max_stake=10)
    assert state.banker_minimum == 50  # seed 002: $10 x 5 = $50
    refused(state, BidForBanker("e", 10, 49), InsufficientFunds)
    run(state, BidForBanker("e", 10, 50))


def test_skipping_needs_no_capital() -> None:
    _, events = run(seated("room", ["a", "b"]), BidForBanker("a", 0, 0))
    assert events == (BankerBidPlaced("a", 0, 0),)


def test_one_bid_per_player() -> None:
    state, _ = run(seated("room", ["a", "b"]), BidForBanker("a", 5, 1000))
    for rounds in (10, 5, 0):
        refused(state, BidForBanker("a", rounds, 10**6))
    state, _ = run(seated("room", ["a", "b"]), BidForBanker("a", 0, 1000))
    refused(state, BidForBanker("a", 10, 10**6))


def test_no_bid_while_there_is_a_banker() -> None:
    state = with_banker(["a", "b"], banker="a")
    refused(state, BidForBanker("b", 10, 10**6), WrongPhase)
    refused(state, CloseBankerBid(), WrongPhase)


def test_close_the_bid() -> None:
    state = seated("room", ["a", "b", "c"], max_stake=100)
    state, _ = run(
        state,
        BidForBanker("a", 5, 5000),
        BidForBanker("b", 10, 300),
        BidForBanker("c", 0, 10**6),
    )
    state, events = run(state, CloseBankerBid())
    assert events == (PlayerLeft(2, "b", "became_banker"), BankerAssigned("b", 10))
    assert state.banker == "b" and state.tenure_left == 10 and state.bids == ()
    assert state.seats == ((1, "a"), (3, "c"))
    assert not state.needs_bid and state.round_banker == "b"


def test_bid_ties() -> None:
    state = seated("room", ["a", "b", "c"])
    _, events = run(
        state, BidForBanker("a", 5, 500), BidForBanker("b", 5, 900), BidForBanker("c", 5, 900), CloseBankerBid()
    )
    assert events[-1] == BankerAssigned("b", 5)  # larger capital, then the earlier bid
    _, events = run(
        state, BidForBanker("c", 5, 900), BidForBanker("b", 5, 900), BidForBanker("a", 5, 500), CloseBankerBid()
    )
    assert events[-1] == BankerAssigned("c", 5)


def test_all_skip() -> None:
    state = seated("room", ["a", "b"])
    refused(state, CloseBankerBid())  # no bids at all
    state, _ = run(state, BidForBanker("a", 0, 10**6), BidForBanker("b", 0, 10**6))
    state, events = run(state, CloseBankerBid())  # everybody skipped: the bid lapses and bidding reopens
    assert events == (BankerBidLapsed(("a", "b")),) and state.bids == () and state.banker is None
    refused(state, StartRound(next_id(state)), WrongPhase)
    state, events = run(state, BidForBanker("b", 5, 10**6), CloseBankerBid())
    assert events[-1] == BankerAssigned("b", 5)


def test_no_bid_closes_during_a_round() -> None:
    state, _ = start(with_banker(["a", "b"], banker="a"))
    refused(state, BidForBanker("b", 5, 10**6), WrongPhase)
    refused(state, CloseBankerBid(), WrongPhase)


def test_a_bid_lapses_when_its_player_leaves() -> None:
    # A player that left the table cannot become its banker.
    state = seated("room", ["a", "b"], max_stake=100)
    state, _ = run(state, BidForBanker("a", 10, 10**6), BidForBanker("b", 5, 10**6), LeaveSeat("a"))
    assert state.bids == (("b", 5, 10**6),)
    state, events = run(state, CloseBankerBid())
    assert events[-1] == BankerAssigned("b", 5)


def test_a_bid_lapse_lets_a_returning_player_bid_again() -> None:
    state = seated("room", ["a", "b"])
    state, _ = run(state, BidForBanker("a", 0, 10**6), BidForBanker("b", 0, 10**6))
    state, _ = run(state, LeaveSeat("a"), TakeSeat("a", 3), BidForBanker("a", 10, 10**6), CloseBankerBid())
    assert state.banker == "a" and state.tenure_left == 10
    state, _ = run(seated("room", ["a", "b"]), BidForBanker("a", 5, 10**6), LeaveSeat("a"))
    refused(state, CloseBankerBid())


def _reference_winner(bids: Sequence[tuple[str, int, int]]) -> tuple[str, int] | None:
    """Highest tenure, then larger capital, then the earlier bid; skips (0 rounds) never win."""
    live = [(i, p, r, c) for i, (p, r, c) in enumerate(bids) if r > 0]
    if not live:
        return None
    top_rounds = max(r for _, _, r, _ in live)
    live = [b for b in live if b[2] == top_rounds]
    top_capital = max(c for _, _, _, c in live)
    live = [b for b in live if b[3] == top_capital]
    first = min(live)
    return first[1], first[2]


def test_winning_bid_examples() -> None:
    assert winning_bid([]) is None
    assert winning_bid([("a", 0, 10**9), ("b", 0, 5)]) is None
    assert winning_bid([("a", 5, 10**9), ("b", 10, 1)]) == ("b", 10)  # tenure before capital
    assert winning_bid([("a", 5, 100), ("b", 5, 101)]) == ("b", 5)  # then capital
    assert winning_bid([("a", 5, 100), ("b", 5, 100)]) == ("a", 5)  # then the earlier bid
    assert winning_bid([("b", 5, 100), ("a", 5, 100)]) == ("b", 5)
    assert winning_bid([("a", 0, 10**9), ("b", 5, 0)]) == ("b", 5)  # a skip never wins
    assert winning_bid(iter([("a", 10, 1), ("b", 10, 1)])) == ("a", 10)  # any iterable


def test_winning_bid_exhaustive_small() -> None:
    names = "abc"
    choices = list(itertools.product((0, 5, 10), (0, 1, 2)))
    for n in range(4):
        for picks in itertools.product(choices, repeat=n):
            bids = [(names[i], r, c) for i, (r, c) in enumerate(picks)]
            assert winning_bid(bids) == _reference_winner(bids), bids


BIDS = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c", "d", "e"]),
        st.sampled_from([0, 5, 10, 1, 7, 20]),
        st.integers(0, 10**12),
    ),
    max_size=12,
)


@given(BIDS)
def test_winning_bid_matches_the_reference(bids: list[tuple[str, int, int]]) -> None:
    assert winning_bid(bids) == _reference_winner(bids)


@given(
    st.lists(
        st.tuples(st.sampled_from([0, 5, 10]), st.sampled_from([500, 700, 701, 10**6])),
        min_size=1,
        max_size=5,
    ),
    st.permutations(range(5)),
)
@settings(max_examples=150)
def test_the_machine_assigns_the_winning_bid(picks: list[tuple[int, int]], order: list[int]) -> None:
    players = ["p1", "p2", "p3", "p4", "p5"][: len(picks)]
    state = seated("room", players, max_stake=100)
    bidders = [players[i] for i in order if i < len(players)]
    bids = [(player, *picks[players.index(player)]) for player in bidders]
    for bid in bids:
        state, _ = run(state, BidForBanker(*bid))
    assert state.bids == tuple(bids)
    expected = _reference_winner(bids)
    if expected is None:
        if not bids:
            refused(state, CloseBankerBid())
            return
        state, events = run(state, CloseBankerBid())  # all skipped: the bid lapses
        assert events == (BankerBidLapsed(tuple(p for p, _r, _c in bids)),) and state.bids == ()
        return
    seat = state.seats_of(expected[0])
    state, events = run(state, CloseBankerBid())
    assert events == (*(PlayerLeft(s, expected[0], "became_banker") for s in seat), BankerAssigned(*expected))
    assert (state.banker, state.tenure_left) == expected
    assert not state.seats_of(expected[0])


# --- starting rounds -----------------------------------------------------------------------


def test_a_room_without_a_banker_cannot_start() -> None:
    state = seated("room", ["a", "b"])
    assert state.needs_bid
    refused(state, StartRound(next_id(state)), WrongPhase)
    state, _ = run(state, BidForBanker("a", 5, 10**6))
    refused(state, StartRound(next_id(state)), WrongPhase)  # the bid is not closed yet


def test_room_players_short_of_funds_are_unseated_before_the_round() -> None:
    state = with_banker(["bank", "a", "b", "c", "d"], banker="bank")
    minimum = state.max_stake * ROOM_V1.reserve_multiple  # 100 x 5
    funds = (("a", minimum - 1), ("b", minimum), ("c", 0), ("bank", 0))  # d: not given, stays
    state, events = start(state, funds)
    assert events == (
        PlayerLeft(2, "a", "insufficient_funds"),
        PlayerLeft(4, "c", "insufficient_funds"),
        RoundStarted("t1#1", 1, 1),
    )
    assert state.seats == ((3, "b"), (5, "d"))
    assert state.banker == "bank"  # ("bank" in ``funds`` is no seat's: the banker's own are ``banker_funds``)


def test_a_room_banker_that_cannot_cover_another_round_when_it_opens_loses_the_role() -> None:
    state = with_banker(["bank", "a", "b", "c"], banker="bank", rounds=10)  # three seated: 300 needed
    state, events = run(state, StartRound(next_id(state), (("a", 10**6),), banker_funds=299))
    assert events == (BankerRoleEnded("bank", "insufficient_funds"),)  # and no round opens
    assert state.banker is None and state.tenure_left == 0 and state.needs_bid
    assert state.round_no == 0 and state.round_id is None
    refused(state, StartRound(next_id(state)), WrongPhase)  # the room holds the bid next


def test_the_room_banker_is_checked_with_the_players_seated_when_the_round_opens() -> None:
    state = with_banker(["bank", "a", "b"], banker="bank", rounds=10)
    state, events = play(state, banker_funds=200)  # two seated: 200 covers another round
    assert state.banker == "bank" and len(events) == 1
    state, _ = run(state, TakeSeat("c", 4))  # a third player sits down: 300 now
    state, events = run(state, StartRound(next_id(state), banker_funds=200))
    assert events == (BankerRoleEnded("bank", "insufficient_funds"),)
    assert state.banker is None and state.round_no == 1 and state.seats == ((2, "a"), (3, "b"), (4, "c"))


def test_unseated_players_do_not_count_towards_the_banker_at_round_open() -> None:
    state = with_banker(["bank", "a", "b", "c"], banker="bank", rounds=10)
    state, events = run(state, StartRound(next_id(state), (("c", 0),), banker_funds=200))
    assert events == (PlayerLeft(4, "c", "insufficient_funds"), RoundStarted("t1#1", 1, 1))
    assert state.banker == "bank"  # two left seated: 200 covers them
    state, _ = finish(state, banker_funds=10**6)
    state, events = run(state, StartRound(next_id(state), (("b", 0),), banker_funds=99))
    assert events == (PlayerLeft(3, "b", "insufficient_funds"), BankerRoleEnded("bank", "insufficient_funds"))
    assert state.banker is None and state.seats == ((2, "a"),)


def test_a_room_start_that_unseats_every_player_starts_no_round() -> None:
    state = with_banker(["bank", "a", "b"], banker="bank")
    state, events = run(state, StartRound(next_id(state), (("a", 1), ("b", 0)), banker_funds=0))
    assert events == (PlayerLeft(2, "a", "insufficient_funds"), PlayerLeft(3, "b", "insufficient_funds"))
    assert state.seats == () and state.round_no == 0 and state.round_id is None
    assert state.banker == "bank"  # nobody to deal to: the banker's funds are not judged for no round
    refused(state, StartRound(next_id(state)))  # and now an empty room: nothing to record, refused


def test_a_room_banker_waits_for_players() -> None:
    state = with_banker(["bank", "a"], banker="bank")
    state, _ = run(state, LeaveSeat("a"))
    refused(state, StartRound(next_id(state)))


@pytest.mark.parametrize("name", ["classic", "kingmaker"])
def test_other_profiles_keep_players_whatever_their_funds(name: str) -> None:
    state, events = start(seated(name, ["a", "b"]), (("a", 0), ("b", 0)))
    assert events == (RoundStarted("t1#1", 1, 1),)
    assert state.players == ("a", "b")


def test_round_numbers_increase() -> None:
    state = seated("classic", ["a"], table_id="asia/t9")
    for number in range(1, 6):
        state, events = start(state)
        assert events == (RoundStarted(f"asia/t9#{number}", number, number),)
        assert (state.round_id, state.round_no) == (f"asia/t9#{number}", number)
        state, events = finish(state)
        assert state.round_id is None and state.round_no == number


def test_a_round_id_names_the_table_and_the_next_number() -> None:
    state = seated("classic", ["a"])
    for round_id in ("", "t1#0", "t1#2", "t2#1", "t1-1", "t1#01"):
        error = refused(state, StartRound(round_id), InvalidCommand)
        assert error.field == "round_id"
    state, _ = play(state)
    refused(state, StartRound("t1#1"), InvalidCommand)  # a round id is never reused
    run(state, StartRound("t1#2"))


def test_no_start_while_a_round_is_in_play() -> None:
    state, _ = start(seated("classic", ["a"]))
    error = refused(state, StartRound("t1#2"), WrongPhase)
    assert error.details["round_id"] == "t1#1"
    refused(state, StartRound("t1#1"), WrongPhase)


def test_a_round_needs_a_seated_player() -> None:
    for name in ("classic", "kingmaker"):
        refused(opened(name), StartRound("t1#1"))
    _, events = run(opened("ante", min_stake=100), StartRound("t1#1"))  # positions are always dealt
    assert events == (RoundStarted("t1#1", 1, 1),)


def test_seats_may_change_between_rounds() -> None:
    state, _ = play(with_banker(["bank", "a"], banker="bank"))
    state, _ = run(state, TakeSeat("b", 3))
    state, events = start(state)
    assert isinstance(events[-1], RoundStarted) and state.seats == ((2, "a"), (3, "b"))


# --- finishing rounds ----------------------------------------------------------------------


def test_finish_the_current_round_only() -> None:
    state = seated("classic", ["a"])
    refused(state, FinishRound("t1#1", "settled"), WrongPhase)
    state, _ = start(state)
    refused(state, FinishRound("t1#2", "settled"), WrongPhase)
    state, events = run(state, FinishRound("t1#1", "voided", round_digest="d" * 64))
    assert events == (RoundFinished("t1#1", "voided", 0, 0, "d" * 64),)
    refused(state, FinishRound("t1#1", "settled"), WrongPhase)  # once


@pytest.mark.parametrize("rounds", [5, 10])
def test_tenure_counts_down(rounds: int) -> None:
    state = with_banker(["bank", "a"], banker="bank", rounds=rounds)
    for played in range(1, rounds):
        state, events = play(state, banker_funds=10**6)
        assert [type(e) for e in events] == [RoundFinished]
        assert state.banker == "bank" and state.tenure_left == rounds - played
    state, events = play(state, banker_funds=10**6)
    assert events[1:] == (BankerRoleEnded("bank", "tenure_served"),)
    assert state.banker is None and state.tenure_left == 0 and state.needs_bid
    assert state.round_no == rounds
    refused(state, StartRound(next_id(state)), WrongPhase)


def test_a_banker_that_cannot_cover_another_round() -> None:
    state = with_banker(["bank", "a", "b"], banker="bank", rounds=10)
    assert state.banker_minimum == 200  # 100 x 2 seated players
    state, events = play(state, banker_funds=200)
    assert state.banker == "bank" and len(events) == 1
    state, events = play(state, banker_funds=199)
    assert events[1:] == (BankerRoleEnded("bank", "insufficient_funds"),)
    assert state.banker is None and state.tenure_left == 0


def test_without_banker_funds_only_tenure_counts() -> None:
    state = with_banker(["bank", "a"], banker="bank", rounds=5)
    state, events = play(state)
    assert state.banker == "bank" and len(events) == 1


def test_insufficient_funds_on_the_last_round_of_tenure() -> None:
    state = with_banker(["bank", "a"], banker="bank", rounds=5)
    for _ in range(4):
        state, _ = play(state, banker_funds=10**6)
    state, events = play(state, banker_funds=0)
    assert events[1:] == (BankerRoleEnded("bank", "insufficient_funds"),)  # one reason, once


def test_a_disconnected_banker_plays_the_round_out() -> None:
    state, _ = start(with_banker(["bank", "a"], banker="bank", rounds=10))
    state, events = run(state, DisconnectBanker("bank"))
    assert events == (BankerDisconnected("bank"),)
    assert state.banker == "bank" and state.banker_leaving and state.round_banker == "bank"
    state, events = finish(state, banker_funds=10**6)
    assert [type(e) for e in events] == [RoundFinished, BankerRoleEnded]
    assert events[1] == BankerRoleEnded("bank", "disconnected")
    assert state.banker is None and not state.banker_leaving and state.needs_bid


def test_disconnected_outranks_the_other_reasons() -> None:
    state = with_banker(["bank", "a"], banker="bank", rounds=5)
    for _ in range(4):
        state, _ = play(state)
    state, _ = start(state)
    state, _ = run(state, DisconnectBanker("bank"))
    _, events = finish(state, banker_funds=0)
    assert events[1:] == (BankerRoleEnded("bank", "disconnected"),)


def test_a_banker_disconnecting_between_rounds_loses_the_role_at_once() -> None:
    state = with_banker(["bank", "a"], banker="bank")
    state, events = run(state, DisconnectBanker("bank"))
    assert events == (BankerRoleEnded("bank", "disconnected"),)
    assert state.banker is None and state.tenure_left == 0 and not state.banker_leaving
    assert state.seats == ((2, "a"),)


def test_only_the_banker_disconnects() -> None:
    state = with_banker(["bank", "a"], banker="bank")
    refused(state, DisconnectBanker("a"), NotYourTurn)
    refused(seated("room", ["a"]), DisconnectBanker("a"), NotYourTurn)
    refused(opened("classic", dealer="dee"), DisconnectBanker("dee"), NotYourTurn)


def test_a_new_banker_after_the_role_ends() -> None:
    state = with_banker(["bank", "a", "b"], banker="bank", rounds=5)
    state, _ = run(state, DisconnectBanker("bank"))
    state, _ = run(state, TakeSeat("bank", 1), BidForBanker("a", 10, 10**6), BidForBanker("bank", 10, 10**6))
    state, events = run(state, CloseBankerBid())
    assert events == (PlayerLeft(2, "a", "became_banker"), BankerAssigned("a", 10))
    state, _ = play(state)
    assert state.banker == "a" and state.tenure_left == 9 and state.round_no == 1


@given(st.lists(st.tuples(st.integers(-(10**9), 10**9), st.integers(0, 10**7)), max_size=15))
@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
def test_house_net_and_commission_add_up(rounds: list[tuple[int, int]]) -> None:
    state = seated("kingmaker", ["a"])
    for house_net, commission in rounds:
        state, _ = start(state)
        state, (event,) = finish(state, house_net=house_net, commission=commission)
        assert isinstance(event, RoundFinished)
        assert (event.house_net, event.commission) == (house_net, commission)
    assert state.house_net == sum(n for n, _ in rounds)
    assert state.commission == sum(c for _, c in rounds)
    assert state.round_no == len(rounds)


# --- checkpoints ---------------------------------------------------------------------------


def _played(rounds: int) -> TableState:
    state = seated("classic", ["a"])
    for _ in range(rounds):
        state, _ = play(state)
    return state


def test_checkpoints_continue_from_the_last_covered_round() -> None:
    state = _played(5)
    state, events = run(state, RecordCheckpoint("day 1", 1, 3, 3, ROOT))
    assert events == (CheckpointRecorded("day 1", 1, 3, 3, ROOT),)
    assert state.checkpointed_to == 3
    for first in (1, 3, 5):
        error = refused(state, RecordCheckpoint("p", first, 5, 5 - first + 1, ROOT), InvalidCommand)
        assert error.field == "first_round_no"
    state, _ = run(state, RecordCheckpoint("day 2", 4, 4, 1, ROOT))
    state, _ = run(state, RecordCheckpoint("day 3", 5, 5, 1, "0" * 64))
    assert state.checkpointed_to == 5
    refused(state, RecordCheckpoint("p", 6, 6, 1, ROOT), InvalidCommand)  # round 6 was never played


def test_a_checkpoint_range_is_ordered() -> None:
    refused(_played(3), RecordCheckpoint("p", 1, 0, 1, ROOT), InvalidCommand)


def test_a_checkpoint_covers_closed_rounds_only() -> None:
    state = _played(2)
    state, _ = start(state)  # round 3 in play
    error = refused(state, RecordCheckpoint("p", 1, 3, 3, ROOT), InvalidCommand)
    assert error.field == "last_round_no"
    state, _ = run(state, RecordCheckpoint("p", 1, 2, 2, ROOT))  # checkpoints may be taken mid-round
    state, _ = finish(state)
    run(state, RecordCheckpoint("p", 3, 3, 1, ROOT))
    refused(opened("classic"), RecordCheckpoint("p", 1, 1, 1, ROOT), InvalidCommand)  # no round yet


@pytest.mark.parametrize("count", [0, -1, 2, 4])
def test_a_checkpoint_counts_its_rounds(count: int) -> None:
    error = refused(_played(3), RecordCheckpoint("p", 1, 3, count, ROOT), InvalidCommand)
    assert error.field == "count"


@pytest.mark.parametrize("root", ["", "ab" * 31 + "a", "ab" * 32 + "a", "AB" * 32, "zz" * 32, "ab" * 64])
def test_a_checkpoint_root_is_a_sha256_in_hex(root: str) -> None:
    error = refused(_played(1), RecordCheckpoint("p", 1, 1, 1, root), InvalidCommand)
    assert error.field == "root"


# --- the whole machine ---------------------------------------------------------------------


def test_event_kinds_are_unique() -> None:
    assert len(TABLE_EVENT_BY_KIND) == len(TABLE_EVENT_TYPES)
    assert all(TABLE_EVENT_BY_KIND[cls.kind] is cls for cls in TABLE_EVENT_TYPES)


def test_evolve_refuses_foreign_events() -> None:
    with pytest.raises(TypeError):
        evolve_table(TableState(), object())  # type: ignore[arg-type]


PLAYERS = ["a", "b", "c", "d", "e", "f", "g"]


def _mostly(draw: st.DrawFn, likely: Sequence[T], anything: Sequence[T]) -> T:
    """Mostly a plausible value, sometimes any value."""
    choice: T
    if likely and draw(st.integers(0, 3)) > 0:
        choice = draw(st.sampled_from(list(likely)))
    else:
        choice = draw(st.sampled_from(list(anything)))
    return choice


@st.composite
def commands(draw: st.DrawFn, state: TableState) -> TableCommand:
    """Any table command, mostly plausible, sometimes not."""
    seats = range(0, state.seat_count + 2)
    free = [n for n in range(1, state.seat_count + 1) if state.holder(n) is None]
    present = [*state.players, *([state.banker] if state.banker else [])]
    kinds = ["take"] * 3 + ["leave", "bid", "bid", "close", "start", "finish"]
    kinds += ["finish"] * 4 if state.round_id else ["start"] * 3 if state.banker or len(state.players) > 1 else []
    kind = draw(st.sampled_from([draw(st.sampled_from(kinds))] * 12 + ["disconnect", "checkpoint"]))
    next_round = f"{state.table_id}#{state.round_no + draw(st.sampled_from([1, 1, 1, 0, 2]))}"
    if kind == "take":
        return TakeSeat(_mostly(draw, PLAYERS, PLAYERS), _mostly(draw, free, list(seats)))
    if kind == "leave":
        return LeaveSeat(_mostly(draw, present, PLAYERS), draw(st.none() | st.sampled_from(list(seats))))
    if kind == "bid":
        player = _mostly(draw, state.players, PLAYERS)
        return BidForBanker(player, draw(st.sampled_from([0, 5, 10, 10, 3])), draw(st.sampled_from([0, 300, 10**6])))
    if kind == "close":
        return CloseBankerBid()
    if kind == "start":
        funds = [(p, draw(st.sampled_from([499, 500, 10**6, 10**6]))) for p in state.players]
        return StartRound(next_round, tuple(funds))
    if kind == "finish":
        return FinishRound(
            _mostly(draw, [state.round_id] if state.round_id else [], [next_round]),
            "settled",
            draw(st.integers(-1000, 1000)),
            draw(st.integers(0, 30)),
            draw(st.none() | st.sampled_from([0, 199, 500, 10**6, 10**6])),
        )
    if kind == "disconnect":
        return DisconnectBanker(_mostly(draw, present[-1:] if state.banker else [], PLAYERS))
    first = state.checkpointed_to + draw(st.sampled_from([1, 1, 0]))
    last = draw(st.integers(first - 1, state.round_no + 1))
    return RecordCheckpoint("p", first, last, last - first + 1, ROOT)


def _check_invariants(state: TableState) -> None:
    profile = state.rules
    numbers = [seat for seat, _ in state.seats]
    assert len(numbers) == len(set(numbers)) and all(1 <= n <= state.seat_count for n in numbers)
    assert all(len(state.seats_of(p)) <= profile.seats_per_player for p in state.players)
    if profile.fixed_positions is not None:
        assert state.seats == ()
    if state.banker is not None:
        assert profile.banker_bid is not None
        assert not state.seats_of(state.banker)
        assert state.tenure_left >= 1 and state.bids == ()
    else:
        assert state.tenure_left == 0 and not state.banker_leaving
    if state.banker_leaving:
        assert state.round_id is not None
    assert all(state.seats_of(p) for p, _, _ in state.bids)  # only seated players' bids count
    assert len({p for p, _, _ in state.bids}) == len(state.bids)
    assert all(rounds in (0, 5, 10) for _, rounds, _ in state.bids)
    assert state.round_id in (None, f"{state.table_id}#{state.round_no}")
    assert 0 <= state.checkpointed_to <= state.round_no


@given(st.sampled_from(["room", "room", "classic", "kingmaker", "ante"]), st.data())
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_random_command_sequences(name: str, data: st.DataObject) -> None:
    """Every command is either accepted or refused with a DomainError; the state stays sound."""
    log: list[TableEvent] = list(decide_table(TableState(), open_table(name, min_stake=100, max_stake=100)))
    state = replay(log)
    for _ in range(40):
        command = data.draw(commands(state))
        before = state
        try:
            events = decide_table(state, command)
        except DomainError:
            assert state == before
            continue
        for event in events:
            state = evolve_table(state, event)
        log.extend(events)
        assert state.round_no >= before.round_no
        _check_invariants(state)
    assert replay(log) == state  # the events alone rebuild the table
