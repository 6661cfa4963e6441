"""The exact figures of the single-deck draw games (classic, room, kingmaker) from their deal counts
(``deal_counts``): RTP, win/tie/loss, variance, hand types, the law of the net, the value of each
decision, the commission, and kingmaker's side bet; and the player's best strategy they give.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from itertools import combinations

import numpy as np

from .cards import Card, canonical_deck
from .deal_counts import (
    EXACT_STAKE,
    HandClasses,
    IntArray,
    PathCounts,
    class_counts,
    deal_count,
    exact_sum,
    net_law,
    path_counts,
    strategy_rows,
)
from .evaluation import Outcome
from .profiles import Profile, get_profile
from .rtp_results import CommissionMath, Decision, RtpResult, SideBetMath
from .settlement import banker_commission, settle_side_bet, settle_values
from .strategies import Strategy, StrategyLike, choice_totals, reference_strategy


@dataclass(frozen=True)
class _Money:
    """Each (player class, banker class) settled: net and commissions at a stake, as integers."""

    stake: int
    outcome: IntArray  # 1 player wins, 0 tie, -1 banker wins
    net: IntArray  # the player's net, after commission
    gross_net: IntArray  # the player's net before its commission
    player_commission: IntArray
    banker_commission: IntArray  # what a player-banker pays on this one stake


@lru_cache(maxsize=64)
def _money(profile: Profile, cards: tuple[Card, ...], banker_draws: frozenset[int], stake: int | None) -> _Money:
    """Settle every class pair that some player strategy reaches against this banker strategy."""
    counts = path_counts(profile, cards, banker_draws)
    classes = counts.hands.classes
    used = class_counts(counts, np.ones(len(counts.row_total), dtype=np.bool_), with_pok=True) > 0
    at = stake if stake is not None else EXACT_STAKE
    ncls = len(classes)
    arrays = [np.zeros((ncls, ncls), dtype=np.int64) for _ in range(5)]
    outcome, net, gross_net, p_comm, b_comm = arrays
    code = {Outcome.PLAYER_WINS: 1, Outcome.TIE: 0, Outcome.BANKER_WINS: -1}
    for i, j in zip(*np.nonzero(used), strict=True):
        r = settle_values(profile, classes.values[i], classes.values[j], at)
        if stake is None:
            twice = settle_values(profile, classes.values[i], classes.values[j], 2 * at)
            if twice.player_net != 2 * r.player_net or twice.commission != 2 * r.commission:
                raise ArithmeticError(f"money is not exact at stake {at}: {r} vs {twice}")
        outcome[i, j] = code[r.outcome]
        net[i, j] = r.player_net
        gross_net[i, j] = r.player_net + r.commission
        p_comm[i, j] = r.commission
        b_comm[i, j] = banker_commission(profile, r.banker_net, banker_is_house=False)
    for array in arrays:
        array.flags.writeable = False  # cached: shared by every caller
    return _Money(at, outcome, net, gross_net, p_comm, b_comm)


def _hand_types(
    classes: HandClasses, per_class: Iterable[tuple[int, int]], total: int
) -> tuple[tuple[str, Fraction], ...]:
    mass: dict[str, int] = {}
    order: dict[str, tuple[int, int, Fraction]] = {}
    for cls, count in per_class:
        if not count:
            continue
        value = classes.values[cls]
        mass[value.label] = mass.get(value.label, 0) + count
        rank = (value.kind.order, value.deng, value.multiplier)
        order[value.label] = max(order.get(value.label, rank), rank)
    names = sorted(mass, key=lambda name: order[name], reverse=True)
    return tuple((name, Fraction(mass[name], total)) for name in names)


def exact_draw_game(profile: Profile, strategy: Strategy, stake: int | None, cards: tuple[Card, ...]) -> RtpResult:
    counts = path_counts(profile, cards, strategy.banker_draws)
    classes = counts.hands.classes
    deals = deal_count(len(cards))
    by_class = class_counts(counts, strategy_rows(counts, profile, strategy), with_pok=True)
    if int(by_class.sum()) != deals:
        raise ArithmeticError(f"the counts cover {int(by_class.sum())} deals, not {deals}")
    money = _money(profile, cards, strategy.banker_draws, stake)
    s = money.stake
    expected = Fraction(exact_sum(by_class, money.net), deals * s)
    second = Fraction(exact_sum(by_class, money.net * money.net), deals * s * s)
    decisions = _decisions(counts, profile, strategy, money)
    commission = None
    if profile.player_commission != "0" or profile.banker_commission != "0":
        commission = CommissionMath(
            profile.player_commission_rate,
            profile.banker_commission_rate,
            Fraction(exact_sum(by_class, money.player_commission), deals * s),
            Fraction(exact_sum(by_class, money.banker_commission), deals * s),
            1 + Fraction(exact_sum(by_class, money.gross_net), deals * s),
        )
    return RtpResult(
        profile=profile.key,
        strategy=strategy,
        strategy_text=strategy.describe(profile),
        method="complete enumeration of every deal, inclusion-exclusion over shared cards (integer counts)",
        stake=stake,
        deals=deals,
        rtp=1 + expected,
        win=Fraction(int(by_class[money.outcome == 1].sum()), deals),
        tie=Fraction(int(by_class[money.outcome == 0].sum()), deals),
        loss=Fraction(int(by_class[money.outcome == -1].sum()), deals),
        variance=second - expected * expected,
        hand_types=_hand_types(classes, enumerate(by_class.sum(axis=1).tolist()), deals),
        nets=net_law(by_class, money.net, s, deals),
        decisions=decisions,
        side_bet=_side_bet(profile, cards) if profile.side_bet is not None else None,
        commission=commission,
    )


def _decisions(counts: PathCounts, profile: Profile, strategy: Strategy, money: _Money) -> tuple[Decision, ...]:
    rule = profile.player_draw
    if rule is None:
        return ()
    deals = deal_count(counts.hands.deck.n)
    out = []
    for total in range(8):
        evs: dict[int, Fraction] = {}
        masses: set[int] = set()
        for action in (0, 1):
            rows = (counts.row_total == total) & (counts.row_action == action)
            block = class_counts(counts, rows, with_pok=False)
            mass = int(block.sum())
            masses.add(mass)
            evs[action] = Fraction(exact_sum(block, money.net), mass * money.stake) if mass else Fraction(0)
        if len(masses) != 1:
            raise ArithmeticError(f"total {total}: standing and drawing cover different deals {masses}")
        mass = masses.pop()
        if not mass:
            continue
        out.append(
            Decision(
                total,
                Fraction(mass, deals),
                evs[0],
                evs[1],
                rule.action(total),
                strategy.player_action(profile, total),
            )
        )
    return tuple(out)


@lru_cache(maxsize=16)
def best_strategy_over(profile: Profile, cards: tuple[Card, ...] | None = None) -> Strategy:
    reference = reference_strategy(profile)
    if profile.player_draw is None:
        return Strategy("best", reference.player_draws, reference.banker_draws)
    deck = cards if cards is not None else canonical_deck(1)
    result = exact_draw_game(profile, reference, None, deck)
    choice = set(choice_totals(profile.player_draw))
    draws = frozenset(d.total for d in result.decisions if d.total in choice and d.ev_draw > d.ev_stand)
    return Strategy("best", draws, reference.banker_draws)


def best_strategy(profile: Profile) -> Strategy:
    """The player's best fixed strategy per two-card total against the banker's reference strategy."""
    return best_strategy_over(get_profile(profile))


def resolve_strategy(profile: Profile, strategy: StrategyLike) -> Strategy:
    if isinstance(strategy, Strategy):
        return strategy
    if strategy == "reference":
        return reference_strategy(profile)
    if strategy == "best":
        return best_strategy(profile)
    raise ValueError(f"unknown strategy {strategy!r}: choose reference or best")


def _side_bet(profile: Profile, cards: tuple[Card, ...]) -> SideBetMath:
    """Kingmaker's side bet: the up card is the banker's first card; the second is any other unseen card."""
    rule = profile.side_bet
    assert rule is not None
    ups = [u for u in cards if u.points in rule.up_card_points]
    offered = Fraction(len(ups), len(cards))

    def natural(up: Card, other: Card) -> bool:
        return (up.points + other.points) % 10 >= 8

    wins = sum(natural(u, o) for u in ups for o in cards if o != u)
    natural_p = Fraction(wins, len(ups) * (len(cards) - 1)) if ups else Fraction(0)
    stake = EXACT_STAKE
    won = settle_side_bet(profile, True, stake).net
    lost = settle_side_bet(profile, False, stake).net
    payout = Fraction(won, stake)

    def rtp(p: Fraction) -> Fraction:
        return 1 + p * Fraction(won, stake) + (1 - p) * Fraction(lost, stake)

    best = Fraction(0)
    for up in ups:  # the player also knows its own two cards: the best case over them
        others = [o for o in cards if o != up]
        good = {o for o in others if natural(up, o)}
        for a, b in combinations(others, 2):
            best = max(best, Fraction(len(good - {a, b}), len(others) - 2))
    return SideBetMath(offered, natural_p, payout, rtp(natural_p), rtp(best))
