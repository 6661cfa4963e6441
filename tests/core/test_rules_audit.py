"""The rules read a second time: an independent reading of the rules (docs/rules.md), checked against the engine.

``Reference`` writes the rules of docs/rules.md sections 1 to 3 (RULES.md's) again, from the text alone: a
few lines per profile that share nothing with ``pokdeng_core`` but the ``Card`` they read (no ``taem``, no
``deng``, no ``HandKind``, no multiplier tables). Then:

* every stake ``settle`` settles agrees with it, under every profile and both forms of each classic option
  (random hands; every ante hand against a hand of every ante class, and the other way round);
* every round the machine plays by random legal decisions agrees with it step by step: who draws, and when,
  on what; a banker's pok ends the round before anyone draws; the kingmaker natural and its side bets; a
  selective reveal only on the banker's two cards, only while it has a choice; every stake's net and
  commission; the room banker's commission on its net for the round;
* golden cases for edges the worked examples do not show (ties, pok against pok, the tong exception with
  straights on, losing to a pok deng, the sam lueang orders, ante's plain 0 and 6, rounding remainders).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pokdeng_core import Card, PlayerHand, Profile, canonical_deck, get_profile, parse_cards, settle, settle_round
from pokdeng_core import commands as c
from pokdeng_core import events as e
from pokdeng_core.cards import parse_card
from pokdeng_core.errors import InsufficientFunds, WrongPhase
from pokdeng_core.table import decide_and_fold_table
from pokdeng_core.table_commands import (
    BidForBanker,
    CloseBankerBid,
    DisconnectBanker,
    FinishRound,
    OpenTable,
    ReconnectBanker,
    StartRound,
    TakeSeat,
)
from pokdeng_core.table_events import BankerRoleEnded
from pokdeng_core.table_state import replay_table

from .rounds import check_books, dealt_round, default_seats, open_round, play_randomly

DECK = canonical_deck()
ACE, JACK, KING = 14, 11, 13

# --------------------------------------------------------------------------------------------
# the reference: the rules again, from the text


def _rank(card: Card) -> int:
    return int(card.rank)  # 2 .. 10, J 11, Q 12, K 13, A 14


def _suit(card: Card) -> int:
    return int(card.suit)  # ♦ 0 < ♣ 1 < ♥ 2 < ♠ 3


def points(hand: tuple[Card, ...]) -> int:
    """Taem: A 1, 2-9 their number, 10 J Q K 0; the last digit of the sum."""
    return sum(1 if _rank(c) == ACE else 0 if _rank(c) >= 10 else _rank(c) for c in hand) % 10


def one_suit(hand: tuple[Card, ...]) -> bool:
    return len({_suit(c) for c in hand}) == 1


def pair(hand: tuple[Card, ...]) -> bool:
    return len(hand) == 2 and _rank(hand[0]) == _rank(hand[1])


def pok(hand: tuple[Card, ...]) -> bool:
    return len(hand) == 2 and points(hand) >= 8


def card_deng(hand: tuple[Card, ...]) -> int:
    """Song deng 2 (two cards, one suit or one rank), sam deng 3 (three cards, one suit), else 1."""
    if len(hand) == 2:
        return 2 if one_suit(hand) or pair(hand) else 1
    return 3 if one_suit(hand) else 1


def run_of_three(hand: tuple[Card, ...], ace_low: bool = False) -> bool:
    """Three consecutive ranks, no wrap: A high only (or, ace_low, low only)."""
    if len(hand) != 3:
        return False
    low, mid, high = sorted(1 if ace_low and _rank(c) == ACE else _rank(c) for c in hand)
    return mid == low + 1 and high == mid + 1


def three_kind(hand: tuple[Card, ...]) -> str:
    """The three-card special hand, highest first (tong, straight flush, straight, sam lueang), or ''."""
    if len(hand) != 3:
        return ""
    if len({_rank(c) for c in hand}) == 1:
        return "tong"
    if run_of_three(hand):
        return "straight flush" if one_suit(hand) else "straight"
    if all(JACK <= _rank(c) <= KING for c in hand):
        return "sam lueang"
    return ""


@dataclass(frozen=True)
class Paid:
    """One stake settled by the reference: the wallet's net after commission, and the commission."""

    net: int
    commission: int = 0


