"""The round state machine (pokdeng_core/machine.py) against RULES.md sections 2, 3 and 5.

Every hand is dealt from a stacked shoe (``rounds.stack``), so each test knows exactly
which cards fall where; the seeded shoe is used where the test is about the seed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
from collections.abc import Callable
from typing import ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pokdeng_core import commands as c
from pokdeng_core import events as e
from pokdeng_core.errors import (
    DomainError,
    InsufficientFunds,
    InvalidCommand,
    NotYourTurn,
    SealedShoe,
    UnknownSeat,
    WrongPhase,
)
from pokdeng_core.machine import can, decide, legal_commands, wallet_changes
from pokdeng_core.profiles import PROFILE_NAMES, get_profile
from pokdeng_core.round_evolve import replay
from pokdeng_core.round_state import BANKER, Phase, RoundState, attach_shoe, attach_stacked_shoe
from pokdeng_core.shuffle import SHUFFLE_ALGORITHM, commitment, shuffled_deck

from .rounds import (
    BIG,
    CLIENT_SEED,
    NONCE,
    SEED,
    VOID_AT,
    Round,
    check_books,
    dealt_round,
    every_legal,
    open_round,
    play_randomly,
    random_command,
    stack,
    texts,
)

# Hands used throughout (taem in brackets).
POK9 = "9S KD"  # pok 9, one card each suit
POK8 = "4C 4D"  # pok 8, a pair: pok deng under classic and ranked
LOW2 = "2C KH"  # 2
LOW3 = "AD 2D"  # 3
MID5 = "2S 3D"  # 5
MID6 = "5C AC"  # 6, one suit: song deng
MID7 = "3C 4H"  # 7


def open_command(profile: str = "classic", **changes: object) -> c.OpenRound:
    fields: dict[str, object] = {
        "round_id": "round-1",
        "table_id": "table-1",
        "round_no": 1,
        "profile": get_profile(profile),
        "seats": ((1, "p1"), (2, "p2")) if profile != "ante" else tuple((s, None) for s in range(1, 6)),
        "banker_player": "bank" if profile == "room" else None,
        "min_stake": 10,
        "max_stake": 1000,
        "commitment": commitment(SEED),
        "client_seed": CLIENT_SEED,
        "nonce": NONCE,
        "algorithm": SHUFFLE_ALGORITHM,
    }
    fields.update(changes)
    return c.OpenRound(**fields)  # type: ignore[arg-type]


def refuse_open(command: c.OpenRound, error: type[DomainError] = InvalidCommand) -> DomainError:
    return Round(RoundState()).refuse(command, error)


# =======================================================================================
# opening


class TestOpen:
    @pytest.mark.parametrize("name", PROFILE_NAMES)
    def test_open_records_the_profile_and_commits_the_shuffle(self, name: str) -> None:
        played = open_round(name)
        opened, committed = played.events
        assert isinstance(opened, e.RoundOpened) and isinstance(committed, e.ShuffleCommitted)
        profile = get_profile(name)
        assert (opened.profile_name, opened.profile_version) == (profile.name, profile.version)
        assert opened.profile_options == tuple(sorted(profile.options.items()))
        assert committed.commitment == commitment(SEED)
        assert (committed.client_seed, committed.nonce, committed.algorithm) == (CLIENT_SEED, NONCE, SHUFFLE_ALGORITHM)
        assert committed.shoe_size == 52 * profile.decks
        assert played.state.phase is Phase.BETTING
        assert played.state.profile == profile

    def test_classic_options_are_recorded_and_replayed(self) -> None:
        played = open_round("classic", options={"straights": True})
        assert dict(played.one(e.RoundOpened).profile_options) == {"straights": True, "ace_low": False}
        assert replay(played.events).rules.straights

    def test_seats_are_recorded_in_order(self) -> None:
        played = open_round("classic", ((3, "c"), (1, "a"), (2, "b")))
        assert played.one(e.RoundOpened).seats == ((1, "a"), (2, "b"), (3, "c"))

    @pytest.mark.parametrize(
        ("profile", "changes", "field"),
        [
            ("classic", {"round_id": ""}, "round_id"),
            ("classic", {"table_id": ""}, "round_id"),
            ("classic", {"round_no": 0}, "round_no"),
            ("classic", {"min_stake": 0}, "min_stake"),
            ("classic", {"min_stake": 500, "max_stake": 100}, "min_stake"),
            ("classic", {"seats": ((1, "a"), (1, "b"))}, "seats"),
            ("classic", {"seats": ((0, "a"),)}, "seats"),
            ("classic", {"seats": ()}, "seats"),
            ("classic", {"seats": ((1, None),)}, "seats"),
            ("classic", {"seats": tuple((s, f"p{s}") for s in range(1, 18))}, "seats"),
            ("room", {"seats": tuple((s, f"p{s}") for s in range(1, 7))}, "seats"),
            ("kingmaker", {"seats": tuple((s, f"p{s}") for s in range(1, 7))}, "seats"),
            ("ante", {"seats": ((1, None), (2, None))}, "seats"),
            ("ante", {"seats": tuple((s, "x") for s in range(1, 6))}, "seats"),
            ("room", {"banker_player": None}, "banker_player"),
            ("kingmaker", {"banker_player": "k"}, "banker_player"),
            ("ante", {"banker_player": "k"}, "banker_player"),
            ("classic", {"banker_player": "p1"}, "banker_player"),
            ("classic", {"commitment": "ab" * 31}, "commitment"),
            ("classic", {"commitment": commitment(SEED).upper()}, "commitment"),
            ("classic", {"client_seed": "x" * 257}, "client_seed"),
            ("classic", {"nonce": -1}, "nonce"),
            ("classic", {"nonce": 2**64}, "nonce"),
            ("classic", {"algorithm": "pokdeng-shuffle-v0"}, "algorithm"),
        ],
    )
    def test_a_malformed_round_is_refused(self, profile: str, changes: dict[str, object], field: str) -> None:
        error = refuse_open(open_command(profile, **changes))
        assert isinstance(error, InvalidCommand) and error.field == field

    @pytest.mark.parametrize("profile", ["room", "kingmaker"])
    def test_room_and_kingmaker_players_hold_one_seat(self, profile: str) -> None:
        error = refuse_open(open_command(profile, seats=((1, "a"), (2, "a"))))
        assert isinstance(error, InvalidCommand) and error.field == "seats"

    def test_classic_players_may_hold_several_seats(self) -> None:
        played = open_round("classic", ((1, "a"), (2, "a"), (3, "b")))
        assert played.state.seats == ((1, "a"), (2, "a"), (3, "b"))

    def test_a_round_opens_once(self) -> None:
        played = open_round("classic")
        played.refuse(open_command("classic"), WrongPhase)

    def test_the_largest_tables(self) -> None:
        assert open_round("classic", tuple((s, f"p{s}") for s in range(1, 17))).state.phase is Phase.BETTING
        assert open_round("room", tuple((s, f"p{s}") for s in range(1, 6))).state.phase is Phase.BETTING

    def test_attach_shoe_checks_the_seed_against_the_commitment(self) -> None:
        played = open_round("classic")
        with pytest.raises(DomainError, match="commitment"):
            attach_shoe(played.state, bytes(32))
        with pytest.raises(WrongPhase):
            attach_shoe(RoundState(), SEED)
        state = attach_shoe(played.state, SEED)
        assert state == played.state  # the shoe is private: not part of the round's value
        assert state.shoe is not None and state.shoe.cards == shuffled_deck(SEED, CLIENT_SEED, NONCE, 1)

    def test_not_a_command(self) -> None:
        Round(RoundState()).refuse(c.RoundCommand(), InvalidCommand)
        open_round("classic").refuse(c.RoundCommand(), InvalidCommand)


# =======================================================================================
# betting


class TestBetting:
    @pytest.mark.parametrize(("profile", "multiple"), [("classic", 5), ("room", 5), ("kingmaker", 5), ("ante", 1)])
    def test_a_stake_reserves_the_most_it_can_lose(self, profile: str, multiple: int) -> None:
        played = open_round(profile)
        (placed,) = played.bet(1, 200, "p1")
        assert isinstance(placed, e.BetPlaced)
        assert (placed.seat, placed.player, placed.stake, placed.reserved) == (1, "p1", 200, 200 * multiple)
        assert placed.banker_reserved == (200 * multiple if profile == "room" else 0)
        assert played.state.reserved == (("p1", 200 * multiple),)

    def test_room_banker_reserves_five_times_every_stake(self) -> None:
        played = open_round("room")
        played.bet(1, 100)
        played.bet(2, 300)
        played.bet(4, 50)
        assert played.state.banker_reserved == 5 * (100 + 300 + 50)
        assert [ev.banker_reserved for ev in played.of(e.BetPlaced)] == [500, 1500, 250]

    def test_reservations_add_up_per_wallet(self) -> None:
        played = open_round("classic", ((1, "a"), (2, "b"), (3, "a")))
        played.bet(1, 100, "a")
        played.bet(2, 100, "b")
        played.bet(3, 40, "a")
        played.bet(2, 10, "a")  # a backs b's hand too
        assert played.state.reserved == (("a", 750), ("b", 500))

    @pytest.mark.parametrize("profile", PROFILE_NAMES)
    def test_a_stake_the_wallet_cannot_cover_is_refused(self, profile: str) -> None:
        played = open_round(profile)
        required = 100 * (1 if profile == "ante" else 5)
        error = played.refuse(c.PlaceBet(1, "p1", 100, required - 1, BIG), InsufficientFunds)
        assert isinstance(error, InsufficientFunds)
        assert (error.required, error.available, error.wallet) == (required, required - 1, "p1")
        assert "p1" in error.message and str(required) in error.message
        played.bet(1, 100, "p1", available=required)  # exactly enough is enough

    def test_a_stake_the_room_banker_cannot_cover_is_refused(self) -> None:
        played = open_round("room")
        played.bet(1, 100, available=500, banker_available=500)
        error = played.refuse(c.PlaceBet(2, "p2", 100, BIG, 499), InsufficientFunds)
        assert isinstance(error, InsufficientFunds)
        assert (error.required, error.available, error.wallet) == (500, 499, "bank")
        played.refuse(c.PlaceBet(2, "p2", 100, BIG, None), InvalidCommand)

    @pytest.mark.parametrize("stake", [9, 1001, 0, -100, True, 100.0, "100"])
    def test_stake_limits(self, stake: object) -> None:
        played = open_round("classic", max_stake=1000)
        played.refuse(c.PlaceBet(1, "p1", stake, BIG), InvalidCommand)  # type: ignore[arg-type]
        played.bet(1, 10)
        played.bet(2, 1000)

    def test_an_ante_wager_is_even(self) -> None:
        played = open_round("ante")
        error = played.refuse(c.PlaceBet(1, "ann", 101, BIG), InvalidCommand)
        assert "even" in error.message
        played.bet(1, 102, "ann")

    @pytest.mark.parametrize(("min_stake", "max_stake", "field"), [(11, 1000, "min_stake"), (10, 1001, "max_stake")])
    def test_an_ante_round_opens_with_even_limits_only(self, min_stake: int, max_stake: int, field: str) -> None:
        """Found by an outside rules oracle: the table refused odd ante limits, the round itself did not."""
        with pytest.raises(InvalidCommand, match="even") as raised:
            open_round("ante", min_stake=min_stake, max_stake=max_stake)
        assert raised.value.field == field
        open_round("classic", min_stake=min_stake, max_stake=max_stake)  # (other profiles: any limits)

    def test_a_duplicate_bet_is_refused(self) -> None:
        played = open_round("room")
        played.bet(1, 100)
        played.refuse(c.PlaceBet(1, "p1", 200, BIG, BIG), DomainError)
        ante = open_round("ante")
        ante.bet(3, 100, "ann")
        ante.refuse(c.PlaceBet(3, "ann", 100, BIG), DomainError)
        ante.bet(3, 100, "bob")

    def test_the_banker_cannot_bet(self) -> None:
        played = open_round("room")
        played.refuse(c.PlaceBet(1, "bank", 100, BIG, BIG), DomainError)
        classic = open_round("classic", ((1, "a"),), banker="dealer")
        refused = classic.refuse(c.PlaceBet(1, "dealer", 100, BIG, BIG), DomainError)
        assert type(refused) is DomainError and refused.code == "rule_violation"  # a rule, not another's turn

    @pytest.mark.parametrize("profile", ["room", "kingmaker"])
    def test_only_the_holder_bets_on_its_seat(self, profile: str) -> None:
        played = open_round(profile)
        played.refuse(c.PlaceBet(1, "p2", 100, BIG, BIG), NotYourTurn)
        played.refuse(c.PlaceBet(1, "stranger", 100, BIG, BIG), NotYourTurn)

    def test_unknown_seats_and_players(self) -> None:
        played = open_round("classic")
        played.refuse(c.PlaceBet(9, "p1", 100, BIG), UnknownSeat)
        played.refuse(c.PlaceBet(BANKER, "p1", 100, BIG), UnknownSeat)
        played.refuse(c.PlaceBet(1, "", 100, BIG), InvalidCommand)
        open_round("ante").refuse(c.PlaceBet(6, "ann", 100, BIG), UnknownSeat)

    def test_ante_positions_take_any_number_of_wallets(self) -> None:
        played = open_round("ante")
        for player in ("ann", "bob", "cat"):
            played.bet(2, 100, player)
        played.bet(5, 40, "ann")
        assert played.state.reserved == (("ann", 140), ("bob", 100), ("cat", 100))

    def test_classic_backers_settle_by_the_hand_they_back(self) -> None:
        played = dealt_round(
            "classic",
            {1: "9H 9C", 2: MID5},  # seat 1: pok deng
            "2D 4D",  # the banker: 6, song deng
            bets=[(1, "p1", 100), (1, "backer", 50), (2, "p2", 100), (2, "p1", 20)],
        )
        assert legal_commands(played.state, 2) == ("draw", "stay")
        played.refuse(c.Stay(2, "p1"), NotYourTurn)  # a backer does not decide for the hand
        played.stay(2)
        played.do(c.BankerStay())
        settled = {(ev.seat, ev.player): ev.net for ev in played.of(e.BetSettled)}
        assert settled == {(1, "p1"): 200, (1, "backer"): 100, (2, "p2"): -200, (2, "p1"): -40}
        assert played.net("p1") == 160 and played.net("backer") == 100
        check_books(played)

    def test_a_classic_player_plays_each_of_its_seats_in_turn(self) -> None:
        played = dealt_round(
            "classic",
            {1: MID5, 2: MID6, 3: MID7},
            "KS QS",
            "AH 2H",
            seats=((1, "a"), (2, "b"), (3, "a")),
        )
        assert played.state.turn == 1
        played.refuse(c.Draw(3, "a"), NotYourTurn)
        played.draw(1)
        played.stay(2)
        assert played.state.turn == 3
        played.draw(3)
        drawn = [(ev.seat, ev.card) for ev in played.of(e.CardDrawn)]
        assert drawn == [(1, "AH"), (3, "2H")]
        assert played.state.phase is Phase.BANKER_TURN


# =======================================================================================
# the deal


class TestDeal:
    def test_the_deal_goes_seat_by_seat_one_card_at_a_time_banker_last(self) -> None:
        shoe = stack({1: "AS 2S", 3: "3S 4S", 4: "5S 6S"}, "7S 8S")
        played = open_round("classic", ((1, "a"), (2, "b"), (3, "c"), (4, "d")), shoe=shoe)
        for seat in (4, 1, 3):  # seat 2 is seated but does not bet: it is not dealt
            played.bet(seat)
        played.deal()
        dealt = played.dealt()
        assert dealt == [(1, "AS"), (3, "3S"), (4, "5S"), (0, "7S"), (1, "2S"), (3, "4S"), (4, "6S"), (0, "8S")]
        assert [card for _, card in dealt] == [str(card) for card in shoe[:8]]
        assert played.state.in_play == (1, 3, 4)
        assert played.state.cards(2) == ()
        assert played.state.banker_cards == tuple(shoe[i] for i in (3, 7))

    def test_the_seeded_deal_takes_the_shuffle_in_order(self) -> None:
        played = open_round("room")
        for seat in (1, 2, 3, 4, 5):
            played.bet(seat)
        played.deal()
        shoe = shuffled_deck(SEED, CLIENT_SEED, NONCE, 1)
        assert [card for _, card in played.dealt()] == [str(card) for card in shoe[:12]]
        assert [seat for seat, _ in played.dealt()] == [1, 2, 3, 4, 5, 0] * 2

    def test_ante_deals_all_five_positions(self) -> None:
        played = open_round("ante")
        played.bet(2, 100, "ann")
        played.deal()
        assert [seat for seat, _ in played.dealt()] == [1, 2, 3, 4, 5, 0] * 2
        shoe = shuffled_deck(SEED, CLIENT_SEED, NONCE, 8)
        assert [card for _, card in played.dealt()] == [str(card) for card in shoe[:12]]
        assert [ev.seat for ev in played.of(e.BetSettled)] == [2]

    def test_nothing_to_deal_without_a_stake(self) -> None:
        played = open_round("classic")
        played.refuse(c.Deal(), DomainError)
        assert c.Deal.name not in legal_commands(played.state)

    def test_the_shoe_must_be_attached_to_deal(self) -> None:
        played = open_round("classic")
        played.state = RoundState()
        opened = Round(RoundState())
        opened.do(open_command("classic"))
        opened.bet(1)
        opened.refuse(c.Deal(), SealedShoe)

    def test_kingmaker_deals_the_banker_first_card_face_up(self) -> None:
        played = dealt_round("kingmaker", {1: MID5, 2: MID6}, "7D 3S")
        assert played.one(e.CardsDealt).banker_up_card == "7D"
        assert played.state.up_card is not None and str(played.state.up_card) == "7D"
        assert not played.of(e.SideBetWindowOpened)
        for profile in ("classic", "room", "ante"):
            hands = {s: MID5 if s % 2 else MID6 for s in range(1, 6)} if profile == "ante" else {1: MID5}
            other = dealt_round(profile, hands, "7D 3S")
            assert other.one(e.CardsDealt).banker_up_card is None


# =======================================================================================
# pok


class TestPok:
    @pytest.mark.parametrize("profile", ["classic", "room", "kingmaker"])
    def test_a_player_pok_is_shown_at_once_and_takes_no_turn(self, profile: str) -> None:
        played = dealt_round(profile, {1: POK9, 2: MID5, 3: POK8}, "2H 4H")
        poks = played.of(e.PokDeclared)
        assert [(p.seat, p.cards, p.taem) for p in poks] == [(1, texts(POK9), 9), (3, texts(POK8), 8)]
        assert played.state.turn == 2
        assert legal_commands(played.state, 1) == () and legal_commands(played.state, 3) == ()
        played.refuse(c.Draw(1, "p1"), NotYourTurn)
        played.stay(2)
        assert played.state.turn is None
        assert not [ev for ev in played.of(e.CardDrawn) if ev.seat in (1, 3)]

    @pytest.mark.parametrize("profile", ["classic", "room", "kingmaker"])
    def test_a_banker_pok_ends_the_round_at_once(self, profile: str) -> None:
        played = dealt_round(profile, {1: LOW2, 2: MID5, 3: POK8}, "KD 8D")  # up card K: no side bets
        assert played.state.is_closed
        assert not played.of(e.CardDrawn) and not played.of(e.PlayerStood)
        assert [p.seat for p in played.of(e.PokDeclared)] == [3, BANKER]
        revealed = played.one(e.HandsRevealed)
        assert revealed.seats == (1, 2, 3) and not revealed.selective
        assert played.kinds[-2:] == ["round_settled", "round_closed"]  # a stacked shoe has no seed to reveal
        check_books(played)

    def test_every_player_pok_goes_straight_to_the_banker(self) -> None:
        played = dealt_round("classic", {1: POK9, 2: POK8}, MID5)
        assert played.state.phase is Phase.BANKER_TURN
        assert legal_commands(played.state, BANKER) == ("banker_reveal", "banker_draw", "banker_stay")

    def test_classic_pok_deng_worked_checks(self) -> None:
        pok_deng = dealt_round("classic", {1: "9S 9D"}, "AC 4C", "4D")
        pok_deng.do(c.BankerDraw())
        assert pok_deng.net("p1") == 200
        both = dealt_round("classic", {1: "5S 4C"}, "9S 9D")
        assert both.state.is_closed and both.net("p1") == 100


# =======================================================================================
# players' turns


class TestPlayerTurns:
    @pytest.mark.parametrize("profile", ["room", "kingmaker"])
    def test_taem_0_to_3_draws_automatically(self, profile: str) -> None:
        played = dealt_round(profile, {1: "KS QS", 2: LOW2, 3: LOW3, 4: MID7}, "6D 10S", "AH 2H 3H")
        drawn = [(ev.seat, ev.card, ev.reason) for ev in played.of(e.CardDrawn)]
        assert drawn == [(1, "AH", "auto"), (2, "2H", "auto"), (3, "3H", "auto")]
        assert played.state.turn == 4

    @pytest.mark.parametrize("profile", ["room", "kingmaker"])
    @pytest.mark.parametrize("hand", ["2H 2D", MID5, MID6, MID7])
    def test_taem_4_to_7_chooses(self, profile: str, hand: str) -> None:
        played = dealt_round(profile, {1: hand, 2: "6S 10H"}, "6D 10S")
        assert played.state.turn == 1 and not played.of(e.CardDrawn)
        assert legal_commands(played.state, 1) == ("draw", "stay")
        assert legal_commands(played.state, 2) == ()

    def test_automatic_draws_wait_for_their_turn(self) -> None:
        played = dealt_round("room", {1: MID6, 2: LOW2}, "6D 10S", "AH 2H")
        assert played.state.turn == 1 and not played.of(e.CardDrawn)
        played.draw(1)
        assert [(ev.seat, ev.card, ev.reason) for ev in played.of(e.CardDrawn)] == [
            (1, "AH", "choice"),
            (2, "2H", "auto"),
        ]

    @pytest.mark.parametrize("hand", ["KS QS", LOW2, LOW3, "2S 2D", MID5, MID6, MID7])
    def test_classic_chooses_on_any_hand_but_pok(self, hand: str) -> None:
        played = dealt_round("classic", {1: hand}, "6D 10S")
        assert played.state.turn == 1 and legal_commands(played.state, 1) == ("draw", "stay")
        assert not played.of(e.CardDrawn)

    def test_draws_take_the_next_card_in_turn_order(self) -> None:
        played = dealt_round("classic", {1: MID5, 2: MID6, 3: MID7}, "6D 10S", "AH 2H 3H")
        played.draw(1)
        played.stay(2)
        played.draw(3)
        played.do(c.BankerDraw())
        drawn = [(ev.seat, ev.card) for ev in played.of(e.CardDrawn)]
        assert drawn == [(1, "AH"), (3, "2H"), (0, "3H")]
        shoe = played.state.shoe
        assert shoe is not None and played.state.cards(1)[2] == shoe.cards[8]

    def test_no_third_draw_and_no_turn_out_of_order(self) -> None:
        played = dealt_round("classic", {1: MID5, 2: MID6}, "6D 10S", "AH 2H 3H")
        played.refuse(c.Draw(2, "p2"), NotYourTurn)
        played.refuse(c.Stay(2, "p2"), NotYourTurn)
        played.draw(1)
        played.refuse(c.Draw(1, "p1"), NotYourTurn)
        played.refuse(c.Stay(1, "p1"), NotYourTurn)
        played.draw(2)
        played.refuse(c.Draw(2, "p2"), WrongPhase)
        played.refuse(c.Draw(1, "p1"), WrongPhase)
        assert len(played.state.cards(1)) == 3

    def test_acting_for_another_player_is_refused(self) -> None:
        played = dealt_round("room", {1: MID5, 2: MID6}, "6D 10S")
        played.refuse(c.Draw(1, "p2"), NotYourTurn)
        played.refuse(c.Stay(1, "bank"), NotYourTurn)
        played.refuse(c.Stay(1, "stranger"), NotYourTurn)
        played.refuse(c.Stay(7, "p1"), UnknownSeat)


# =======================================================================================
# the banker's turn


class TestBankerTurn:
    @pytest.mark.parametrize("banker", [LOW2, LOW3, "KS QS", "5H 8H"])
    def test_room_banker_draws_at_once_on_0_to_3_without_revealing(self, banker: str) -> None:
        played = dealt_round("room", {1: MID6, 2: MID7}, banker, "AH 2H 3H")
        played.stay(1)
        played.stay(2)
        drawn = played.one(e.CardDrawn)
        assert (drawn.seat, drawn.card, drawn.reason) == (BANKER, "AH", "auto")
        assert not [ev for ev in played.of(e.HandsRevealed) if ev.selective]
        assert played.state.is_closed
        check_books(played)

    @pytest.mark.parametrize("profile", ["classic", "room"])
    def test_selective_reveal_settles_against_two_cards_then_the_rest(self, profile: str) -> None:
        # seats 1-3: 6, 7, 5; the banker 5 draws a 2 to 7 after revealing seats 1 and 3
        played = dealt_round(profile, {1: MID6, 2: MID7, 3: "AH 4S"}, "2D 3S", "2C")
        for seat in (1, 2, 3):
            played.stay(seat)
        assert played.state.phase is Phase.BANKER_TURN
        banker = played.state.banker_player
        assert legal_commands(played.state, BANKER) == ("banker_reveal", "banker_draw", "banker_stay")
        played.do(c.BankerReveal((3, 1), banker))
        first = played.of(e.HandsRevealed)[0]
        assert first.selective and first.seats == (1, 3)
        assert dict(first.hands)[BANKER] == texts("2D 3S")
        assert [(ev.seat, ev.outcome) for ev in played.of(e.BetSettled)] == [(1, "player_wins"), (3, "tie")]
        assert played.state.phase is Phase.BANKER_TURN and played.state.revealed == {1, 3}
        played.refuse(c.BankerReveal((1,), banker), DomainError)
        played.do(c.BankerDraw(banker))
        last = played.of(e.HandsRevealed)[1]
        assert not last.selective and last.seats == (2,)
        assert dict(last.hands)[BANKER] == texts("2D 3S 2C")
        assert [(ev.seat, ev.outcome) for ev in played.of(e.BetSettled)][2:] == [(2, "tie")]
        assert played.state.is_closed
        check_books(played)

    def test_revealing_every_hand_settles_the_round(self) -> None:
        played = dealt_round("classic", {1: MID6, 2: MID7}, MID5)
        played.stay(1)
        played.stay(2)
        played.do(c.BankerReveal((1,)))
        played.do(c.BankerReveal((2,)))
        assert played.state.is_closed and not played.of(e.CardDrawn)
        assert [ev.selective for ev in played.of(e.HandsRevealed)] == [True, True]
        check_books(played)

    def test_malformed_reveals(self) -> None:
        played = dealt_round("classic", {1: MID6, 2: MID7}, MID5)
        played.stay(1)
        played.stay(2)
        played.refuse(c.BankerReveal(()), InvalidCommand)
        played.refuse(c.BankerReveal((1, 1)), InvalidCommand)
        played.refuse(c.BankerReveal((3,)), UnknownSeat)
        played.refuse(c.BankerReveal((1,), "p1"), NotYourTurn)

    def test_room_banker_only_the_banker_plays(self) -> None:
        played = dealt_round("room", {1: MID6}, MID5)
        played.stay(1)
        for player in (None, "p1", "stranger"):
            played.refuse(c.BankerDraw(player), NotYourTurn)
            played.refuse(c.BankerStay(player), NotYourTurn)
            played.refuse(c.BankerReveal((1,), player), NotYourTurn)
        assert legal_commands(played.state) == ("time_out_turn", "void_round")
        played.do(c.BankerStay("bank"))
        assert played.state.is_closed

    def test_classic_house_banker_is_played_by_the_operator(self) -> None:
        played = dealt_round("classic", {1: MID6}, MID5)
        played.stay(1)
        assert legal_commands(played.state) == (
            "time_out_turn",
            "banker_reveal",
            "banker_draw",
            "banker_stay",
            "void_round",
        )
        played.refuse(c.BankerStay("p1"), NotYourTurn)
        played.do(c.BankerStay())
        assert played.state.is_closed

    @pytest.mark.parametrize(
        ("banker", "draws"), [(LOW2, True), (MID5, True), ("3D 2C", True), (MID6, False), (MID7, False)]
    )
    def test_kingmaker_banker_draws_on_0_to_5_and_stands_on_6_7(self, banker: str, draws: bool) -> None:
        played = dealt_round("kingmaker", {1: "6S 10H"}, banker, "AH 2H")
        played.stay(1)
        assert played.state.is_closed
        own = [ev for ev in played.events if isinstance(ev, e.CardDrawn | e.PlayerStood) and ev.seat == BANKER]
        assert len(own) == 1
        assert isinstance(own[0], e.CardDrawn if draws else e.PlayerStood) and own[0].reason == "auto"

    def test_kingmaker_banker_has_no_choice(self) -> None:
        played = dealt_round("kingmaker", {1: MID6, 2: MID5}, MID7)
        played.stay(1)
        assert legal_commands(played.state, BANKER) == ()
        played.stay(2)
        assert played.state.is_closed
        played.refuse(c.BankerReveal((1,)), WrongPhase)


# =======================================================================================
# kingmaker side bets


class TestSideBets:
    @pytest.mark.parametrize("up", ["8D", "9C"])
    def test_an_up_card_8_or_9_opens_the_window(self, up: str) -> None:
        played = dealt_round("kingmaker", {1: MID6, 2: LOW2, 3: POK9}, f"{up} 2S")
        assert played.one(e.SideBetWindowOpened).up_card == up
        assert played.state.phase is Phase.SIDE_BETS and not played.of(e.CardDrawn)
        assert [p.seat for p in played.of(e.PokDeclared)] == [3]  # players' poks show at once
        for seat in (1, 2, 3):
            assert legal_commands(played.state, seat) == ("place_side_bet",)
        assert legal_commands(played.state) == ("close_side_bets", "time_out_turn", "void_round")

    @pytest.mark.parametrize("up", ["AD", "7D", "10D", "KD"])
    def test_other_up_cards_open_no_window(self, up: str) -> None:
        played = dealt_round("kingmaker", {1: MID6}, f"{up} 3S")
        assert not played.of(e.SideBetWindowOpened) and played.state.phase is Phase.PLAYER_TURNS
        played.refuse(c.PlaceSideBet(1, "p1", BIG), WrongPhase)

    def test_a_side_bet_equals_the_main_stake_and_is_reserved(self) -> None:
        played = dealt_round("kingmaker", {1: MID6, 2: MID5}, "8D 6S", stakes={1: 300, 2: 40})
        (placed,) = played.do(c.PlaceSideBet(1, "p1", 300))
        assert isinstance(placed, e.SideBetPlaced)
        assert (placed.seat, placed.player, placed.stake, placed.reserved) == (1, "p1", 300, 300)
        assert dict(played.state.reserved) == {"p1": 1800, "p2": 200}
        assert legal_commands(played.state, 1) == ()
        played.refuse(c.PlaceSideBet(1, "p1", BIG), DomainError)
        error = played.refuse(c.PlaceSideBet(2, "p2", 39), InsufficientFunds)
        assert isinstance(error, InsufficientFunds) and (error.required, error.available) == (40, 39)
        played.refuse(c.PlaceSideBet(2, "p1", BIG), NotYourTurn)
        played.refuse(c.PlaceSideBet(9, "p1", BIG), UnknownSeat)

    def test_a_seat_without_a_stake_has_no_side_bet(self) -> None:
        played = dealt_round("kingmaker", {1: MID6}, "8D 2S", seats=((1, "p1"), (2, "p2")))
        assert legal_commands(played.state, 2) == ()
        played.refuse(c.PlaceSideBet(2, "p2", BIG), DomainError)

    def test_a_banker_natural_pays_side_bets_and_ends_the_round(self) -> None:
        played = dealt_round("kingmaker", {1: MID6, 2: LOW2}, "9D KC", stakes={1: 1000, 2: 1000})
        played.do(c.PlaceSideBet(1, "p1", BIG))
        played.do(c.CloseSideBets())
        settled = played.one(e.SideBetsSettled)
        assert settled.natural and settled.results == ((1, "p1", 1000, 1200),)
        assert played.state.is_closed and not played.of(e.CardDrawn)
        assert played.of(e.PokDeclared)[-1].seat == BANKER
        assert played.net("p1") == 1200 - 1000 and played.net("p2") == -1000
        check_books(played)

    def test_no_natural_loses_the_side_bets_and_play_goes_on(self) -> None:
        played = dealt_round("kingmaker", {1: MID6, 2: LOW2}, "8D 6S", "AH 2H")
        played.do(c.PlaceSideBet(2, "p2", BIG))
        played.do(c.CloseSideBets())
        settled = played.one(e.SideBetsSettled)
        assert not settled.natural and settled.results == ((2, "p2", 100, -100),)
        assert played.state.phase is Phase.PLAYER_TURNS and played.state.turn == 1
        played.stay(1)
        assert [(ev.seat, ev.reason) for ev in played.of(e.CardDrawn)] == [(2, "auto"), (BANKER, "auto")]
        check_books(played)
        assert played.net("p2") == -100 + played.of(e.BetSettled)[1].net

    def test_the_window_times_out_like_a_close(self) -> None:
        played = dealt_round("kingmaker", {1: MID6}, "8D 6S")
        played.do(c.TimeOutTurn())
        assert played.one(e.SideBetsSettled).results == ()
        assert not played.of(e.TurnTimedOut)
        assert played.state.phase is Phase.PLAYER_TURNS

    def test_a_natural_under_a_low_up_card_still_ends_the_round(self) -> None:
        played = dealt_round("kingmaker", {1: MID6}, "4D 4S")
        assert not played.of(e.SideBetWindowOpened) and played.state.is_closed

    def test_every_player_pok_with_a_window(self) -> None:
        played = dealt_round("kingmaker", {1: POK9}, "8D 6S", "AH")
        assert played.state.phase is Phase.SIDE_BETS
        played.do(c.CloseSideBets())
        assert played.state.is_closed  # the banker's 4 draws automatically
        assert played.one(e.CardDrawn).seat == BANKER


# =======================================================================================
# ante


class TestAnte:
    HANDS: ClassVar[dict[int, str]] = {1: "7H 6C", 2: "JC 7H", 3: "5C 5H", 4: "10D JC", 5: "JD 8D"}

    @pytest.mark.parametrize(
        ("banker", "position", "net"),
        [("5D 6S", 1, 50), ("3S 4D", 2, 0), ("AS 3D", 3, 100), ("2S 4H", 4, 50), ("4C 6H", 5, 100)],
    )
    def test_worked_checks_through_the_machine(self, banker: str, position: int, net: int) -> None:
        played = dealt_round("ante", self.HANDS, banker, stakes={p: 100 if p == position else 0 for p in self.HANDS})
        assert played.net(f"p{position}") == net
        check_books(played)

    def test_no_draws_straight_to_settlement(self) -> None:
        played = dealt_round("ante", self.HANDS, "5D 6S", bets=[(1, "ann", 100), (1, "bob", 200), (4, "ann", 40)])
        assert played.kinds == [
            "round_opened",
            "shuffle_committed",
            "bet_placed",
            "bet_placed",
            "bet_placed",
            "cards_dealt",
            "hands_revealed",
            "bet_settled",
            "bet_settled",
            "bet_settled",
            "round_settled",
            "round_closed",
        ]
        assert played.one(e.HandsRevealed).seats == (1, 2, 3, 4, 5)
        nets = [(ev.seat, ev.player, ev.ante_net, ev.bet_net, ev.net) for ev in played.of(e.BetSettled)]
        # position 4 holds a 10 and a face card: a special hand, so its bet is paid too
        assert nets == [(1, "ann", 50, 0, 50), (1, "bob", 100, 0, 100), (4, "ann", 20, 20, 40)]
        check_books(played)

    def test_a_seeded_ante_round_reveals_its_seed(self) -> None:
        played = open_round("ante")
        played.bet(3, 100, "ann")
        played.deal()
        assert played.state.is_closed
        assert played.kinds[-2:] == ["seed_revealed", "round_closed"]


# =======================================================================================
# timeouts


class TestTimeouts:
    @pytest.mark.parametrize(("hand", "action"), [("KS QS", "draw"), (LOW3, "draw"), ("2H 2D", "stay"), (MID7, "stay")])
    def test_a_player_timeout_takes_the_automatic_action(self, hand: str, action: str) -> None:
        played = dealt_round("classic", {1: hand, 2: MID5}, MID6, "AH")
        played.do(c.TimeOutTurn())
        timed = played.one(e.TurnTimedOut)
        assert (timed.seat, timed.action) == (1, action)
        follow = played.events[played.events.index(timed) + 1]
        if action == "draw":
            assert isinstance(follow, e.CardDrawn) and (follow.seat, follow.card, follow.reason) == (1, "AH", "timeout")
        else:
            assert isinstance(follow, e.PlayerStood) and (follow.seat, follow.reason) == (1, "timeout")
        assert played.state.turn == 2

    def test_a_room_player_timeout_on_a_free_choice_stays(self) -> None:
        played = dealt_round("room", {1: MID5}, MID6)
        played.do(c.TimeOutTurn())
        assert played.one(e.TurnTimedOut).action == "stay"

    @pytest.mark.parametrize(
        ("profile", "banker", "action"),
        [("classic", LOW3, "draw"), ("classic", "KS QS", "draw"), ("classic", MID5, "stay"), ("room", MID5, "stay")],
    )
    def test_a_banker_timeout_follows_the_profile(self, profile: str, banker: str, action: str) -> None:
        played = dealt_round(profile, {1: MID6}, banker, "AH")
        played.stay(1)
        played.do(c.TimeOutTurn())
        timed = played.one(e.TurnTimedOut)
        assert (timed.seat, timed.action) == (BANKER, action)
        own = played.events[played.events.index(timed) + 1]
        assert isinstance(own, e.CardDrawn if action == "draw" else e.PlayerStood) and own.seat == BANKER
        assert own.reason == "timeout"
        assert played.state.is_closed
        check_books(played)

    @pytest.mark.parametrize("profile", PROFILE_NAMES)
    def test_no_timeout_outside_a_turn(self, profile: str) -> None:
        played = open_round(profile)
        played.refuse(c.TimeOutTurn(), WrongPhase)


# =======================================================================================
# void


def _betting() -> Round:
    played = open_round("room")
    played.bet(1, 100)
    played.bet(2, 200)
    return played


def _side_bets() -> Round:
    played = dealt_round("kingmaker", {1: MID6, 2: MID5}, "9D 6S")
    played.do(c.PlaceSideBet(1, "p1", BIG))
    return played


def _player_turns() -> Round:
    return dealt_round("room", {1: MID6, 2: MID5}, MID7, banker="bank")


def _banker_turn() -> Round:
    played = dealt_round("room", {1: MID6, 2: MID5}, MID7)
    played.stay(1)
    played.stay(2)
    played.do(c.BankerReveal((1,), "bank"))  # one stake already settled: still voidable
    return played


VOIDABLE: dict[str, Callable[[], Round]] = {
    "betting": _betting,
    "side_bets": _side_bets,
    "player_turns": _player_turns,
    "banker_turn": _banker_turn,
}


class TestVoid:
    @pytest.mark.parametrize("phase", list(VOIDABLE))
    def test_void_releases_every_reservation(self, phase: str) -> None:
        played = VOIDABLE[phase]()
        assert played.state.phase.value == phase
        produced = played.do(c.VoidRound("  dealer error  "))
        voided = produced[0]
        assert isinstance(voided, e.RoundVoided) and voided.reason == "dealer error"
        expected = dict(played.state.reserved)
        if played.state.banker_player:
            expected[played.state.banker_player] = played.state.banker_reserved
        assert dict(voided.wallets) == expected and all(amount > 0 for _, amount in voided.wallets)
        seeded = played.state.shoe is not None and played.state.shoe.server_seed
        assert [ev.kind for ev in produced[1:]] == (["seed_revealed"] if seeded else []) + ["round_closed"]
        assert played.state.is_closed and played.state.outcome == "voided"
        assert wallet_changes(played.state) == {}
        check_books(played)

    def test_a_seeded_void_reveals_the_seed(self) -> None:
        played = open_round("classic")
        played.bet(1)
        produced = played.do(c.VoidRound("power cut"))
        assert [ev.kind for ev in produced] == ["round_voided", "seed_revealed", "round_closed"]
        revealed = produced[1]
        assert isinstance(revealed, e.SeedRevealed) and revealed.server_seed == SEED.hex()
        closed = produced[2]
        assert isinstance(closed, e.RoundClosed) and closed.outcome == "voided"

    @pytest.mark.parametrize(
        ("profile", "phase"),
        [
            ("ante", Phase.BETTING),
            ("kingmaker", Phase.SIDE_BETS),
            ("kingmaker", Phase.PLAYER_TURNS),
            ("room", Phase.PLAYER_TURNS),
            ("room", Phase.BANKER_TURN),
            ("classic", Phase.BANKER_TURN),
        ],
    )
    def test_a_seeded_void_at_each_phase_reveals_the_seed(self, profile: str, phase: Phase) -> None:
        for nonce in range(300):  # the first seeded round that rests in ``phase``
            played = open_round(profile, nonce=nonce)
            for seat in (1, 2, 3):
                played.bet(seat)
            if phase is not Phase.BETTING:
                played.deal()
            while not played.state.is_closed and played.state.phase is not phase:
                turn = played.state.turn
                if turn is None:
                    break
                played.stay(turn)
            if played.state.phase is phase:
                break
        else:
            pytest.fail(f"no seeded {profile} round rests in {phase}")
        produced = played.do(c.VoidRound("dealer error"))
        assert [ev.kind for ev in produced] == ["round_voided", "seed_revealed", "round_closed"]
        revealed = produced[1]
        assert isinstance(revealed, e.SeedRevealed)
        assert hashlib.sha256(bytes.fromhex(revealed.server_seed)).hexdigest() == played.state.commitment
        check_books(played)

    def test_void_before_any_bet(self) -> None:
        played = open_round("kingmaker")
        played.do(c.VoidRound("nobody came"))
        assert played.one(e.RoundVoided).wallets == ()

    def test_void_needs_a_reason(self) -> None:
        played = open_round("classic")
        played.refuse(c.VoidRound("   "), InvalidCommand)

    def test_no_void_before_opening_or_after_closing(self) -> None:
        Round(RoundState()).refuse(c.VoidRound("x"), WrongPhase)
        played = dealt_round("classic", {1: MID5}, POK9)
        assert played.state.is_closed
        played.refuse(c.VoidRound("too late"), WrongPhase)


# =======================================================================================
# the seed's reveal and the close


class TestClose:
    @pytest.mark.parametrize("name", PROFILE_NAMES)
    def test_a_seeded_round_reveals_its_seed_and_closes(self, name: str) -> None:
        played = open_round(name)
        play_randomly(played, random.Random(5))
        assert played.kinds[-3:] == ["round_settled", "seed_revealed", "round_closed"]
        revealed = played.one(e.SeedRevealed)
        assert hashlib.sha256(bytes.fromhex(revealed.server_seed)).hexdigest() == played.state.commitment
        assert played.state.server_seed == SEED.hex()
        assert played.one(e.RoundClosed).outcome == "settled" and played.state.outcome == "settled"
        assert wallet_changes(played.state) == {p: n for p, n in played.state.nets}
        check_books(played)

    @pytest.mark.parametrize("name", PROFILE_NAMES)
    def test_every_state_is_a_proper_round_state(self, name: str) -> None:
        """``evolve`` copies states without ``dataclasses.replace``: each must still be exactly the dataclass."""
        played = play_randomly(open_round(name), random.Random(11))
        names = {f.name for f in dataclasses.fields(RoundState)}
        for state in played.states:
            assert type(state) is RoundState and set(vars(state)) == names
            assert dataclasses.replace(state) == state and hash(dataclasses.replace(state)) == hash(state)
            with pytest.raises(dataclasses.FrozenInstanceError):
                state.phase = Phase.NEW  # type: ignore[misc]

    def test_replay_gives_the_live_state(self) -> None:
        played = dealt_round("room", {1: MID6, 2: LOW2}, MID5, "AH 2H")
        played.stay(1)
        played.do(c.BankerReveal((2,), "bank"))
        played.do(c.BankerStay("bank"))
        assert replay(played.events) == played.state
        assert replay(played.events[4:], replay(played.events[:4])) == played.state


# =======================================================================================
# worked checks of RULES.md section 4 through the machine


class TestWorkedChecks:
    @pytest.mark.parametrize(
        ("player", "banker", "draws", "net"),
        [
            ("6C 4C", "KH 2S", "5C AC", 300),
            ("6C 4C", "KH 2S", "5C 3C", 200),
            ("6C 4C", "2S 3S", "5C", 100),
            ("7S 7H", "QC JC", "7C JD", 200),
        ],
    )
    def test_classic(self, player: str, banker: str, draws: str, net: int) -> None:
        played = dealt_round("classic", {1: player}, banker, draws)
        played.draw(1)
        banker_draws = len(draws.split()) > 1
        played.do(c.BankerDraw() if banker_draws else c.BankerStay())
        assert played.net("p1") == net
        check_books(played)

    def test_room_commission(self) -> None:
        # seat 1 wins at 1x (pok 9), seat 2 at 2x (song deng 6) against the banker's 5
        played = dealt_round("room", {1: "9H KC", 2: "4C 2C"}, "2S 3D", stakes={1: 1000, 2: 1000})
        played.stay(2)
        played.do(c.BankerStay("bank"))
        assert (played.net("p1"), played.net("p2")) == (970, 1940)
        settled = played.settled
        assert (settled.banker_net_before_commission, settled.banker_commission) == (-3000, 0)
        assert played.net("bank") == -3000 and settled.commission == 90
        check_books(played)

    def test_room_banker_pays_commission_on_its_gain(self) -> None:
        played = dealt_round("room", {1: MID5, 2: LOW2}, MID7, "KD", stakes={1: 1000, 2: 999})
        played.stay(1)
        played.do(c.BankerStay("bank"))
        settled = played.settled
        assert settled.banker_net_before_commission == 1999
        assert settled.banker_commission == 60  # ceil(1999 * 3%)
        assert played.net("bank") == 1939 and settled.commission == 60
        check_books(played)

    def test_kingmaker(self) -> None:
        win = dealt_round("kingmaker", {1: MID7}, MID6, stakes={1: 1000})
        win.stay(1)
        assert win.net("p1") == 950
        lose = dealt_round("kingmaker", {1: MID5}, "3H 4C", stakes={1: 1000})
        lose.stay(1)
        assert lose.net("p1") == -1000
        check_books(win)
        check_books(lose)


# =======================================================================================
# out-of-phase commands


def _new() -> Round:
    return Round(RoundState())


def _closed() -> Round:
    return dealt_round("classic", {1: MID5}, POK9)


def _prefix(until: type[e.RoundEvent]) -> Round:
    """A round whose state is a replay of a closed round's events up to and including ``until``."""
    played = dealt_round("room", {1: MID6, 2: MID5}, MID7)
    played.stay(1)
    played.stay(2)
    played.do(c.BankerStay("bank"))
    cut = next(i for i, ev in enumerate(played.events) if isinstance(ev, until)) + 1
    state = attach_stacked_shoe(replay(played.events[:cut]), [])
    return Round(state, played.events[:cut])


