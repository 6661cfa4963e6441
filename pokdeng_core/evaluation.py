"""A hand's value under a profile, and which of two hands wins and at what multiplier.

Three comparison families (``Comparison``):

* classic: hand type, then taem, then deng; the winner takes its deng, or the
  difference of deng when deng decided; tong against sam lueang pays 2.
* ranked (room, kingmaker): six ranks; within pok and normal hands only taem counts,
  within tong, straight flush, straight and sam lueang the highest card (kingmaker:
  sam lueang by its ranks high to low, then the highest card's suit). The winner is
  paid at its hand's multiplier.
* ante: the two-card values of seed 001, compared as numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from functools import lru_cache
from types import MappingProxyType

from .cards import Card, CardError, format_cards
from .hands import (
    HandKind,
    ante_is_special,
    ante_value,
    ante_value_name,
    deng,
    hand_kind,
    highest_card,
    is_flush,
    is_pair,
    taem,
)
from .profiles import Comparison, Profile, get_profile


class Outcome(StrEnum):
    PLAYER_WINS = "player_wins"
    BANKER_WINS = "banker_wins"
    TIE = "tie"


_CLASSIC_DENG = MappingProxyType(
    {
        HandKind.TONG: 5,
        HandKind.STRAIGHT_FLUSH: 5,
        HandKind.STRAIGHT: 3,
        HandKind.SAM_LUEANG: 3,
    }
)


@dataclass(frozen=True, slots=True)
class HandValue:
    """What a hand is worth under one profile.

    ``key`` orders hands of the profile: a greater key wins, equal keys tie.
    ``multiplier`` is what the hand is paid at when it wins (classic: its deng).
    """

    cards: tuple[Card, ...]
    kind: HandKind
    taem: int
    deng: int
    label: str
    multiplier: Fraction
    key: tuple[int, ...]
    special: bool = False  # ante: a flush, a pair or a special combination
    value: int = 0  # ante: the value in tenths (90, 80, 75 ... 71, 70 ... 0)

    @property
    def is_pok(self) -> bool:
        return self.kind is HandKind.POK

    def describe(self) -> str:
        return f"{self.label} (taem {self.taem}, x{_fmt(self.multiplier)})"


_INTEGERS = tuple(Fraction(i) for i in range(11))


def as_fraction(value: int) -> Fraction:
    """``Fraction(value)``, shared for the small multipliers of the hot path."""
    return _INTEGERS[value] if 0 <= value < len(_INTEGERS) else Fraction(value)


def _fmt(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    return f"{float(value):g}"


class CompiledProfile:
    """What the hot paths need from one profile, read once: flags and exact rates.

    Built by ``compiled(profile)`` (one per distinct profile value); never changed after.
    """

    __slots__ = (
        "ante",
        "classic",
        "commission_den",
        "commission_num",
        "floor",
        "profile",
        "single_deck",
        "wager_split",
    )

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.classic = profile.comparison is Comparison.CLASSIC
        self.ante = profile.comparison is Comparison.ANTE
        self.single_deck = profile.decks == 1
        self.wager_split = profile.wager_split
        rate = profile.player_commission_rate
        self.commission_num = rate.numerator
        self.commission_den = rate.denominator
        self.floor: Fraction | None = profile.loss_floor if profile.loss_floor > 0 else None


_HAND_CACHE_LIMIT = 1 << 20  # more than every ordered 2- and 3-card hand (143,312) of four profiles


def _as_profile(profile: object) -> Profile:
    if isinstance(profile, str):
        return get_profile(profile)
    if not isinstance(profile, Profile):
        raise TypeError(f"expected a Profile (see get_profile), not {profile!r}")
    return profile


@lru_cache(maxsize=256)
def _compiled(profile: Profile) -> CompiledProfile:
    return CompiledProfile(profile)


def compiled(profile: Profile | str) -> CompiledProfile:
    """The ``CompiledProfile`` of ``profile`` (cached by value); a name is looked up."""
    return _compiled(profile if type(profile) is Profile else _as_profile(profile))


@lru_cache(maxsize=_HAND_CACHE_LIMIT)
def hand_value(profile: Profile, cards: tuple[Card, ...]) -> HandValue:
    """``evaluate`` for a tuple of ``Card``s (cached: a pure function of its arguments)."""
    return _evaluate(profile, cards)


def evaluate(profile: Profile | str, cards: Sequence[Card]) -> HandValue:
    """The value of ``cards`` (two or three ``Card``s, in deal order) under ``profile`` (or its name)."""
    rules = profile if type(profile) is Profile else _as_profile(profile)
    return hand_value(rules, cards if type(cards) is tuple else tuple(cards))


def _evaluate(profile: Profile, cards: tuple[Card, ...]) -> HandValue:
    for card in cards:
        if not isinstance(card, Card):
            raise CardError(f"expected cards, not {card!r} (see parse_cards)")
    n = len(cards)
    if profile.comparison is Comparison.ANTE:
        if n != 2:
            raise CardError(f"an ante hand has two cards, not {n}")
        return _evaluate_ante(cards)
    if n not in (2, 3):
        raise CardError(f"a hand has two or three cards, not {n}")
    if profile.decks == 1 and len(set(cards)) != n:
        raise CardError(f"a single-deck hand cannot hold the same card twice: {format_cards(cards)}")
    kind = hand_kind(cards, profile.straights, profile.ace_low)
    points = taem(cards)
    if profile.comparison is Comparison.CLASSIC:
        d = _CLASSIC_DENG.get(kind) or deng(cards)
        label = kind.value.replace("_", " ")
        if kind is HandKind.POK and d == 2:
            label = "pok deng"
        elif kind is HandKind.NORMAL:
            label = {3: "sam deng", 2: "song deng"}.get(d, "normal")
        return HandValue(cards, kind, points, d, label, as_fraction(d), (kind.order, points, d))
    return _evaluate_ranked(profile, cards, kind, points)


def _evaluate_ranked(profile: Profile, cards: tuple[Card, ...], kind: HandKind, points: int) -> HandValue:
    multipliers = profile.multipliers
    assert multipliers is not None
    d = deng(cards)
    if kind is HandKind.POK:
        label = "pok_deng" if d == 2 else "pok"
        within: tuple[int, ...] = (points,)
    elif kind is HandKind.NORMAL:
        label = {3: "sam_deng", 2: "song_deng"}.get(d, "taem")
        within = (points,)
    else:
        label = kind.value
        top = highest_card(cards)
        if kind is HandKind.SAM_LUEANG and profile.sam_lueang_by_ranks:
            ranks = sorted((int(c.rank) for c in cards), reverse=True)
            within = (*ranks, int(top.suit))
        else:
            within = (int(top.rank), int(top.suit))
    multiplier = multipliers.fraction(label)
    return HandValue(
        cards,
        kind,
        points,
        d,
        label.replace("_", " "),
        multiplier,
        (kind.order, *within),
    )


def _evaluate_ante(cards: tuple[Card, ...]) -> HandValue:
    value = ante_value(cards)
    special = ante_is_special(cards)
    kind = HandKind.POK if value >= 80 else HandKind.NORMAL
    label = ante_value_name(value) if 71 <= value <= 75 else f"{value // 10}"
    if special and not 71 <= value <= 75:
        label += " pair" if is_pair(cards) else " flush" if is_flush(cards) else ""
    return HandValue(cards, kind, taem(cards), deng(cards), label, _INTEGERS[1], (value,), special, value)


@dataclass(frozen=True, slots=True)
class Verdict:
    """Who wins a comparison and at what multiplier of the stake (classic and ranked)."""

    outcome: Outcome
    multiplier: Fraction


_TIE = Verdict(Outcome.TIE, _INTEGERS[0])


def classic_multiplier(winner: HandValue, loser: HandValue) -> int:
    """What the winner of a classic comparison is paid, in stakes.

    Its deng when hand type or taem decided, the difference of deng when deng decided;
    tong against sam lueang pays 2 (RULES.md section 3, classic).
    """
    if winner.kind is not loser.kind:
        if (winner.kind is HandKind.TONG and loser.kind is HandKind.SAM_LUEANG) or (
            winner.kind is HandKind.SAM_LUEANG and loser.kind is HandKind.TONG
        ):
            return 2
        return winner.deng
    if winner.taem != loser.taem:
        return winner.deng
    return winner.deng - loser.deng


def compare(profile: Profile, player: HandValue, banker: HandValue) -> Verdict:
    """Compare a player's hand with the banker's under ``profile`` (not for ante: see settlement).

    The multiplier is the winning hand's (classic: see ``classic_multiplier``), before any
    loss floor of the profile (kingmaker: see ``settle_values``).
    """
    if player.key == banker.key:
        return _TIE
    player_wins = player.key > banker.key
    winner, loser = (player, banker) if player_wins else (banker, player)
    outcome = Outcome.PLAYER_WINS if player_wins else Outcome.BANKER_WINS
    if profile.comparison is Comparison.CLASSIC:
        return Verdict(outcome, as_fraction(classic_multiplier(winner, loser)))
    return Verdict(outcome, winner.multiplier)