def classic(player: tuple[Card, ...], banker: tuple[Card, ...], stake: int, straights: bool, ace_low: bool) -> Paid:
    """Type, then taem, then deng; the winner's deng, or the difference when deng decided; tong v sam lueang 2."""
    order = ["normal", "sam lueang", "straight", "straight flush", "tong", "pok"]
    own_deng = {"tong": 5, "straight flush": 5, "straight": 3, "sam lueang": 3}

    def kind(hand: tuple[Card, ...]) -> tuple[str, int]:
        if pok(hand):
            return "pok", card_deng(hand)
        name = ""
        if len(hand) == 3 and len({_rank(c) for c in hand}) == 1:
            name = "tong"
        elif straights and run_of_three(hand, ace_low):
            name = "straight flush" if one_suit(hand) else "straight"
        elif len(hand) == 3 and all(JACK <= _rank(c) <= KING for c in hand):
            name = "sam lueang"
        return (name, own_deng[name]) if name else ("normal", card_deng(hand))

    (p_type, p_deng), (b_type, b_deng) = kind(player), kind(banker)
    p_key = (order.index(p_type), points(player), p_deng)
    b_key = (order.index(b_type), points(banker), b_deng)
    if p_key == b_key:
        return Paid(0)
    sign = 1 if p_key > b_key else -1
    w_type, w_deng, l_type, l_deng = (p_type, p_deng, b_type, b_deng) if sign > 0 else (b_type, b_deng, p_type, p_deng)
    if {w_type, l_type} == {"tong", "sam lueang"}:
        times = 2
    elif w_type != l_type or points(player) != points(banker):
        times = w_deng
    else:
        times = w_deng - l_deng
    return Paid(sign * stake * times)


def ranked(player: tuple[Card, ...], banker: tuple[Card, ...], stake: int, kingmaker: bool) -> Paid:
    """Six ranks; taem only within ranks 1 and 6; the highest card (kingmaker's sam lueang: its ranks) in 2-5."""
    low = Fraction(19, 20) if kingmaker else Fraction(1)

    def rank(hand: tuple[Card, ...]) -> tuple[int, tuple[int, ...], Fraction]:
        if pok(hand):
            return 1, (points(hand),), Fraction(2) if card_deng(hand) == 2 else low
        special = three_kind(hand)
        top = max((_rank(c), _suit(c)) for c in hand)
        if special == "sam lueang" and kingmaker:
            within = (*sorted((_rank(c) for c in hand), reverse=True), top[1])
            return 5, within, Fraction(3)
        if special:
            number = {"tong": 2, "straight flush": 3, "straight": 4, "sam lueang": 5}[special]
            return number, top, Fraction({"tong": 5, "straight flush": 5}.get(special, 3))
        return 6, (points(hand),), {3: Fraction(3), 2: Fraction(2), 1: low}[card_deng(hand)]

    (p_rank, p_within, p_times), (b_rank, b_within, b_times) = rank(player), rank(banker)
    if (p_rank, p_within) == (b_rank, b_within):
        return Paid(0)
    if p_rank < b_rank or (p_rank == b_rank and p_within > b_within):
        gross = math.floor(stake * p_times)
        commission = 0 if kingmaker else math.ceil(gross * Fraction(3, 100))
        return Paid(gross - commission, commission)
    return Paid(-math.floor(stake * (max(Fraction(1), b_times) if kingmaker else b_times)))


