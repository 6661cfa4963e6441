"""pokdeng_core: the pure rules of Pok Deng (no I/O, no clock, no randomness but the seeded shuffle)."""

from .cards import Card, CardError, Rank, Suit, canonical_deck, format_cards, parse_card, parse_cards
from .evaluation import HandValue, Outcome, compare, evaluate
from .hands import HandKind, ante_value, deng, hand_kind, is_pok, taem
from .profiles import ENGINE_VERSION, PROFILE_NAMES, Profile, ProfileError, get_profile
from .settlement import (
    PlayerHand,
    RoundSettlement,
    SideBetResult,
    StakeError,
    StakeResult,
    settle,
    settle_round,
    settle_side_bet,
)

__all__ = (
    "ENGINE_VERSION",
    "PROFILE_NAMES",
    "Card",
    "CardError",
    "HandKind",
    "HandValue",
    "Outcome",
    "PlayerHand",
    "Profile",
    "ProfileError",
    "Rank",
    "RoundSettlement",
    "SideBetResult",
    "StakeError",
    "StakeResult",
    "Suit",
    "ante_value",
    "canonical_deck",
    "compare",
    "deng",
    "evaluate",
    "format_cards",
    "get_profile",
    "hand_kind",
    "is_pok",
    "parse_card",
    "parse_cards",
    "settle",
    "settle_round",
    "settle_side_bet",
    "taem",
)
