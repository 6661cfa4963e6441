"""What a hand is worth: taem, deng, hand kinds and the ante profile's values.

Everything here depends only on the cards and on two table options of the
classic profile (``straights`` and ``ace_low``); how hands are compared and
paid under each profile lives in ``evaluation.py`` and ``settlement.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum
from functools import lru_cache
from types import MappingProxyType

from .cards import Card, Rank


class HandKind(StrEnum):
    """Hand types, highest first. Straights exist only where the profile counts them."""

    POK = "pok"
    TONG = "tong"
    STRAIGHT_FLUSH = "straight_flush"
    STRAIGHT = "straight"
    SAM_LUEANG = "sam_lueang"
    NORMAL = "normal"

    @property
    def order(self) -> int:
        """Greater is better: pok 6 ... normal 1."""
        return _KIND_ORDER[self]


_KIND_ORDER: Mapping[HandKind, int] = MappingProxyType(
    {
        HandKind.POK: 6,
        HandKind.TONG: 5,
        HandKind.STRAIGHT_FLUSH: 4,
        HandKind.STRAIGHT: 3,
        HandKind.SAM_LUEANG: 2,
        HandKind.NORMAL: 1,
    }
)


def taem(cards: Sequence[Card]) -> int:
    """The ones digit of the sum of the cards' points."""
    return sum(c.rank.points for c in cards) % 10


def is_pok(cards: Sequence[Card]) -> bool:
    """Exactly two cards with taem 8 or 9."""
    return len(cards) == 2 and taem(cards) >= 8


def is_flush(cards: Sequence[Card]) -> bool:
    return len({c.suit for c in cards}) == 1


def is_pair(cards: Sequence[Card]) -> bool:
    """Two cards of one rank."""
    return len(cards) == 2 and cards[0].rank == cards[1].rank


def deng(cards: Sequence[Card]) -> int:
    """The deng of a normal hand or a pok: song deng 2 (two cards, one suit or one rank),
    sam deng 3 (three cards of one suit), otherwise 1."""
    if len(cards) == 2:
        return 2 if (is_pair(cards) or is_flush(cards)) else 1
    if len(cards) == 3 and is_flush(cards):
        return 3
    return 1


def is_straight(cards: Sequence[Card], ace_low: bool = False) -> bool:
    """Three consecutive ranks, no wrap. A is high only unless ``ace_low`` (then low only)."""
    if len(cards) != 3:
        return False
    if ace_low:
        values = sorted(1 if c.rank is Rank.ACE else int(c.rank) for c in cards)
    else:
        values = sorted(int(c.rank) for c in cards)
    return values[0] + 1 == values[1] and values[1] + 1 == values[2]


def is_tong(cards: Sequence[Card]) -> bool:
    return len(cards) == 3 and cards[0].rank == cards[1].rank == cards[2].rank


def is_sam_lueang_cards(cards: Sequence[Card]) -> bool:
    """Three face cards (J, Q, K), whatever else they are."""
    return len(cards) == 3 and all(c.rank.is_face for c in cards)


@lru_cache(maxsize=65536)
def hand_kind(cards: tuple[Card, ...], straights: bool = True, ace_low: bool = False) -> HandKind:
    """The highest hand type the cards make (RULES.md section 1).

    ``straights`` off (the classic default) means straights and straight flushes are
    not hand types: such hands are sam lueang (J Q K) or normal.
    """
    n = len(cards)
    if n == 2:
        return HandKind.POK if taem(cards) >= 8 else HandKind.NORMAL
    if n != 3:
        raise ValueError(f"a hand has two or three cards, not {n}")
    if is_tong(cards):
        return HandKind.TONG
    if straights and is_straight(cards, ace_low):
        return HandKind.STRAIGHT_FLUSH if is_flush(cards) else HandKind.STRAIGHT
    if is_sam_lueang_cards(cards):
        return HandKind.SAM_LUEANG
    return HandKind.NORMAL


def highest_card(cards: Sequence[Card]) -> Card:
    """The greatest card by (rank, suit), A high."""
    return max(cards)


# --- the ante profile's two-card values (seed 001) -----------------------------------------

ANTE_AK_FLUSH = 75
ANTE_SPECIAL_PAIR = 74
ANTE_FACE_COMBINATION = 73
ANTE_TEN_AND_FACE = 72
ANTE_ZERO_FLUSH = 71
_SPECIAL_PAIR_RANKS = frozenset({Rank.ACE, Rank.FIVE, Rank.SIX, Rank.TEN})

ANTE_VALUE_NAMES: Mapping[int, str] = MappingProxyType(
    {
        ANTE_AK_FLUSH: "AK flush",
        ANTE_SPECIAL_PAIR: "special pair",
        ANTE_FACE_COMBINATION: "face-card combination",
        ANTE_TEN_AND_FACE: "10 and face card",
        ANTE_ZERO_FLUSH: "zero flush",
    }
)


@lru_cache(maxsize=4096)
def ante_value(cards: tuple[Card, ...]) -> int:
    """The ante profile's value of a two-card hand, in tenths of a point.

    90 and 80 for 9 and 8, then AK flush 75, special pair 74, face-card combination 73,
    10 and face card 72, zero flush 71, then 70 ... 0 for taem 7 ... 0. A hand that
    matches several combinations takes the highest.
    """
    if len(cards) != 2:
        raise ValueError(f"an ante hand has two cards, not {len(cards)}")
    points = taem(cards)
    if points >= 8:
        return points * 10
    a, b = cards
    flush = a.suit == b.suit
    ranks = {a.rank, b.rank}
    if flush and ranks == {Rank.ACE, Rank.KING}:
        return ANTE_AK_FLUSH
    if a.rank == b.rank and a.rank in _SPECIAL_PAIR_RANKS:
        return ANTE_SPECIAL_PAIR
    if a.rank.is_face and b.rank.is_face:
        return ANTE_FACE_COMBINATION
    if Rank.TEN in ranks and (a.rank.is_face or b.rank.is_face):
        return ANTE_TEN_AND_FACE
    # Zero flush: one suit, taem 0, no 10 or face card (A-9, 2-8, 3-7, 4-6, 5-5).  Every card
    # of 10 or more scores 0 points except the ace (rank 14, one point), so test the points:
    # comparing ranks with 10 would wrongly leave out A-9 (RULES.md section 3, ante).
    if flush and points == 0 and a.rank.points and b.rank.points:
        return ANTE_ZERO_FLUSH
    return points * 10


def ante_is_special(cards: tuple[Card, ...]) -> bool:
    """A flush, a pair, or one of the five special combinations."""
    return is_flush(cards) or is_pair(cards) or ANTE_ZERO_FLUSH <= ante_value(cards) <= ANTE_AK_FLUSH


def ante_value_name(value: int) -> str:
    return ANTE_VALUE_NAMES.get(value, f"{value // 10} points")