def ante_value(hand: tuple[Card, ...]) -> tuple[int, bool]:
    """(value in tenths, special): 9, 8, AK flush 7.5, special pair 7.4, faces 7.3, 10 and face 7.2,
    zero flush 7.1, then taem 7 .. 0. Special: a flush, a pair or one of the five combinations."""
    (r1, s1), (r2, s2) = ((_rank(c), _suit(c)) for c in hand)
    taem = points(hand)
    faces = [JACK <= r <= KING for r in (r1, r2)]
    if taem >= 8:
        value = taem * 10
    elif s1 == s2 and {r1, r2} == {ACE, KING}:
        value = 75
    elif r1 == r2 and r1 in (ACE, 5, 6, 10):
        value = 74
    elif all(faces):
        value = 73
    elif 10 in (r1, r2) and any(faces):
        value = 72
    elif s1 == s2 and taem == 0 and not any(10 <= r <= KING for r in (r1, r2)):
        value = 71
    else:
        value = taem * 10
    return value, s1 == s2 or r1 == r2 or 71 <= value <= 75


def ante(player: tuple[Card, ...], banker: tuple[Card, ...], wager: int) -> Paid:
    half = wager // 2
    (p_value, p_special), (b_value, b_special) = ante_value(player), ante_value(banker)
    if p_value == b_value:
        return Paid(0)
    if p_value < b_value:
        return Paid(-half - (half if b_special else 0))
    plain_0_or_6 = b_value in (0, 60) and not b_special
    strong = p_value >= 80 and (one_suit(player) or pair(player))
    return Paid(half + (half if p_special and (not plain_0_or_6 or strong) else 0))


def reference(profile: Profile, player: tuple[Card, ...], banker: tuple[Card, ...], stake: int) -> Paid:
    if profile.name == "classic":
        return classic(player, banker, stake, profile.straights, profile.ace_low)
    if profile.name == "ante":
        return ante(player, banker, stake)
    return ranked(player, banker, stake, profile.name == "kingmaker")


# --------------------------------------------------------------------------------------------
# every stake settles as the reference says

PROFILES = [
    get_profile("classic"),
    get_profile("classic", straights=True),
    get_profile("classic", straights=True, ace_low=True),
    get_profile("room"),
    get_profile("kingmaker"),
]
STAKES = (1, 2, 19, 20, 21, 33, 34, 99, 100, 101, 1000, 1001, 12_345, 10**12 + 1)


def _check(profile: Profile, player: tuple[Card, ...], banker: tuple[Card, ...], stake: int) -> None:
    result = settle(profile, player=player, banker=banker, stake=stake)
    expected = reference(profile, player, banker, stake)
    assert (result.player_net, result.commission) == (expected.net, expected.commission), (
        f"{profile.key}: {' '.join(c.pretty for c in player)} against {' '.join(c.pretty for c in banker)} "
        f"at {stake}: the engine {result.player_net}/{result.commission}, the rules {expected}"
    )


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.key)
def test_single_deck_stakes_settle_as_the_rules_say(profile: Profile) -> None:
    rnd = random.Random(f"rules audit {profile.key}")
    for _ in range(4000):
        cards = rnd.sample(DECK, 6)
        player, banker = tuple(cards[: rnd.choice((2, 3))]), tuple(cards[3 : 3 + rnd.choice((2, 3))])
        _check(profile, player, banker, rnd.choice(STAKES))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(PROFILES), st.permutations(DECK), st.integers(2, 3), st.integers(2, 3), st.integers(1, 10**6))
def test_random_stakes_settle_as_the_rules_say(
    profile: Profile, cards: list[Card], player_size: int, banker_size: int, stake: int
) -> None:
    _check(profile, tuple(cards[:player_size]), tuple(cards[3 : 3 + banker_size]), stake)


def test_every_ante_hand_settles_as_the_rules_say() -> None:
    """Every two-card hand of the eight-deck shoe, as player and as banker, against one hand of each ante
    class (value, special): every pair of classes, every hand."""
    rules = get_profile("ante")
    hands = [(DECK[i], DECK[j]) for i in range(52) for j in range(i, 52)]
    classes: dict[tuple[int, bool], tuple[Card, Card]] = {}
    for hand in hands:
        classes.setdefault(ante_value(hand), hand)
    # taem 0-9 plain, taem 1-9 special (a special taem 0 is always one of the combinations), the five combinations
    assert len(classes) == 10 + 9 + 5
    for hand in hands:
        for other in classes.values():
            for player, banker in ((hand, other), (other, hand)):
                result = settle(rules, player=player, banker=banker, stake=100)
                assert result.player_net == ante(player, banker, 100).net, (player, banker)


