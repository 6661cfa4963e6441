"""The exact figures of the ante profile: eight decks, two cards each, enumerated by card type with
multiplicities (ordered draws without replacement), the wager split into its ante and its bet.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .cards import Card, canonical_deck
from .deal_counts import EXACT_STAKE, FLOAT_EXACT, HandClasses, IntArray, exact_sum, net_law
from .evaluation import HandValue, Outcome, evaluate
from .profiles import Profile
from .rtp_results import AnteMath, RtpResult
from .settlement import settle_values
from .strategies import Strategy


def exact_ante(profile: Profile, stake: int | None, strategy_name: str) -> RtpResult:
    """Ante has no decisions: every strategy is the same (``strategy_name`` only labels the result)."""
    types = canonical_deck(1)
    copies = profile.decks
    classes = HandClasses()
    by_class, deals = _deal_counts(profile, types, copies, classes)
    at = stake if stake is not None else EXACT_STAKE
    ante_net, bet_net, outcome = _settled(profile, classes, at)
    net = ante_net + bet_net
    expected = Fraction(exact_sum(by_class, net), deals * at)
    second_moment = Fraction(exact_sum(by_class, net * net), deals * at * at)
    return RtpResult(
        profile=profile.key,
        strategy=Strategy(strategy_name),
        strategy_text="no decisions (two cards each)",
        method=(
            f"complete enumeration of ordered card types ({len(types)} types x {copies} copies, "
            "drawn without replacement)"
        ),
        stake=stake,
        deals=deals,
        rtp=1 + expected,
        win=Fraction(int(by_class[outcome == 1].sum()), deals),
        tie=Fraction(int(by_class[outcome == 0].sum()), deals),
        loss=Fraction(int(by_class[outcome == -1].sum()), deals),
        variance=second_moment - expected * expected,
        hand_types=_hand_types(classes, by_class, deals),
        nets=net_law(by_class, net, at, deals),
        ante=_wager_split(by_class, ante_net, bet_net, deals, at // 2),
    )


def _deal_counts(profile: Profile, types: tuple[Card, ...], copies: int, classes: HandClasses) -> tuple[IntArray, int]:
    """The deals of each (player class, banker class): ordered draws of card types without replacement,
    and their number."""
    shoe = copies * len(types)
    t = len(types)
    first = np.repeat(np.arange(t), t)
    second = np.tile(np.arange(t), t)
    cls = np.array([classes.of(evaluate(profile, (types[a], types[b]))) for a, b in zip(first, second, strict=True)])
    ncls = len(classes)
    # ordered draws without replacement: copies left of each type when it is drawn
    p1, p2 = first[:, None], second[:, None]
    b1, b2 = first[None, :], second[None, :]
    weight = (
        copies
        * (copies - (p2 == p1))
        * (copies - (b1 == p1) - (b1 == p2))
        * (copies - (b2 == p1) - (b2 == p2) - (b2 == b1))
    )
    pair_key = (cls[:, None] * ncls + cls[None, :]).ravel()
    by_class_f = np.bincount(pair_key, weights=weight.ravel().astype(np.float64), minlength=ncls * ncls)
    deals = shoe * (shoe - 1) * (shoe - 2) * (shoe - 3)
    if by_class_f.max() >= FLOAT_EXACT or int(by_class_f.sum()) != deals:
        raise ArithmeticError("ante counts are not exact")
    by_class = np.rint(by_class_f).astype(np.int64).reshape(ncls, ncls)
    if int(by_class.sum()) != deals:
        raise ArithmeticError(f"the ante counts cover {int(by_class.sum())} deals, not {deals}")
    return by_class, deals


def _settled(profile: Profile, classes: HandClasses, at: int) -> tuple[IntArray, IntArray, IntArray]:
    """Each (player class, banker class) settled at stake ``at``: the ante's net, the bet's, the outcome."""
    ncls = len(classes)
    ante_net = np.zeros((ncls, ncls), dtype=np.int64)
    bet_net = np.zeros((ncls, ncls), dtype=np.int64)
    outcome = np.zeros((ncls, ncls), dtype=np.int64)
    code = {Outcome.PLAYER_WINS: 1, Outcome.TIE: 0, Outcome.BANKER_WINS: -1}
    for i in range(ncls):
        for j in range(ncls):
            r = settle_values(profile, classes.values[i], classes.values[j], at)
            assert r.ante_net is not None and r.bet_net is not None
            ante_net[i, j], bet_net[i, j], outcome[i, j] = r.ante_net, r.bet_net, code[r.outcome]
    return ante_net, bet_net, outcome


def _hand_types(classes: HandClasses, by_class: IntArray, deals: int) -> tuple[tuple[str, Fraction], ...]:
    """The player's final hand types (``ante_type``), best first, with their probabilities."""
    per_class = by_class.sum(axis=1).tolist()
    hand_types: dict[str, int] = {}
    for k, count in enumerate(per_class):
        name = ante_type(classes.values[k])
        hand_types[name] = hand_types.get(name, 0) + count
    order = {ante_type(v): v.value for v in classes.values}
    return tuple(
        (name, Fraction(hand_types[name], deals)) for name in sorted(hand_types, key=order.__getitem__, reverse=True)
    )


def _wager_split(by_class: IntArray, ante_net: IntArray, bet_net: IntArray, deals: int, half: int) -> AnteMath:
    """The wager's two halves: per unit of ante and per unit of bet, and how the bet ends."""
    net = ante_net + bet_net
    return AnteMath(
        ante_ev=Fraction(exact_sum(by_class, ante_net), deals * half),
        bet_ev=Fraction(exact_sum(by_class, bet_net), deals * half),
        edge_per_ante=-Fraction(exact_sum(by_class, net), deals * half),
        bet_won=Fraction(int(by_class[bet_net > 0].sum()), deals),
        bet_push=Fraction(int(by_class[bet_net == 0].sum()), deals),
        bet_lost=Fraction(int(by_class[bet_net < 0].sum()), deals),
    )


def ante_type(value: HandValue) -> str:
    if 71 <= value.value <= 75:
        return value.label
    points = value.value // 10
    return f"{points} special" if value.special else f"{points} plain"