def _showdown() -> Round:
    return _prefix(e.HandsRevealed)


def _settled() -> Round:
    return _prefix(e.RoundSettled)


PHASES: dict[Phase, Callable[[], Round]] = {
    Phase.NEW: _new,
    Phase.BETTING: _betting,
    Phase.SIDE_BETS: _side_bets,
    Phase.PLAYER_TURNS: _player_turns,
    Phase.BANKER_TURN: _banker_turn,
    Phase.SHOWDOWN: _showdown,
    Phase.SETTLED: _settled,
    Phase.CLOSED: _closed,
}

# One well-formed command of each type, addressed to whoever could give it.
SAMPLES: dict[type[c.RoundCommand], c.RoundCommand] = {
    c.OpenRound: open_command("room"),
    c.PlaceBet: c.PlaceBet(3, "p3", 100, BIG, BIG),
    c.Deal: c.Deal(),
    c.PlaceSideBet: c.PlaceSideBet(2, "p2", BIG),
    c.CloseSideBets: c.CloseSideBets(),
    c.Draw: c.Draw(1, "p1"),
    c.Stay: c.Stay(1, "p1"),
    c.BankerReveal: c.BankerReveal((2,), "bank"),
    c.BankerDraw: c.BankerDraw("bank"),
    c.BankerStay: c.BankerStay("bank"),
    c.TimeOutTurn: c.TimeOutTurn(),
    c.VoidRound: c.VoidRound("because"),
}

