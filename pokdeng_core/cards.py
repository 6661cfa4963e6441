"""Cards, their text notation and the shoes they come in (RULES.md section 1).

A card is a (rank, suit) pair. Ranks are ordered 2 < 3 < ... < K < A and suits
♦ < ♣ < ♥ < ♠, so comparing two cards as tuples gives the tie-break order of
RULES.md: rank first, then suit.

Text notation: a rank ``A 2 .. 9 10 J Q K`` (``T`` for 10) followed by a suit
``S H C D`` or ``♠ ♥ ♣ ♦``, case-insensitive: ``AS 10H KD``, ``9♠ 9♦``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import IntEnum
from types import MappingProxyType
from typing import NamedTuple


class CardError(ValueError):
    """A card token or card list that cannot be read."""


class Suit(IntEnum):
    """Suits in tie-break order: a greater value wins."""

    DIAMONDS = 0
    CLUBS = 1
    HEARTS = 2
    SPADES = 3

    @property
    def letter(self) -> str:
        return "DCHS"[self]

    @property
    def symbol(self) -> str:
        return "♦♣♥♠"[self]


class Rank(IntEnum):
    """Ranks in tie-break order: A is the greatest."""

    TWO = 2
    THREE = 3
    FOUR = 4
    FIVE = 5
    SIX = 6
    SEVEN = 7
    EIGHT = 8
    NINE = 9
    TEN = 10
    JACK = 11
    QUEEN = 12
    KING = 13
    ACE = 14

    @property
    def points(self) -> int:
        """The card's points toward taem: A = 1, 2-9 face value, 10/J/Q/K = 0."""
        if self is Rank.ACE:
            return 1
        if self >= Rank.TEN:
            return 0
        return int(self)

    @property
    def is_face(self) -> bool:
        """J, Q or K (the cards of sam lueang)."""
        return Rank.JACK <= self <= Rank.KING

    @property
    def text(self) -> str:
        return _RANK_TEXT[self]


_RANK_TEXT: Mapping[Rank, str] = MappingProxyType(
    {
        Rank.TWO: "2",
        Rank.THREE: "3",
        Rank.FOUR: "4",
        Rank.FIVE: "5",
        Rank.SIX: "6",
        Rank.SEVEN: "7",
        Rank.EIGHT: "8",
        Rank.NINE: "9",
        Rank.TEN: "10",
        Rank.JACK: "J",
        Rank.QUEEN: "Q",
        Rank.KING: "K",
        Rank.ACE: "A",
    }
)
_RANK_BY_TEXT: Mapping[str, Rank] = MappingProxyType(
    {
        **{text: rank for rank, text in _RANK_TEXT.items()},
        "T": Rank.TEN,
        "1": Rank.ACE,  # some tables write the ace as 1 (seed 001 does)
    }
)
_SUIT_BY_TEXT: Mapping[str, Suit] = MappingProxyType(
    {
        "S": Suit.SPADES,
        "H": Suit.HEARTS,
        "C": Suit.CLUBS,
        "D": Suit.DIAMONDS,
        "♠": Suit.SPADES,
        "♥": Suit.HEARTS,
        "♣": Suit.CLUBS,
        "♦": Suit.DIAMONDS,
        "♤": Suit.SPADES,
        "♡": Suit.HEARTS,
        "♧": Suit.CLUBS,
        "♢": Suit.DIAMONDS,
    }
)
_VARIATION_SELECTOR = "\ufe0f"


class Card(NamedTuple):
    """One playing card. Tuple order is the tie-break order (rank, then suit)."""

    rank: Rank
    suit: Suit

    @property
    def points(self) -> int:
        return self.rank.points

    @property
    def canonical_index(self) -> int:
        """Position 0..51 in the canonical deck order (see ``canonical_deck``)."""
        return _CANONICAL_SUITS.index(self.suit) * 13 + _CANONICAL_RANKS.index(self.rank)

    def __str__(self) -> str:
        return self.rank.text + self.suit.letter

    @property
    def pretty(self) -> str:
        return self.rank.text + self.suit.symbol

    @classmethod
    def parse(cls, token: str) -> Card:
        return parse_card(token)


def parse_card(token: str) -> Card:
    """Read one card such as ``AS``, ``10h``, ``T♦`` or ``9♠``."""
    text = token.strip().replace(_VARIATION_SELECTOR, "").upper()
    if len(text) < 2:
        raise CardError(f"cannot read card {token!r}: expected a rank and a suit, like 'AS' or '10♥'")
    rank = _RANK_BY_TEXT.get(text[:-1])
    suit = _SUIT_BY_TEXT.get(text[-1])
    if rank is None or suit is None:
        raise CardError(
            f"cannot read card {token!r}: rank must be one of A 2-9 10 T J Q K and suit one of S H C D ♠ ♥ ♣ ♦"
        )
    return Card(rank, suit)


CardsLike = str | Card | Iterable[str | Card]


def parse_cards(cards: CardsLike) -> tuple[Card, ...]:
    """Read a hand: card text such as ``"AS 10H KD"``, or an iterable of cards or tokens."""
    if isinstance(cards, Card):
        return (cards,)
    if isinstance(cards, str):
        tokens: Iterable[str | Card] = cards.replace(",", " ").split()
    else:
        tokens = cards
    parsed = tuple(c if isinstance(c, Card) else parse_card(c) for c in tokens)
    if not parsed:
        raise CardError("no cards given")
    return parsed


def format_cards(cards: Iterable[Card], pretty: bool = False) -> str:
    return " ".join(c.pretty if pretty else str(c) for c in cards)


# Canonical deck order, the starting point of the seeded shuffle (docs/shuffle.md):
# suits ♠ ♥ ♣ ♦, and within each suit A 2 3 ... 10 J Q K.  Index 0 is AS, 51 is KD.
_CANONICAL_SUITS = (Suit.SPADES, Suit.HEARTS, Suit.CLUBS, Suit.DIAMONDS)
_CANONICAL_RANKS = (
    Rank.ACE,
    Rank.TWO,
    Rank.THREE,
    Rank.FOUR,
    Rank.FIVE,
    Rank.SIX,
    Rank.SEVEN,
    Rank.EIGHT,
    Rank.NINE,
    Rank.TEN,
    Rank.JACK,
    Rank.QUEEN,
    Rank.KING,
)
CANONICAL_DECK: tuple[Card, ...] = tuple(Card(r, s) for s in _CANONICAL_SUITS for r in _CANONICAL_RANKS)


def canonical_deck(decks: int = 1) -> tuple[Card, ...]:
    """The unshuffled shoe: ``decks`` copies of the canonical 52-card order, one after another."""
    if decks < 1:
        raise ValueError("a shoe needs at least one deck")
    return CANONICAL_DECK * decks
