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

from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from functools import lru_cache

from .cards import Card
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
from .profiles import Comparison, Profile


class Outcome(StrEnum):
    PLAYER_WINS = "player_wins"
    BANKER_WINS = "banker_wins"
    TIE = "tie"


_CLASSIC_DENG = {
    HandKind.TONG: 5,
    HandKind.STRAIGHT_FLUSH: 5,
    HandKind.STRAIGHT: 3,
    HandKind.SAM_LUEANG: 3,
}


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


def _fmt(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    return f"{float(value):g}"


@lru_cache(maxsize=200_000)
def evaluate(profile: Profile, cards: tuple[Card, ...]) -> HandValue:
    """The value of ``cards`` under ``profile``."""
    if profile.comparison is Comparison.ANTE:
        return _evaluate_ante(cards)
    n = len(cards)
    if n not in (2, 3):
        raise ValueError(f"a hand has two or three cards, not {n}")
    if n == 3 and len(set(cards)) != 3 and profile.decks == 1:
        raise ValueError("a single-deck hand cannot hold the same card twice")
    kind = hand_kind(cards, profile.straights, profile.ace_low)
    points = taem(cards)
    if profile.comparison is Comparison.CLASSIC:
        d = _CLASSIC_DENG.get(kind) or deng(cards)
        label = kind.value.replace("_", " ")
        if kind is HandKind.POK and d == 2:
            label = "pok deng"
        elif kind is HandKind.NORMAL:
            label = {3: "sam deng", 2: "song deng"}.get(d, "normal")
        return HandValue(cards, kind, points, d, label, Fraction(d), (kind.order, points, d))
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
    return HandValue(cards, kind, taem(cards), deng(cards), label, Fraction(1), (value,), special, value)


@dataclass(frozen=True, slots=True)
class Verdict:
    """Who wins a comparison and at what multiplier of the stake (classic and ranked)."""

    outcome: Outcome
    multiplier: Fraction


_TIE = Verdict(Outcome.TIE, Fraction(0))


def compare(profile: Profile, player: HandValue, banker: HandValue) -> Verdict:
    """Compare a player's hand with the banker's under ``profile`` (not for ante: see settlement)."""
    if player.key == banker.key:
        return _TIE
    player_wins = player.key > banker.key
    winner, loser = (player, banker) if player_wins else (banker, player)
    outcome = Outcome.PLAYER_WINS if player_wins else Outcome.BANKER_WINS
    if profile.comparison is Comparison.CLASSIC:
        if winner.kind is not loser.kind:
            if {winner.kind, loser.kind} == {HandKind.TONG, HandKind.SAM_LUEANG}:
                return Verdict(outcome, Fraction(2))
            return Verdict(outcome, Fraction(winner.deng))
        if winner.taem != loser.taem:
            return Verdict(outcome, Fraction(winner.deng))
        return Verdict(outcome, Fraction(winner.deng - loser.deng))
    return Verdict(outcome, winner.multiplier)