FITS: dict[Phase, set[type[c.RoundCommand]]] = {
    Phase.NEW: {c.OpenRound},
    Phase.BETTING: {c.PlaceBet, c.Deal, c.VoidRound},
    Phase.SIDE_BETS: {c.PlaceSideBet, c.CloseSideBets, c.TimeOutTurn, c.VoidRound},
    Phase.PLAYER_TURNS: {c.Draw, c.Stay, c.TimeOutTurn, c.VoidRound},
    Phase.BANKER_TURN: {c.BankerReveal, c.BankerDraw, c.BankerStay, c.TimeOutTurn, c.VoidRound},
    Phase.SHOWDOWN: set(),
    Phase.SETTLED: set(),
    Phase.CLOSED: set(),
}


class TestOutOfPhase:
    def test_every_phase_is_covered(self) -> None:
        assert set(PHASES) == set(Phase)
        kinds = {k for k in vars(c).values() if isinstance(k, type) and issubclass(k, c.RoundCommand)}
        # ContributeSeed fits only rounds with contributions: its phases are in test_contributions.py
        assert set(SAMPLES) == kinds - {c.RoundCommand, c.ContributeSeed}

    @pytest.mark.parametrize("phase", list(Phase))
    @pytest.mark.parametrize("kind", list(SAMPLES), ids=lambda k: k.__name__)
    def test_a_command_that_does_not_fit_the_phase_is_refused(self, phase: Phase, kind: type[c.RoundCommand]) -> None:
        played = PHASES[phase]()
        assert played.state.phase is phase
        command = SAMPLES[kind]
        if kind in FITS[phase]:
            assert decide(played.state, command), f"{kind.__name__} fits {phase}"
            assert can(played.state, command)
        else:
            error = played.refuse(command, WrongPhase)
            assert phase.value in error.message
            assert not can(played.state, command)

    @pytest.mark.parametrize("phase", list(Phase))
    def test_legal_commands_name_only_what_fits(self, phase: Phase) -> None:
        state = PHASES[phase]().state
        names = {name for _, name in every_legal(state)} if state.profile else set(legal_commands(state))
        assert names <= {kind.name for kind in FITS[phase]}


