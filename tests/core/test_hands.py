"""The hand classifier over every hand of the shoe, against counts derived by combinatorics here.

Single deck: all C(52,3) = 22,100 three-card and C(52,2) = 1,326 two-card hands, classified by
``evaluate`` under classic (straights off, on, on with ace low), room and kingmaker. Ante: all
52 x 52 = 2,704 ordered two-card hands of an eight-deck shoe by card identity (the second
card may be the same identity as the first: another deck's copy).

Each expected count is computed in the test from a formula, with a comment deriving it; none
is taken from the code under test.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from functools import cache
from itertools import combinations, combinations_with_replacement, product
from math import comb

import pytest

from pokdeng_core import HandKind, canonical_deck, evaluate, get_profile
from pokdeng_core.cards import Card, Rank
from pokdeng_core.hands import ante_is_special, ante_value

DECK = canonical_deck()
RANKS = 13
SUITS = 4
FACES = 3  # J, Q, K
POINTS_OF_RANK = {rank: rank.points for rank in Rank}  # A=1, 2-9, 10/J/Q/K=0

# How many cards of a deck score each point value: 16 zeros (10 J Q K x 4 suits), 4 of each 1..9.
N = [16] + [4] * 9
# The same within one suit: 4 zeros, one of each 1..9.
M = [4] + [1] * 9


def ordered_pairs_with_taem(counts: list[int], t: int) -> int:
    """Ordered pairs (with replacement) of cards from ``counts`` whose points sum to t mod 10."""
    return sum(counts[a] * counts[(t - a) % 10] for a in range(10))


def ranks_doubling_to(t: int) -> int:
    """How many ranks r have 2 x points(r) = t mod 10 (a pair of r has taem t)."""
    return sum(1 for rank in Rank if (2 * rank.points) % 10 == t)


# --- expected counts, derived --------------------------------------------------------------

# Two-card hands of one deck (C(52,2) = 1326).
TWO_CARD_HANDS = comb(52, 2)


def two_card_with_taem(t: int) -> int:
    # Ordered pairs with replacement, less the 4 x ranks_doubling_to(t) identical pairs, halved.
    return (ordered_pairs_with_taem(N, t) - SUITS * ranks_doubling_to(t)) // 2


def two_card_pairs_with_taem(t: int) -> int:
    # A pair of a rank doubling to t: C(4,2) = 6 per rank.
    return ranks_doubling_to(t) * comb(SUITS, 2)


def two_card_flushes_with_taem(t: int) -> int:
    # Per suit: ordered pairs with replacement of that suit's 13 cards, less the identical ones, halved.
    return SUITS * (ordered_pairs_with_taem(M, t) - ranks_doubling_to(t)) // 2


POK = two_card_with_taem(8) + two_card_with_taem(9)  # 124 + 128 = 252
POK_DENG = sum(two_card_pairs_with_taem(t) + two_card_flushes_with_taem(t) for t in (8, 9))  # 12 + 60 = 72
ALL_PAIRS = RANKS * comb(SUITS, 2)  # 78
ALL_TWO_CARD_FLUSHES = SUITS * comb(RANKS, 2)  # 312 (a pair is never one suit)
SONG_DENG = ALL_PAIRS + ALL_TWO_CARD_FLUSHES - POK_DENG  # pair or one suit, not pok: 318
TWO_CARD_PLAIN = TWO_CARD_HANDS - POK - SONG_DENG  # 756

# Three-card hands of one deck (C(52,3) = 22,100).
THREE_CARD_HANDS = comb(52, 3)
TONG = RANKS * comb(SUITS, 3)  # 13 ranks x C(4,3) = 52
# A high only, no wrap: runs 2-3-4 ... Q-K-A start at 2..Q: 11 runs (ace low: A-2-3 ... J-Q-K, also 11).
RUNS = 11
STRAIGHT_FLUSH = RUNS * SUITS  # one suit for all three: 44
STRAIGHT = RUNS * SUITS**3 - STRAIGHT_FLUSH  # 11 x 64 = 704 runs, less the 44 flushes: 660
# Three face cards: C(12,3) = 220, less the tongs JJJ QQQ KKK (3 x 4 = 12) ...
FACE_TRIPLES = comb(FACES * SUITS, 3) - FACES * comb(SUITS, 3)  # 208
# ... and, when straights count, less J-Q-K, a straight (4^3 = 64, its 4 flushes included) either way.
SAM_LUEANG_WITH_STRAIGHTS = FACE_TRIPLES - SUITS**3  # 144
SAM_LUEANG_WITHOUT_STRAIGHTS = FACE_TRIPLES  # 208
ALL_THREE_CARD_FLUSHES = SUITS * comb(RANKS, 3)  # 1144; a tong is never one suit
# Sam deng (a normal hand of one suit): the flushes less the straight flushes when straights count,
# else less the one-suit J Q K (4), which is sam lueang.
SAM_DENG_WITH_STRAIGHTS = ALL_THREE_CARD_FLUSHES - STRAIGHT_FLUSH  # 1100
SAM_DENG_WITHOUT_STRAIGHTS = ALL_THREE_CARD_FLUSHES - SUITS  # 1140
PLAIN_WITH_STRAIGHTS = THREE_CARD_HANDS - TONG - STRAIGHT_FLUSH - STRAIGHT - SAM_LUEANG_WITH_STRAIGHTS
PLAIN_WITH_STRAIGHTS -= SAM_DENG_WITH_STRAIGHTS  # 20,100
PLAIN_WITHOUT_STRAIGHTS = THREE_CARD_HANDS - TONG - SAM_LUEANG_WITHOUT_STRAIGHTS - SAM_DENG_WITHOUT_STRAIGHTS  # 20,700


def test_the_derived_numbers() -> None:
    """The derivations above give the numbers worked by hand (a check on the formulas themselves)."""
    assert (two_card_with_taem(8), two_card_with_taem(9), POK, POK_DENG) == (124, 128, 252, 72)
    assert (SONG_DENG, TWO_CARD_PLAIN) == (318, 756)
    assert (TONG, STRAIGHT_FLUSH, STRAIGHT, SAM_LUEANG_WITH_STRAIGHTS, SAM_DENG_WITH_STRAIGHTS) == (
        52,
        44,
        660,
        144,
        1100,
    )
    assert (PLAIN_WITH_STRAIGHTS, SAM_LUEANG_WITHOUT_STRAIGHTS, SAM_DENG_WITHOUT_STRAIGHTS) == (20100, 208, 1140)
    assert PLAIN_WITHOUT_STRAIGHTS == 20700


# --- the classifier over every hand ---------------------------------------------------------


def single_deck_hands() -> Iterator[tuple[Card, ...]]:
    yield from combinations(DECK, 2)
    yield from combinations(DECK, 3)


@cache
def labels(profile_name: str, straights: bool = False, ace_low: bool = False) -> Counter[tuple[int, str]]:
    """(number of cards, label) for every single-deck hand under the profile."""
    options = {"straights": straights, "ace_low": ace_low} if profile_name == "classic" else {}
    profile = get_profile(profile_name, **options)
    return Counter((len(cards), evaluate(profile, cards).label) for cards in single_deck_hands())


CLASSIC_TWO_CARDS = {"pok deng": POK_DENG, "pok": POK - POK_DENG, "song deng": SONG_DENG, "normal": TWO_CARD_PLAIN}
RANKED_TWO_CARDS = {"pok deng": POK_DENG, "pok": POK - POK_DENG, "song deng": SONG_DENG, "taem": TWO_CARD_PLAIN}


@pytest.mark.parametrize(
    ("name", "straights", "ace_low", "three_cards", "plain"),
    [
        (
            "classic",
            False,
            False,
            {"tong": TONG, "sam lueang": SAM_LUEANG_WITHOUT_STRAIGHTS, "sam deng": SAM_DENG_WITHOUT_STRAIGHTS},
            ("normal", PLAIN_WITHOUT_STRAIGHTS),
        ),
        (
            "classic",
            True,
            False,
            {
                "tong": TONG,
                "straight flush": STRAIGHT_FLUSH,
                "straight": STRAIGHT,
                "sam lueang": SAM_LUEANG_WITH_STRAIGHTS,
                "sam deng": SAM_DENG_WITH_STRAIGHTS,
            },
            ("normal", PLAIN_WITH_STRAIGHTS),
        ),
        (
            "classic",
            True,
            True,  # ace low: A-2-3 in, Q-K-A out; still 11 runs, and J-Q-K is still one
            {
                "tong": TONG,
                "straight flush": STRAIGHT_FLUSH,
                "straight": STRAIGHT,
                "sam lueang": SAM_LUEANG_WITH_STRAIGHTS,
                "sam deng": SAM_DENG_WITH_STRAIGHTS,
            },
            ("normal", PLAIN_WITH_STRAIGHTS),
        ),
        *(
            (
                name,
                True,
                False,
                {
                    "tong": TONG,
                    "straight flush": STRAIGHT_FLUSH,
                    "straight": STRAIGHT,
                    "sam lueang": SAM_LUEANG_WITH_STRAIGHTS,
                    "sam deng": SAM_DENG_WITH_STRAIGHTS,
                },
                ("taem", PLAIN_WITH_STRAIGHTS),
            )
            for name in ("room", "kingmaker")
        ),
    ],
    ids=["classic", "classic+straights", "classic+straights+ace_low", "room", "kingmaker"],
)
def test_label_counts_over_every_single_deck_hand(
    name: str, straights: bool, ace_low: bool, three_cards: dict[str, int], plain: tuple[str, int]
) -> None:
    counts = labels(name, straights, ace_low)
    two_cards = CLASSIC_TWO_CARDS if name == "classic" else RANKED_TWO_CARDS
    expected = Counter({(2, label): n for label, n in two_cards.items()})
    expected.update({(3, label): n for label, n in three_cards.items()})
    expected[(3, plain[0])] = plain[1]
    assert counts == expected
    assert sum(counts.values()) == TWO_CARD_HANDS + THREE_CARD_HANDS


def three_card_taem_distribution() -> Counter[int]:
    """3-card hands by taem, from point values alone: for point multisets {a <= b <= c},
    the product over each value v used k times of C(N[v], k)."""
    result: Counter[int] = Counter()
    for values in combinations_with_replacement(range(10), 3):
        ways = 1
        for v, k in Counter(values).items():
            ways *= comb(N[v], k)
        result[sum(values) % 10] += ways
    return result


def test_taem_of_every_hand() -> None:
    classic = get_profile("classic")
    by_taem: Counter[int] = Counter(evaluate(classic, cards).taem for cards in combinations(DECK, 3))
    assert by_taem == three_card_taem_distribution()
    assert sum(by_taem.values()) == THREE_CARD_HANDS
    two: Counter[int] = Counter(evaluate(classic, cards).taem for cards in combinations(DECK, 2))
    assert two == Counter({t: two_card_with_taem(t) for t in range(10)})


@pytest.mark.parametrize("straights", [False, True])
def test_classic_deng_and_taem_by_kind(straights: bool) -> None:
    """Tong deng 5 at 3 x its points; sam lueang deng 3 at taem 0; straights 5 or 3; normal 1 to 3."""
    classic = get_profile("classic", straights=straights)
    deng_by_kind: dict[HandKind, set[int]] = {}
    for cards in single_deck_hands():
        hand = evaluate(classic, cards)
        deng_by_kind.setdefault(hand.kind, set()).add(hand.deng)
        if hand.kind is HandKind.TONG:
            assert hand.taem == 3 * cards[0].rank.points % 10
        if hand.kind is HandKind.SAM_LUEANG:
            assert hand.taem == 0
    expected = {
        HandKind.POK: {1, 2},
        HandKind.TONG: {5},
        HandKind.SAM_LUEANG: {3},
        HandKind.NORMAL: {1, 2, 3},
    }
    if straights:
        expected |= {HandKind.STRAIGHT_FLUSH: {5}, HandKind.STRAIGHT: {3}}
    assert deng_by_kind == expected


def test_card_order_does_not_matter() -> None:
    kingmaker = get_profile("kingmaker")
    classic = get_profile("classic", straights=True)
    for cards in list(combinations(DECK, 3))[::97]:
        for profile in (kingmaker, classic):
            a = evaluate(profile, cards)
            b = evaluate(profile, cards[::-1])
            assert (a.key, a.label, a.multiplier) == (b.key, b.label, b.multiplier)


# --- ante: every two-card hand of the eight-deck shoe ------------------------------------------

ORDERED = 52 * 52  # the first card's identity, the second's (another deck may repeat it)
N9 = ordered_pairs_with_taem(N, 9)  # (0,9)x2: 128; (1,8) (2,7) (3,6) (4,5) x2: 128 -> 256
N8 = ordered_pairs_with_taem(N, 8)  # (0,8)x2: 128; (1,7) (2,6) (3,5) x2: 96; (4,4), (9,9): 32 -> 256
AK_FLUSH = SUITS * 2  # A and K of one suit, either first: 8
SPECIAL_PAIR = 4 * SUITS * SUITS  # A, 5, 6 or 10 twice, any suits (a one-suit 5-5 too): 64
FACE_COMBINATION = (FACES * SUITS) ** 2  # both J/Q/K: 144
TEN_AND_FACE = 2 * SUITS * FACES * SUITS  # a 10 and a face card, either first: 96
# One suit, taem 0, no 10 or face: A-9 2-8 3-7 4-6 in either order (8) per suit; 5-5 is a special pair.
ZERO_FLUSH = 8 * SUITS  # 32
ANTE_EXPECTED = {
    90: N9,
    80: N8,
    75: AK_FLUSH,
    74: SPECIAL_PAIR,
    73: FACE_COMBINATION,
    72: TEN_AND_FACE,
    71: ZERO_FLUSH,
    # taem 3..7: no combination has these taem, so every hand keeps its points.
    **{10 * t: ordered_pairs_with_taem(N, t) for t in range(3, 8)},
    # taem 2: less the A-A and 6-6 pairs (special pairs, 16 each).
    20: ordered_pairs_with_taem(N, 2) - 2 * SUITS * SUITS,
    # taem 1: less the AK flushes.
    10: ordered_pairs_with_taem(N, 1) - AK_FLUSH,
    # taem 0: less face combinations, 10 and face, 10-10 and 5-5 (16 each), zero flushes.
    0: ordered_pairs_with_taem(N, 0) - FACE_COMBINATION - TEN_AND_FACE - 2 * SUITS * SUITS - ZERO_FLUSH,
}


def ante_flush_or_pair_with_taem(t: int) -> int:
    """Ordered identity pairs, one suit or one rank, with taem t: flush + pair - both (same identity)."""
    flush = SUITS * ordered_pairs_with_taem(M, t)
    pair = ranks_doubling_to(t) * SUITS * SUITS
    both = ranks_doubling_to(t) * SUITS
    return flush + pair - both


# Special = one suit, a pair, or a combination. By taem: the flushes and pairs, plus at taem 0 the
# face combinations and the 10-and-face hands that are neither (144 - 36 one-suit - 36 pairs = 72;
# 96 - 24 one-suit = 72). AK flush, special pairs and zero flushes are flushes or pairs already.
ANTE_SPECIAL_BY_TAEM = {t: ante_flush_or_pair_with_taem(t) + (72 + 72 if t == 0 else 0) for t in range(10)}


def ante_hands() -> Iterator[tuple[Card, Card]]:
    yield from product(DECK, DECK)


def test_ante_values_over_every_hand_of_the_shoe() -> None:
    values = Counter(ante_value(cards) for cards in ante_hands())
    assert values == Counter(ANTE_EXPECTED)
    assert sum(ANTE_EXPECTED.values()) == ORDERED
    assert (values[0], values[10], values[20], values[60]) == (96, 248, 224, 256)


def test_ante_special_hands_over_every_hand_of_the_shoe() -> None:
    special_by_taem: Counter[int] = Counter()
    for cards in ante_hands():
        if ante_is_special(cards):
            special_by_taem[(cards[0].points + cards[1].points) % 10] += 1
    assert special_by_taem == Counter(ANTE_SPECIAL_BY_TAEM)
    assert sum(ANTE_SPECIAL_BY_TAEM.values()) == 52 * 13 + 52 * 4 - 52 + 72 + 72 == 976


def test_ante_plain_0_and_plain_6() -> None:
    """The banker hands that hold back the bet: a plain 0 (96) and a plain 6 (168) by identity pairs."""
    ante = get_profile("ante")
    plain: Counter[int] = Counter()
    for cards in ante_hands():
        hand = evaluate(ante, cards)
        if hand.value in (0, 60) and not hand.special:
            plain[hand.value] += 1
    # Every value-0 hand is plain: a taem-0 flush or pair is always a combination (10 or face
    # cards, a zero flush, 5-5 or 10-10). No combination has taem 6: plain 6 = taem 6 less specials.
    assert plain == Counter({0: ANTE_EXPECTED[0], 60: ordered_pairs_with_taem(N, 6) - ANTE_SPECIAL_BY_TAEM[6]})
    assert plain == Counter({0: 96, 60: 168})


@pytest.mark.parametrize(("ace_low", "run"), [(False, {Rank.QUEEN, Rank.KING, Rank.ACE}), (True, {Rank.ACE, 2, 3})])
def test_the_one_run_with_an_ace(ace_low: bool, run: set[int]) -> None:
    """A high only: Q-K-A (4^3 = 64 hands) and never A-2-3; ace low: the reverse. K-A-2 never."""
    classic = get_profile("classic", straights=True, ace_low=ace_low)
    with_ace = [
        cards
        for cards in combinations(DECK, 3)
        if any(c.rank is Rank.ACE for c in cards)
        and evaluate(classic, cards).kind in (HandKind.STRAIGHT, HandKind.STRAIGHT_FLUSH)
    ]
    assert len(with_ace) == SUITS**3
    assert all({int(c.rank) for c in cards} == {int(r) for r in run} for cards in with_ace)