# --------------------------------------------------------------------------------------------
# whole rounds play as the rules say


def _hand(texts: list[str]) -> tuple[Card, ...]:
    return tuple(parse_card(t) for t in texts)


def check_round_against_the_rules(profile: Profile, events: list[e.RoundEvent]) -> None:
    """Each step of a closed round, from its events, against the reference."""
    dealt = next(x for x in events if isinstance(x, e.CardsDealt))
    seats = sorted({seat for seat, _ in dealt.cards if seat})
    assert [seat for seat, _ in dealt.cards] == [*seats, 0] * 2, "seat order, one card at a time, banker last"
    hands: dict[int, list[str]] = {}
    for seat, text in dealt.cards:
        hands.setdefault(seat, []).append(text)
    banker_pok = pok(_hand(hands[0]))
    up_card = _rank(parse_card(hands[0][0]))
    if profile.name == "kingmaker":
        assert dealt.banker_up_card == hands[0][0]
    chose = {"classic": (-1, 9), "ante": (9, -1), "room": (3, 7), "kingmaker": (3, 7)}[profile.name]
    banker_auto, banker_choice = {"classic": (-1, 9), "room": (3, 7), "kingmaker": (5, 5)}.get(profile.name, (9, 9))
    windows = [x for x in events if isinstance(x, e.SideBetWindowOpened)]
    assert bool(windows) == (profile.name == "kingmaker" and up_card in (8, 9))
    drew = False
    for event in events:
        if isinstance(event, e.CardDrawn | e.PlayerStood):
            assert profile.name != "ante" and not banker_pok, "nobody draws after a banker's pok, or in ante"
            held = _hand(hands[event.seat])
            assert len(held) == 2 and not pok(held), "only a two-card hand that is no pok draws or stays"
            auto, choice = (banker_auto, banker_choice) if event.seat == 0 else chose
            taem = points(held)
            if taem <= auto:
                assert isinstance(event, e.CardDrawn) and event.reason == "auto", (event, taem)
            elif taem <= choice:
                assert event.reason in ("choice", "timeout"), (event, taem)
                if event.reason == "timeout":  # the automatic action: draw on 0-3, otherwise stay
                    assert isinstance(event, e.CardDrawn) == (taem <= 3), (event, taem)
            else:
                assert isinstance(event, e.PlayerStood) and event.reason == "auto", (event, taem)
            if isinstance(event, e.CardDrawn):
                hands[event.seat].append(event.card)
            drew = drew or event.seat == 0
        elif isinstance(event, e.HandsRevealed) and event.selective:
            assert profile.banker_selective_reveal and not drew and len(hands[0]) == 2
            assert banker_auto < points(_hand(hands[0])) <= banker_choice, "a reveal only while the banker chooses"
        elif isinstance(event, e.SideBetsSettled):
            assert event.natural == banker_pok
            for _seat, _player, side_stake, net in event.results:
                assert net == (math.floor(side_stake * Fraction(6, 5)) if banker_pok else -side_stake)
        elif isinstance(event, e.BetSettled):
            expected = reference(profile, _hand(hands[event.seat]), _hand(hands[0]), event.stake)
            assert (event.net, event.commission) == (expected.net, expected.commission), event
        elif isinstance(event, e.RoundSettled):
            gain = event.banker_net_before_commission  # the room's player banker: 3% of a gain, rounded up
            assert event.banker_commission == (math.ceil(gain * profile.banker_commission_rate) if gain > 0 else 0)