# =======================================================================================
# legal_commands agrees with decide


PLAYER_COMMANDS = (c.PlaceBet.name, c.PlaceSideBet.name, c.Draw.name, c.Stay.name)
BANKER_COMMANDS = (c.BankerReveal.name, c.BankerDraw.name, c.BankerStay.name)
OPERATOR_COMMANDS = (c.Deal.name, c.CloseSideBets.name, c.TimeOutTurn.name, c.VoidRound.name)


def _unlisted(state: RoundState, name: str, seat: int | None) -> c.RoundCommand:
    """A command of ``name`` as the holder of ``seat`` (0: the banker, None: the operator) would give it."""
    if seat and seat != BANKER:
        holder = state.holder(seat) or "ann"
        if name == c.PlaceBet.name:
            return c.PlaceBet(seat, holder, state.min_stake * 2, BIG, BIG)
        if name == c.PlaceSideBet.name:
            return c.PlaceSideBet(seat, holder, BIG)
        return c.Draw(seat, holder) if name == c.Draw.name else c.Stay(seat, holder)
    if name == c.BankerReveal.name:
        unrevealed = tuple(s for s in state.in_play if s not in state.revealed) or (1,)
        return c.BankerReveal(unrevealed, state.banker_player)
    if name == c.BankerDraw.name:
        return c.BankerDraw(state.banker_player)
    if name == c.BankerStay.name:
        return c.BankerStay(state.banker_player)
    return random_command(random.Random(0), state, name, None)


