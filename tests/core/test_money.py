"""RULES.md section 2 (money) as properties over random hands and rounds, and the refusal of bad input.

* classic ``settle`` is antisymmetric: what A wins against B, B loses against A;
* every stake balances: ``player_net + banker_net + commission == 0``, in every profile;
* every round balances: ``RoundSettlement.balance == 0`` (stakes up to 10^12, side bets, a player banker);
* rounding: a fractional payout is floored, a commission rounded up: the house keeps the remainder;
* bad stakes raise ``StakeError``, bad profiles or options ``ProfileError``, bad cards ``CardError``.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pokdeng_core import (
    PROFILE_NAMES,
    Card,
    CardError,
    Outcome,
    PlayerHand,
    Profile,
    ProfileError,
    StakeError,
    canonical_deck,
    get_profile,
    settle,
    settle_round,
    settle_side_bet,
)
from pokdeng_core.settlement import check_stake

DECK = canonical_deck()
MAX_STAKE = 10**12
CLASSICS = [
    get_profile("classic"),
    get_profile("classic", straights=True),
    get_profile("classic", straights=True, ace_low=True),
]
PROFILES = [*CLASSICS, *(get_profile(name) for name in PROFILE_NAMES if name != "classic")]
RUNS = settings(max_examples=150, deadline=None)


@st.composite
def disjoint_hands(draw: st.DrawFn, count: int = 2) -> list[tuple[Card, ...]]:
    """``count`` single-deck hands of two or three cards, no card in two of them."""
    cards = draw(st.permutations(DECK))
    sizes = draw(st.lists(st.sampled_from((2, 3)), min_size=count, max_size=count))
    hands, at = [], 0
    for size in sizes:
        hands.append(tuple(cards[at : at + size]))
        at += size
    return hands


def ante_hand() -> st.SearchStrategy[tuple[Card, ...]]:
    """Two cards of an eight-deck shoe: any identities, repeats allowed."""
    return st.tuples(st.sampled_from(DECK), st.sampled_from(DECK))


def stakes(profile: Profile) -> st.SearchStrategy[int]:
    if profile.wager_split:
        return st.integers(1, MAX_STAKE // 2).map(lambda half: 2 * half)
    return st.integers(1, MAX_STAKE)


def hands_for(profile: Profile, count: int) -> st.SearchStrategy[list[tuple[Card, ...]]]:
    if profile.decks > 1:
        return st.lists(ante_hand(), min_size=count, max_size=count)
    return disjoint_hands(count)


# --- properties of one stake -----------------------------------------------------------------


@RUNS
@given(profile=st.sampled_from(CLASSICS), hands=disjoint_hands(), stake=st.integers(1, MAX_STAKE))
def test_classic_is_antisymmetric(profile: Profile, hands: list[tuple[Card, ...]], stake: int) -> None:
    a, b = hands
    forward = settle(profile, player=a, banker=b, stake=stake)
    backward = settle(profile, player=b, banker=a, stake=stake)
    assert forward.player_net == -backward.player_net
    assert forward.multiplier == backward.multiplier


@RUNS
@given(data=st.data(), profile=st.sampled_from(PROFILES))
def test_every_stake_balances(data: st.DataObject, profile: Profile) -> None:
    player, banker = data.draw(hands_for(profile, 2))
    stake = data.draw(stakes(profile))
    result = settle(profile, player=player, banker=banker, stake=stake)
    assert result.player_net + result.banker_net + result.commission == 0
    assert result.commission >= 0
    # A stake never loses more than its reservation.
    assert -result.player_net <= stake * profile.reserve_multiple
    # The outcome and the sign agree. (A tiny win may net 0: kingmaker pays floor(1 x 0.95) = 0
    # on a stake of 1; room takes a commission of 1, 3% of 1 rounded up, from a gross of 1.)
    if result.outcome is Outcome.TIE:
        assert result.player_net == result.gross == 0
    elif result.outcome is Outcome.PLAYER_WINS:
        assert result.player_net >= 0
    else:
        assert result.player_net < 0


@RUNS
@given(hands=disjoint_hands(), stake=st.integers(1, MAX_STAKE))
def test_kingmaker_rounding_floors_the_winner(hands: list[tuple[Card, ...]], stake: int) -> None:
    result = settle("kingmaker", player=hands[0], banker=hands[1], stake=stake)
    if result.outcome is Outcome.PLAYER_WINS and result.multiplier == Fraction(95, 100):
        assert result.player_net == stake * 95 // 100 == math.floor(Fraction(stake) * Fraction("0.95"))
    if result.outcome is Outcome.PLAYER_WINS:
        # Never more than the exact fraction: the house keeps the remainder.
        assert result.player_net <= stake * result.multiplier
        assert stake * result.multiplier - result.player_net < 1
    if result.outcome is Outcome.BANKER_WINS:
        assert result.player_net <= -stake  # max(1, banker's multiplier)


@RUNS
@given(hands=disjoint_hands(), stake=st.integers(1, MAX_STAKE))
def test_room_commission_is_rounded_up(hands: list[tuple[Card, ...]], stake: int) -> None:
    result = settle("room", player=hands[0], banker=hands[1], stake=stake)
    if result.outcome is Outcome.PLAYER_WINS:
        assert result.gross == stake * result.multiplier  # room multipliers are whole
        assert result.commission == math.ceil(Fraction(result.gross * 3, 100)) == -(-result.gross * 3 // 100)
        assert result.commission * 100 >= result.gross * 3  # the house keeps the remainder
        assert result.player_net == result.gross - result.commission
    else:
        assert result.commission == 0


@RUNS
@given(side_stake=st.integers(1, MAX_STAKE), natural=st.booleans())
def test_side_bet_rounding_floors_the_winner(side_stake: int, natural: bool) -> None:
    result = settle_side_bet(get_profile("kingmaker"), natural, side_stake)
    if natural:
        assert result.net == side_stake * 12 // 10 == math.floor(Fraction(side_stake) * Fraction("1.2"))
        assert result.net <= side_stake * Fraction(6, 5)  # never more than the exact fraction
    else:
        assert result.net == -side_stake


# --- properties of a round -------------------------------------------------------------------


@st.composite
def rounds(draw: st.DrawFn) -> tuple[Profile, tuple[Card, ...], list[PlayerHand], bool | None]:
    profile = draw(st.sampled_from(PROFILES))
    count = draw(st.integers(1, profile.max_hands))
    banker, *players = draw(hands_for(profile, count + 1))
    side_bets = profile.side_bet is not None and banker[0].points in profile.side_bet.up_card_points
    hands = []
    for cards in players:
        stake = draw(stakes(profile))
        side = stake if side_bets and draw(st.booleans()) else 0
        hands.append(PlayerHand(cards, stake, side))
    house: bool | None = None
    if profile.name in ("room", "classic"):
        house = draw(st.sampled_from((None, False, True)))
    return profile, banker, hands, house


@settings(max_examples=200, deadline=None)
@given(round_=rounds())
def test_every_round_balances(round_: tuple[Profile, tuple[Card, ...], list[PlayerHand], bool | None]) -> None:
    profile, banker, hands, house = round_
    result = settle_round(profile, banker=banker, hands=hands, banker_is_house=house)
    assert result.balance == 0
    assert sum(result.player_nets) + result.banker_net + result.commission == 0
    # Each hand's net is its stake's settlement plus its side bet.
    sides = iter(result.side_bets)
    for hand, stake, net in zip(hands, result.stakes, result.player_nets, strict=True):
        alone = settle(profile, player=hand.cards, banker=banker, stake=hand.stake)
        side = next(sides).net if hand.side_stake else 0
        assert net == alone.player_net + side == stake.player_net + side
    # The banker's commission (a player banker in room): rounded up on a gain, nothing on a loss.
    before = result.banker_net_before_commission
    if result.banker_commission:
        assert not result.banker_is_house and before > 0
        assert result.banker_commission == -(-before * 3 // 100)
    assert result.house_net == (result.banker_net if result.banker_is_house else 0)


# --- bad input -------------------------------------------------------------------------------

BAD_STAKES = [
    (1.5, "whole number"),
    (100.0, "whole number"),
    ("100", "whole number"),
    (None, "whole number"),
    (Decimal(100), "whole number"),
    (Fraction(100), "whole number"),
    (True, "whole number"),
    (False, "whole number"),
    (0, "positive"),
    (-100, "positive"),
]


@pytest.mark.parametrize(("stake", "reason"), BAD_STAKES, ids=repr)
@pytest.mark.parametrize("name", PROFILE_NAMES)
def test_bad_stakes_raise_stake_error(name: str, stake: object, reason: str) -> None:
    with pytest.raises(StakeError, match=reason) as error:
        settle(name, player="2S 3D", banker="4H 5C", stake=stake)  # type: ignore[arg-type]
    assert isinstance(error.value, ValueError)
    with pytest.raises(StakeError, match=reason):
        settle_round(name, banker="4H 5C", hands=[("2S 3D", stake)])  # type: ignore[list-item]


@pytest.mark.parametrize("wager", [1, 101, 10**12 + 1])
def test_odd_ante_wagers_raise_stake_error(wager: int) -> None:
    with pytest.raises(StakeError, match="even"):
        settle("ante", player="2S 3D", banker="4H 5C", stake=wager)
    with pytest.raises(StakeError, match="even"):
        check_stake(get_profile("ante"), wager)
    assert settle("classic", player="2S 3D", banker="4H 5C", stake=wager).stake == wager  # odd is fine elsewhere


@pytest.mark.parametrize(
    ("call", "reason"),
    [
        (lambda: get_profile("baccarat"), "unknown profile 'baccarat'"),
        (lambda: get_profile(""), "unknown profile"),
        (lambda: get_profile(None), "must be text"),  # type: ignore[arg-type]
        (lambda: get_profile("room", version=2), "no version 2"),
        (lambda: get_profile("classic", straight=True), "no option straight"),
        (lambda: get_profile("room", straights=True), "no option straights"),
        (lambda: get_profile("classic", straights="yes"), "true or false"),
        (lambda: get_profile("classic", straights=1), "true or false"),
        (lambda: get_profile("classic", ace_low=True), "ace_low only applies when straights are on"),
        (lambda: settle("baccarat", player="2S 3D", banker="4H 5C", stake=100), "unknown profile"),
        (lambda: settle_side_bet(get_profile("room"), True, 100), "no side bet"),
    ],
)
def test_unknown_profiles_and_options_raise_profile_error(call: object, reason: str) -> None:
    with pytest.raises(ProfileError, match=reason) as error:
        call()  # type: ignore[operator]
    assert isinstance(error.value, ValueError)


def test_profiles_are_cached_and_immutable() -> None:
    assert get_profile("classic", straights=True) is get_profile("classic", straights=True)
    assert get_profile("classic", straights=False) == get_profile("classic")
    assert get_profile(get_profile("room")) is get_profile("room")
    assert get_profile("classic", straights=True).key == "classic@1+straights"
    with pytest.raises(ValueError):
        get_profile("room").decks = 2


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        (dict(banker="9S KD", hands=[PlayerHand("2S 3D", 100, 100)], profile="room"), "no side bet"),
        (dict(banker="9S KD", hands=[PlayerHand("2S 3D", 100, 50)], profile="kingmaker"), "equals its main stake"),
        (dict(banker="KD 9S", hands=[PlayerHand("2S 3D", 100, 100)], profile="kingmaker"), "up card KD"),
        (dict(banker="9S KD", hands=[PlayerHand("2S 3D", 100, -100)], profile="kingmaker"), "positive"),
    ],
)
def test_bad_side_stakes_raise_stake_error(kwargs: dict[str, object], reason: str) -> None:
    with pytest.raises(StakeError, match=reason):
        settle_round(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("profile", "player", "banker", "reason"),
    [
        ("classic", "2S 3D", "2S 5C", "dealt twice"),  # a single deck holds each card once
        ("room", "2S 3D 4H", "4H 5C", "dealt twice"),
        ("kingmaker", "2S 2S", "4H 5C", "same card twice"),
        ("classic", "2S 3D 4H 5C", "4D 5H", "two or three cards"),
        ("room", "2S", "4D 5H", "two or three cards"),
        ("ante", "2S 3D 4H", "4D 5H", "two cards"),
        ("classic", "2S XX", "4D 5H", "'XX'"),
    ],
)
def test_bad_hands_raise_card_error(profile: str, player: str, banker: str, reason: str) -> None:
    with pytest.raises(CardError, match=reason):
        settle(profile, player=player, banker=banker, stake=100)


def test_an_eight_deck_shoe_may_repeat_a_card() -> None:
    assert settle("ante", player="5S 5S", banker="5S 2D", stake=100).player_net == 100  # special pair vs 7


def test_different_hands_of_a_round_share_no_card() -> None:
    with pytest.raises(CardError, match="dealt twice"):
        settle_round("classic", banker="4H 5C", hands=[("2S 3D", 100), ("3D 9C", 100)])
