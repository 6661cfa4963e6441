"""The round's cards on the hot path: a card from and to the events' notation, and a hand's total, cached.

The machine deals, folds and checks the same few cards and hands many times a round: these look them up
instead of parsing, formatting or adding them again (bench/bench_rounds.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache
from types import MappingProxyType

from .cards import Card, canonical_deck, parse_card
from .hands import taem


@lru_cache(maxsize=1024)
def event_card(text: str) -> Card:
    return parse_card(text)


_CARD_TEXT: Mapping[Card, str] = MappingProxyType({card: str(card) for card in canonical_deck()})


def card_text(card: Card) -> str:
    """A card in the events' notation (``str(card)``, looked up)."""
    try:
        return _CARD_TEXT[card]  # (a read-only mapping's subscript is faster than its ``get``)
    except KeyError:
        return str(card)


def card_texts(cards: Iterable[Card]) -> tuple[str, ...]:
    return tuple(map(card_text, cards))


hand_total = lru_cache(maxsize=8192)(taem)  # the same hands are looked at several times in a round