def check_legal_commands_agree(state: RoundState, rnd: random.Random) -> None:
    for actor, name in every_legal(state):
        command = random_command(rnd, state, name, actor)
        assert decide(state, command), f"{name} by {actor} listed but gives nothing"
    for seat, _ in state.seats:
        listed = legal_commands(state, seat)
        for name in PLAYER_COMMANDS:
            if name not in listed:
                with pytest.raises(DomainError):
                    decide(state, _unlisted(state, name, seat))
    listed = legal_commands(state, BANKER)
    for name in BANKER_COMMANDS:
        if name not in listed:
            with pytest.raises(DomainError):
                decide(state, _unlisted(state, name, BANKER))
    listed = legal_commands(state)
    for name in OPERATOR_COMMANDS:
        if name not in listed:
            with pytest.raises(DomainError):
                decide(state, _unlisted(state, name, None))


class TestLegalCommands:
    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        name=st.sampled_from(PROFILE_NAMES),
        players=st.integers(1, 5),
        seed=st.binary(min_size=16, max_size=32),
        choices=st.integers(0, 2**64),
        void_at=VOID_AT,
    )
    def test_every_listed_command_is_accepted_and_unlisted_ones_refused(
        self, name: str, players: int, seed: bytes, choices: int, void_at: int | None
    ) -> None:
        rnd = random.Random(choices)
        profile = get_profile(name)
        seats = None if profile.fixed_positions else tuple((s, f"p{s}") for s in range(1, players + 1))
        played = open_round(name, seats, server_seed=seed)
        play_randomly(played, rnd, void_at=void_at)
        for state in played.states:
            check_legal_commands_agree(attach_shoe(state, seed), rnd)

    def test_kingmaker_side_bets_and_a_room_banker_agree(self) -> None:
        rnd = random.Random(3)
        for played in (_side_bets(), _banker_turn(), _player_turns(), _betting()):
            check_legal_commands_agree(played.state, rnd)

    def test_nothing_is_legal_before_the_round_opens_or_after_it_closes(self) -> None:
        for state in (RoundState(), _closed().state):
            assert legal_commands(state) == () and legal_commands(state, 1) == () and legal_commands(state, 0) == ()

    def test_an_unknown_seat_has_nothing_to_do(self) -> None:
        assert legal_commands(open_round("classic").state, 42) == ()

    def test_the_holder_who_has_bet_may_not_bet_again(self) -> None:
        played = open_round("classic")
        assert legal_commands(played.state, 1) == ("place_bet",)
        played.bet(1)
        assert legal_commands(played.state, 1) == ()
        played.bet(1, player="backer")  # a backer still may