@pytest.mark.parametrize("profile", [*PROFILES, get_profile("ante")], ids=lambda p: p.key)
def test_whole_rounds_play_as_the_rules_say(profile: Profile) -> None:
    for number in range(150):
        rnd = random.Random(f"{profile.key} {number}")
        seats = None if profile.fixed_positions else default_seats(profile, rnd.randint(1, profile.max_hands))
        banker = "dealer" if profile.name == "classic" and number % 3 == 0 else None
        played = open_round(profile, seats, banker, server_seed=f"rules audit {profile.key} {number:04}".encode())
        play_randomly(played, rnd, max_bets=10)
        check_round_against_the_rules(profile, played.events)
        check_books(played)


# --------------------------------------------------------------------------------------------
# golden edges: what the rules say where no worked example shows it (stake 100; room, kingmaker 1000)

EDGES = [
    # classic: pok against pok, tongs and sam lueangs compare taem then deng, never the cards' ranks
    ("classic", "4♥ 5♦", "9♣ K♦", 100, 0, "pok 9 against pok 9, one deng each: a tie"),
    ("classic", "9♠ K♠", "4♥ 5♦", 100, 100, "pok deng 9 against pok 9: deng decides, 2 - 1"),
    ("classic", "4♠ 4♥", "3♣ 5♦", 100, 100, "pok deng 8 (a pair) against pok 8: 2 - 1"),
    ("classic", "4♠ 5♦", "A♣ 8♣ K♦", 100, 100, "a pok beats a three-card 9"),
    ("classic", "K♣ K♦ K♥", "Q♠ Q♥ Q♦", 100, 0, "two tongs of taem 0: a tie"),
    ("classic", "7♠ 7♥ 7♣", "2♠ 2♥ 2♦", 100, -500, "tong 2 2 2 (taem 6) beats tong 7 7 7 (taem 1): taem decides"),
    ("classic", "Q♣ J♣ J♦", "K♠ K♥ Q♦", 100, 0, "two sam lueangs: taem 0, deng 3 each, a tie"),
    ("classic", "Q♣ J♣ J♦", "2♥ 3♥ 4♥", 100, 300, "sam lueang beats a one-suit 9 (straights off): type"),
    ("classic", "2♠ 3♠", "A♥ 4♦", 100, 100, "song deng 5 against a plain 5: 2 - 1"),
    ("classic", "2♠ 2♦ 5♠", "4♥ 5♣ K♦", 100, 0, "a pair among three cards has no deng: 9 against 9 ties"),
    ("classic", "2♠ 3♦", "9♠ 9♦", 100, -200, "the dealer's pok deng takes two stakes"),
    # classic with straights: equal straights tie, the tong exception holds, A high or low
    ("classic+straights", "2♠ 3♦ 4♣", "2♥ 3♣ 4♦", 100, 0, "two straights of 9, deng 3 each: a tie"),
    ("classic+straights", "7♠ 7♥ 7♣", "Q♣ J♣ J♦", 100, 200, "tong against sam lueang still pays 2"),
    ("classic+straights", "2♥ 3♥ 4♥", "5♦ 6♦ 7♦", 100, 500, "straight flush 9 beats straight flush 8"),
    ("classic+straights", "4♠ 5♦", "2♥ 3♥ 4♥", 100, 100, "a pok beats a straight flush"),
    ("classic+straights", "Q♠ K♦ A♣", "J♠ Q♦ K♣", 100, 300, "Q K A (taem 1) beats J Q K (taem 0)"),
    ("classic+straights+ace_low", "Q♠ K♦ A♣", "J♠ Q♦ K♣", 100, -300, "ace low: Q K A is a plain 1"),
    # room: rank first, taem only in ranks 1 and 6, the highest card in ranks 2-5; 3% of a winner's gross
    ("room", "2♠ 3♦", "9♠ K♠", 1000, -2000, "lost to a pok deng: 2x"),
    ("room", "4♥ 5♦", "4♠ 4♣", 1000, 970, "pok 9 beats pok deng 8 on taem, paid its own 1x"),
    ("room", "K♠ Q♥ Q♦", "K♥ Q♠ Q♣", 1000, 2910, "sam lueangs: the highest card K♠ beats K♥"),
    ("room", "K♠ Q♥ Q♦", "K♥ K♦ J♠", 1000, 2910, "room looks at the highest card only: K♠ beats K♥"),
    ("room", "A♠ A♥ A♦", "K♠ K♥ K♦", 1000, 4850, "tongs by rank: A A A, 5x less 3%"),
    ("room", "Q♣ J♣ J♦", "J♠ Q♦ K♣", 1000, -3000, "a straight (rank 4) beats sam lueang (rank 5)"),
    ("room", "2♠ 2♦ 5♠", "4♥ 5♥ K♥", 1000, 0, "taem 9 against sam deng 9: a tie"),
    ("room", "3♥ 4♣", "2♠ 3♦", 34, 32, "a gross of 34 pays ceil(1.02) = 2"),
    # kingmaker: a loser pays max(1, the banker's multiplier); sam lueang by its ranks, then the suit
    ("kingmaker", "2♠ 3♦", "9♠ K♠", 1000, -2000, "lost to a pok deng: 2x"),
    ("kingmaker", "2♠ 3♦", "3♠ 4♦ 5♣", 1000, -3000, "lost to a straight: 3x"),
    ("kingmaker", "4♥ 5♦", "4♠ 4♣", 1000, 950, "pok 9 beats pok deng 8, paid 0.95x"),
    ("kingmaker", "4♠ 4♣", "4♥ 5♦", 1000, -1000, "pok deng 8 loses to pok 9: max(1, 0.95) = 1x"),
    ("kingmaker", "K♠ K♣ Q♦", "K♥ K♦ Q♠", 1000, 3000, "K K Q against K K Q: the highest card's suit, K♠"),
    ("kingmaker", "K♠ Q♥ Q♦", "K♥ K♦ J♠", 1000, -3000, "K K J beats K Q Q whatever the suits"),
    ("kingmaker", "3♥ 4♣", "2♠ 3♦", 21, 19, "0.95 x 21 = 19.95: floored, the house keeps the rest"),
    # ante (wager 100): plain 0 and plain 6, pairs that count their taem
    ("ante", "9♣ 9♦", "2♠ 4♥", 100, 100, "an 8 pair against a plain 6: both"),
    ("ante", "4♠ 5♥", "4♣ 6♥", 100, 50, "a plain 9 is not special: the ante only"),
    ("ante", "A♥ K♥", "4♣ 6♥", 100, 50, "AK flush against a plain 0: the ante only"),
    ("ante", "A♥ K♥", "J♣ Q♦", 100, 100, "AK flush beats the face-card combination: both"),
    ("ante", "2♠ 3♦", "4♣ 6♣", 100, -100, "the banker's zero flush is special: both lost"),
    ("ante", "2♠ 3♦", "A♠ A♥", 100, -100, "the banker's pair of aces (7.4) beats a 5: both lost"),
    ("ante", "4♣ 6♥", "3♦ 7♠", 100, 0, "plain 0 against plain 0: a tie"),
    ("ante", "2♣ 2♦", "A♠ 2♦", 100, 100, "a pair of 2 (taem 4) beats a plain 3: special, both"),
    ("ante", "2♣ 2♦", "2♠ 4♥", 100, -50, "a pair of 2 (4) loses to a plain 6: the ante only"),
    ("ante", "3♣ 3♦", "2♠ 4♥", 100, 0, "a pair of 3 (6) ties a plain 6"),
    ("ante", "8♣ 8♦", "4♣ 6♥", 100, 50, "a pair of 8 (taem 6) against a plain 0: the ante only"),
    ("ante", "4♣ 4♦", "4♠ 6♥", 100, 100, "a pair of 4 (taem 8) against a plain 0: both"),
]


