"""pokdeng_core: the pure rules of Pok Deng (no I/O, no clock, no randomness but the seeded shuffle).

The names below are loaded when first read (``__getattr__``, PEP 562): importing one module of the core
(``pokdeng_core.catalog``, ``pokdeng_core.shuffle``) does not load the rest of it, nor pydantic, so
``pokdeng --version`` and ``--help`` start at once. ``from pokdeng_core import settle`` works as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pokdeng_core.lazy import lazy_exports

if TYPE_CHECKING:
    from .cards import Card, CardError, Rank, Suit, canonical_deck, format_cards, parse_card, parse_cards
    from .catalog import ENGINE_VERSION, PROFILE_NAMES
    from .evaluation import HandValue, Outcome, compare, evaluate
    from .hands import HandKind, ante_value, deng, hand_kind, is_pok, taem
    from .profiles import Profile, ProfileError, get_profile
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

_EXPORTS = (
    ("cards", ("Card", "CardError", "Rank", "Suit", "canonical_deck", "format_cards", "parse_card", "parse_cards")),
    ("evaluation", ("HandValue", "Outcome", "compare", "evaluate")),
    ("hands", ("HandKind", "ante_value", "deng", "hand_kind", "is_pok", "taem")),
    ("catalog", ("ENGINE_VERSION", "PROFILE_NAMES")),
    ("profiles", ("Profile", "ProfileError", "get_profile")),
    ("settlement", (
        "PlayerHand", "RoundSettlement", "SideBetResult", "StakeError", "StakeResult",
        "settle", "settle_round", "settle_side_bet",
    )),
)  # fmt: skip
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

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, [*globals(), *__all__])