# =======================================================================================
# money


class TestMoney:
    @pytest.mark.parametrize("name", PROFILE_NAMES)
    @pytest.mark.parametrize("seed", range(12))
    def test_every_closed_round_balances(self, name: str, seed: int) -> None:
        rnd = random.Random(seed)
        played = open_round(name, server_seed=bytes([seed]) * 32, nonce=seed)
        play_randomly(played, rnd, void_at=rnd.choice([None, None, None, rnd.randrange(12)]))
        check_books(played)

    def test_the_books_of_a_busy_classic_round(self) -> None:
        played = dealt_round(
            "classic",
            {1: "7S 7H", 2: MID5, 3: "JH QH"},
            "JC QD",
            "7C KS",
            bets=[(1, "p1", 100), (2, "p2", 50), (3, "p3", 70), (1, "p3", 30)],
        )
        played.draw(1)  # tong
        played.stay(2)
        played.draw(3)  # sam lueang
        played.do(c.BankerStay())
        nets = {(ev.seat, ev.player): ev.net for ev in played.of(e.BetSettled)}
        assert nets == {(1, "p1"): 500, (1, "p3"): 150, (2, "p2"): 50, (3, "p3"): 210}
        assert played.settled.house_net == -910
        check_books(played)

    def test_a_player_banker_is_a_wallet_in_the_round(self) -> None:
        played = dealt_round("classic", {1: MID5, 2: MID7}, MID6, banker="dealer")
        played.stay(1)
        played.stay(2)
        played.refuse(c.BankerStay(), NotYourTurn)
        played.do(c.BankerStay("dealer"))
        assert played.net("dealer") == 200 - 100
        assert {p: r for p, r, _ in played.settled.wallets}["dealer"] == 1000
        check_books(played)