@pytest.mark.parametrize(("profile", "player", "banker", "stake", "net", "why"), EDGES, ids=[r[-1] for r in EDGES])
def test_golden_edge(profile: str, player: str, banker: str, stake: int, net: int, why: str) -> None:
    name, *options = profile.split("+")
    rules = get_profile(name, **dict.fromkeys(options, True))
    result = settle(rules, player=player, banker=banker, stake=stake)
    assert result.player_net == net, why
    assert reference(rules, parse_cards(player), parse_cards(banker), stake).net == net, why
    assert result.player_net + result.banker_net + result.commission == 0


def test_room_banker_commission_is_on_its_net_for_the_round() -> None:
    """3% of the banker's net gain for the round, rounded up; nothing on a net of zero or a loss."""
    even = settle_round("room", banker="3♥ 4♣", hands=[("2♠ 3♦", 1000), ("9♥ K♣", 1000)])
    assert even.player_nets == (-1000, 970) and even.banker_net_before_commission == 0
    assert (even.banker_commission, even.banker_net, even.commission, even.balance) == (0, 0, 30, 0)
    one = settle_round("room", banker="3♥ 4♣", hands=[("2♠ 3♦", 1001), ("9♥ K♣", 1000)])
    assert one.banker_net_before_commission == 1
    assert (one.banker_commission, one.banker_net, one.commission, one.balance) == (1, 0, 31, 0)


def test_an_odd_side_bet_is_floored() -> None:
    """floor(1.2 x 1001) = 1201: the house keeps the remainder."""
    won = settle_round("kingmaker", banker="8♠ A♦", hands=[PlayerHand("4♥ 5♣", 1001, side_stake=1001)])
    assert won.side_bets[0].net == 1201 and won.player_nets == (1201,) and won.balance == 0


def test_a_room_banker_back_within_its_window_keeps_the_role() -> None:
    """Room: a banker that disconnects mid-round has 5 seconds to return; back within them, it plays on and
    keeps the role; later, its return is refused and the role ends with the round (the shell measures the
    time: ``ReconnectBanker.within_window``)."""
    bid = get_profile("room").banker_bid
    assert bid is not None and bid.reconnect_seconds == 5
    state = replay_table(())
    for command in (
        OpenTable("t1", get_profile("room"), 10, 100, 5),
        TakeSeat("bank", 1),
        TakeSeat("a", 2),
        BidForBanker("bank", 10, 10_000),
        CloseBankerBid(),
    ):
        state = decide_and_fold_table(state, command).state
    for back_in_time in (True, False):
        during = decide_and_fold_table(state, StartRound(f"t1#{state.round_no + 1}")).state
        during = decide_and_fold_table(during, DisconnectBanker("bank")).state
        if back_in_time:
            during = decide_and_fold_table(during, ReconnectBanker("bank", within_window=True)).state
        else:
            with pytest.raises(WrongPhase):
                decide_and_fold_table(during, ReconnectBanker("bank", within_window=False))
        events, after = decide_and_fold_table(during, FinishRound(during.round_id or "", "settled", banker_funds=10**6))
        assert (after.banker == "bank") is back_in_time
        assert any(isinstance(x, BankerRoleEnded) and x.reason == "disconnected" for x in events) is not back_in_time
        state = after if back_in_time else state


def test_a_side_bet_is_covered_beyond_the_reservation() -> None:
    """Kingmaker: "Player(s) has only $290 and plays in a $50 table": its $50 stake reserves $250, so $40 is
    available beyond the reservation and the $50 side bet is refused; with $300 it is accepted."""
    played = dealt_round("kingmaker", {1: "2♠ 3♦"}, "8♦ 6♠", stakes={1: 5000}, max_stake=5000)
    assert dict(played.state.reserved) == {"p1": 25_000}
    error = played.refuse(c.PlaceSideBet(1, "p1", 29_000 - 25_000), InsufficientFunds)
    assert isinstance(error, InsufficientFunds) and (error.required, error.available) == (5000, 4000)
    (placed,) = played.do(c.PlaceSideBet(1, "p1", 30_000 - 25_000))
    assert isinstance(placed, e.SideBetPlaced) and placed.stake == placed.reserved == 5000
