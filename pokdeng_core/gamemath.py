"""Game math: the exact return to player of every profile, and a Monte Carlo check through the machine.

Everything here is pure (no I/O, no clock); ``docs/game-math.md`` explains the method and
shows the figures. Two entry points:

* ``exact(profile, strategy)`` enumerates every deal completely (no sampling) and returns
  exact ``Fraction`` figures: RTP, house edge, win/tie/loss, the variance of a unit bet's
  net, the probability of each final player hand type, and per profile the side bet, the
  commission or the ante/bet split.
* ``simulate(profile, rounds, seed, strategy)`` plays whole rounds through the round state
  machine (``machine.decide``/``evolve``) on seeded shuffles and returns the same figures
  with 95% confidence intervals.

Definitions (per unit staked, one player's hand against the banker):

* net = what the player's wallet gains on the stake (negative: loses), after commission;
* RTP = E[amount returned] / stake = 1 + E[net] / stake; house edge = 1 - RTP = -E[net] / stake;
* win / tie / loss = probabilities of the stake's outcome.

One hand against the banker is enough: the other seats do not change the joint law of this
hand's cards and the banker's. The shoe is a uniformly random permutation and, in the
strategies below, every decision depends only on the decider's own cards, so every card
this hand or the banker receives - dealt or drawn, whatever other seats did before - is
uniform over the cards not yet seen by it (the unseen cards are exchangeable).

Money is computed at a stake where the profile's multipliers are exact (0.95, the 3%
commission): at small stakes ``floor``/``ceil`` rounding (RULES.md section 2) lowers the
player's return further; ``exact(..., stake=s)`` gives the exact figures at stake ``s``.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from itertools import combinations
from types import MappingProxyType
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from . import commands as c
from . import events as e
from .cards import Card, canonical_deck
from .evaluation import HandValue, Outcome, evaluate
from .machine import BANKER, Phase, RoundState, attach_shoe, decide_and_fold
from .profiles import BankerKind, Comparison, DrawRule, Profile, get_profile
from .settlement import banker_commission, settle_side_bet, settle_values
from .shuffle import SHUFFLE_ALGORITHM, commitment

__all__ = (
    "AnteMath",
    "CommissionMath",
    "Decision",
    "Estimate",
    "RtpResult",
    "SideBetMath",
    "SimulationResult",
    "Strategy",
    "best_strategy",
    "exact",
    "reference_strategy",
    "round_server_seed",
    "simulate",
)

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

EXACT_STAKE = 2_000_000
"""The stake at which every profile's money is exact (0.95 x, 3% of 1 x .. 5 x, an even ante wager).
``exact`` checks it: every net at twice this stake is exactly twice the net at this stake."""

_FLOAT_EXACT = 2**53  # float64 holds every integer below this exactly
_Z95 = 1.959963984540054  # two-sided 95% normal quantile

Action = Literal["draw", "stand"]


# ---------------------------------------------------------------------------------------
# strategies


@dataclass(frozen=True, slots=True)
class Strategy:
    """What the player and the banker do where the profile lets them choose.

    ``player_draws`` / ``banker_draws``: the two-card totals, within the profile's choice
    range, on which the hand draws; on the other choice totals it stands. Outside the
    choice range the profile's automatic action applies (RULES.md section 3) and a pok
    never draws. The banker never uses the selective reveal.
    """

    name: str
    player_draws: frozenset[int] = frozenset()
    banker_draws: frozenset[int] = frozenset()

    def player_action(self, profile: Profile, points: int) -> Action:
        return _action(profile.player_draw, self.player_draws, points)

    def banker_action(self, profile: Profile, points: int) -> Action:
        return _action(profile.banker_draw, self.banker_draws, points)

    def describe(self, profile: Profile) -> str:
        parts = []
        for who, rule in (("player", profile.player_draw), ("banker", profile.banker_draw)):
            if rule is None:
                continue
            draws = [t for t in range(8) if _action(rule, self._draws(who), t) == "draw"]
            parts.append(f"{who} draws on {_ranges(draws)}, stands on {_ranges(sorted(set(range(8)) - set(draws)))}")
        return "; ".join(parts) if parts else "no decisions (two cards each)"

    def _draws(self, who: str) -> frozenset[int]:
        return self.player_draws if who == "player" else self.banker_draws


def _action(rule: DrawRule | None, chosen: frozenset[int], points: int) -> Action:
    if rule is None or points >= 8:  # no draws in the profile, or a pok (two cards, 8 or 9)
        return "stand"
    action = rule.action(points)
    if action == "choose":
        return "draw" if points in chosen else "stand"
    return action


def _ranges(values: Sequence[int]) -> str:
    if not values:
        return "none"
    out: list[str] = []
    start = prev = values[0]
    for v in [*values[1:], None]:
        if v is not None and v == prev + 1:
            prev = v
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if v is not None:
            start = prev = v
    return ", ".join(out)


def _choice_totals(rule: DrawRule | None) -> tuple[int, ...]:
    if rule is None:
        return ()
    return tuple(t for t in range(8) if rule.action(t) == "choose")


REFERENCE_DRAW_MAX: Mapping[str, int] = MappingProxyType({"classic": 4})
"""Reference strategy: on a choice total the hand draws on totals up to this (classic: 0-4, both sides).
Other profiles: the automatic action the profile gives on timeout (room and kingmaker players
draw on 0-3 anyway and stand on 4-7; the room banker stands on 4-7)."""


def reference_strategy(profile: Profile) -> Strategy:
    """The documented reference strategy of ``profile`` (see ``REFERENCE_DRAW_MAX``)."""

    def draws(rule: DrawRule | None) -> frozenset[int]:
        if rule is None:
            return frozenset()
        limit = REFERENCE_DRAW_MAX.get(profile.name, rule.timeout_draw_max)
        return frozenset(t for t in _choice_totals(rule) if t <= limit)

    return Strategy("reference", draws(profile.player_draw), draws(profile.banker_draw))


def best_strategy(profile: Profile) -> Strategy:
    """The player's best fixed strategy per two-card total against the banker's reference strategy."""
    return _best_strategy(get_profile(profile))


StrategyLike = Strategy | Literal["reference", "best"] | str


def resolve_strategy(profile: Profile, strategy: StrategyLike) -> Strategy:
    if isinstance(strategy, Strategy):
        return strategy
    if strategy == "reference":
        return reference_strategy(profile)
    if strategy == "best":
        return best_strategy(profile)
    raise ValueError(f"unknown strategy {strategy!r}: choose reference or best")


# ---------------------------------------------------------------------------------------
# results


@dataclass(frozen=True, slots=True)
class Decision:
    """One two-card total of the player, not a pok, when the banker has no pok.

    ``probability`` of that situation; ``ev_stand`` and ``ev_draw`` are E[net per unit | situation,
    action]; ``rule`` is what the profile allows (draw, stand or choose); ``chosen`` what the
    strategy does. An action the profile does not allow is still valued, for comparison.
    """

    total: int
    probability: Fraction
    ev_stand: Fraction
    ev_draw: Fraction
    rule: str
    chosen: Action

    @property
    def best(self) -> Action:
        return "draw" if self.ev_draw > self.ev_stand else "stand"


@dataclass(frozen=True, slots=True)
class SideBetMath:
    """Kingmaker's side bet, on its own: offered when the banker's up card is an 8 or a 9."""

    offer_probability: Fraction  # P(up card is 8 or 9)
    natural_probability: Fraction  # P(banker natural | offered): the side bet wins
    payout: Fraction  # net per unit on a win (1.2)
    rtp: Fraction  # P(natural | offered) x (1 + payout)
    best_conditional_rtp: Fraction  # the best a player can do knowing its own two cards too

    @property
    def house_edge(self) -> Fraction:
        return 1 - self.rtp


@dataclass(frozen=True, slots=True)
class CommissionMath:
    """The room's commissions, per unit of the player's stake (one player against the banker)."""

    player_rate: Fraction
    banker_rate: Fraction
    player_commission: Fraction  # E[commission the player pays]
    banker_commission: Fraction  # E[commission the banker pays on this stake] (not part of the player's RTP)
    rtp_before_commission: Fraction


@dataclass(frozen=True, slots=True)
class AnteMath:
    """The ante profile's wager split: figures per unit of ante and per unit of bet."""

    ante_ev: Fraction  # E[ante net] / ante
    bet_ev: Fraction  # E[bet net] / bet
    edge_per_ante: Fraction  # -E[net of ante + bet] / ante (the wager is 2 antes)
    bet_won: Fraction
    bet_push: Fraction
    bet_lost: Fraction


@dataclass(frozen=True, slots=True)
class RtpResult:
    """Exact figures for one profile and strategy, per unit staked."""

    profile: str
    strategy: Strategy
    strategy_text: str
    method: str
    stake: int | None  # None: exact multipliers (large stakes)
    deals: int  # the number of equally likely deals enumerated (probabilities are counts / deals)
    rtp: Fraction
    win: Fraction
    tie: Fraction
    loss: Fraction
    variance: Fraction  # of a unit bet's net
    hand_types: tuple[tuple[str, Fraction], ...]  # the player's final hand, best first
    nets: tuple[tuple[Fraction, Fraction], ...]  # (net per unit, probability)
    decisions: tuple[Decision, ...] = ()
    side_bet: SideBetMath | None = None
    commission: CommissionMath | None = None
    ante: AnteMath | None = None

    @property
    def house_edge(self) -> Fraction:
        return 1 - self.rtp

    @property
    def sd(self) -> float:
        return math.sqrt(self.variance)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view: exact values as ``"p/q"`` strings next to decimals."""
        out: dict[str, Any] = {
            "profile": self.profile,
            "strategy": self.strategy.name,
            "strategy_text": self.strategy_text,
            "method": self.method,
            "stake": self.stake,
            "deals": self.deals,
            "rtp": _fx(self.rtp),
            "house_edge": _fx(self.house_edge),
            "win": _fx(self.win),
            "tie": _fx(self.tie),
            "loss": _fx(self.loss),
            "variance": _fx(self.variance),
            "sd": self.sd,
            "hand_types": {name: _fx(p) for name, p in self.hand_types},
            "nets": [{"net": _fx(net), "probability": _fx(p)} for net, p in self.nets],
        }
        if self.decisions:
            out["decisions"] = [
                {
                    "total": d.total,
                    "probability": _fx(d.probability),
                    "ev_stand": _fx(d.ev_stand),
                    "ev_draw": _fx(d.ev_draw),
                    "rule": d.rule,
                    "chosen": d.chosen,
                    "best": d.best,
                }
                for d in self.decisions
            ]
        if self.side_bet is not None:
            s = self.side_bet
            out["side_bet"] = {
                "offer_probability": _fx(s.offer_probability),
                "natural_probability": _fx(s.natural_probability),
                "payout": _fx(s.payout),
                "rtp": _fx(s.rtp),
                "house_edge": _fx(s.house_edge),
                "best_conditional_rtp": _fx(s.best_conditional_rtp),
            }
        if self.commission is not None:
            m = self.commission
            out["commission"] = {
                "player_rate": _fx(m.player_rate),
                "banker_rate": _fx(m.banker_rate),
                "player_commission": _fx(m.player_commission),
                "banker_commission": _fx(m.banker_commission),
                "rtp_before_commission": _fx(m.rtp_before_commission),
            }
        if self.ante is not None:
            a = self.ante
            out["ante"] = {
                "ante_ev": _fx(a.ante_ev),
                "bet_ev": _fx(a.bet_ev),
                "edge_per_ante": _fx(a.edge_per_ante),
                "bet_won": _fx(a.bet_won),
                "bet_push": _fx(a.bet_push),
                "bet_lost": _fx(a.bet_lost),
            }
        return out


def _fx(value: Fraction) -> dict[str, Any]:
    return {"exact": str(value), "decimal": float(value)}


# ---------------------------------------------------------------------------------------
# exact enumeration: entry point


def exact(
    profile: str | Profile,
    strategy: StrategyLike = "reference",
    *,
    stake: int | None = None,
    deck: Sequence[Card] | None = None,
) -> RtpResult:
    """The exact figures of ``profile`` under ``strategy`` (``"reference"``, ``"best"`` or a ``Strategy``).

    ``stake``: settle at this stake in minor units, with its floor/ceil rounding (default: exact
    multipliers). ``deck`` (single-deck profiles, for tests): enumerate this set of distinct
    cards instead of the full deck.
    """
    rules = get_profile(profile)
    if rules.comparison is Comparison.ANTE:
        if deck is not None:
            raise ValueError("the ante profile is enumerated over its whole shoe")
        return _exact_ante(rules, stake, "best" if strategy == "best" else "reference")
    if rules.decks != 1:
        raise ValueError(f"profile {rules.name} has {rules.decks} decks: only single-deck draw games are enumerated")
    cards = tuple(deck) if deck is not None else canonical_deck(1)
    if len(set(cards)) != len(cards) or len(cards) < 6:
        raise ValueError("the deck must hold at least six distinct cards")
    chosen = _resolve_for(rules, strategy, cards)
    return _exact_draw_game(rules, chosen, stake, cards)


def _resolve_for(profile: Profile, strategy: StrategyLike, cards: tuple[Card, ...]) -> Strategy:
    if strategy == "best":
        return _best_strategy(profile, cards)
    return resolve_strategy(profile, strategy)


# ---------------------------------------------------------------------------------------
# single-deck draw games (classic, room, kingmaker): counting over paths
#
# A "path" is a hand's final card set together with how it got there: its two dealt cards,
# and the drawn card if it drew. Every deal is a sequence of distinct cards, all equally
# likely; grouping them by (player path, banker path) with the right number of unseen
# cards gives integer counts whose total is
#     deals = C(n, 2) * C(n - 2, 2) * (n - 4) * (n - 5)
# (the player's two cards, the banker's two, and the next two cards of the shoe).
# Weights, with m = n - 4 unseen cards after the deal:
#     banker pok, or both stand: m (m - 1); exactly one draws: m - 1; both draw: 1.
#
# Disjointness by inclusion-exclusion: the number of (player path, banker path) pairs
# with no card in common is sum over k of (-1)^k sum over k-card sets T of
# G_k[player row, T] * H_k[T, banker class], where G_k / H_k count the paths containing T.
# k runs to 3, so each product is a matrix product over 1, n, C(n,2) or C(n,3) columns.


@dataclass(frozen=True)
class _Deck:
    cards: tuple[Card, ...]
    pairs: IntArray  # (P, 2), i < j
    pair_of: IntArray  # (n, n) -> pair index (-1 on the diagonal)
    triples: IntArray  # (T, 3), i < j < k
    triple_of: IntArray  # (n, n, n) -> triple index

    @property
    def n(self) -> int:
        return len(self.cards)


@lru_cache(maxsize=8)
def _deck(cards: tuple[Card, ...]) -> _Deck:
    n = len(cards)
    pairs = np.array(list(combinations(range(n), 2)), dtype=np.int64).reshape(-1, 2)
    pair_of = np.full((n, n), -1, dtype=np.int64)
    pair_of[pairs[:, 0], pairs[:, 1]] = np.arange(len(pairs))
    pair_of[pairs[:, 1], pairs[:, 0]] = np.arange(len(pairs))
    triples = np.array(list(combinations(range(n), 3)), dtype=np.int64).reshape(-1, 3)
    triple_of = np.full((n, n, n), -1, dtype=np.int64)
    index = np.arange(len(triples))
    a, b, d = triples[:, 0], triples[:, 1], triples[:, 2]
    for x, y, z in ((a, b, d), (a, d, b), (b, a, d), (b, d, a), (d, a, b), (d, b, a)):
        triple_of[x, y, z] = index
    return _Deck(cards, pairs, pair_of, triples, triple_of)


class _Classes:
    """Hands that settle alike share a class: same kind, taem, deng, label, multiplier and key."""

    def __init__(self) -> None:
        self.index: dict[tuple[object, ...], int] = {}
        self.values: list[HandValue] = []

    def of(self, value: HandValue) -> int:
        signature = (
            value.kind,
            value.taem,
            value.deng,
            value.label,
            value.multiplier,
            value.key,
            value.special,
            value.value,
        )
        found = self.index.get(signature)
        if found is None:
            found = self.index[signature] = len(self.values)
            self.values.append(value)
        return found

    def __len__(self) -> int:
        return len(self.values)


@dataclass(frozen=True)
class _Hands:
    """Every two-card hand and every three-card path of a deck, classified under a profile."""

    deck: _Deck
    classes: _Classes
    pair_class: IntArray  # (P,)
    pair_taem: IntArray  # (P,)
    pair_pok: npt.NDArray[np.bool_]  # (P,)
    path_pair: IntArray  # (Q,): the two dealt cards of each three-card path
    path_cards: IntArray  # (Q, 3): dealt, dealt, drawn
    path_class: IntArray  # (Q,)


@lru_cache(maxsize=16)
def _hands(profile: Profile, cards: tuple[Card, ...]) -> _Hands:
    deck = _deck(cards)
    classes = _Classes()
    pair_class = np.array([classes.of(evaluate(profile, (cards[i], cards[j]))) for i, j in deck.pairs], dtype=np.int64)
    triple_class = np.array(
        [classes.of(evaluate(profile, (cards[i], cards[j], cards[k]))) for i, j, k in deck.triples], dtype=np.int64
    )
    points = np.array([card.points for card in cards], dtype=np.int64)
    pair_taem = (points[deck.pairs[:, 0]] + points[deck.pairs[:, 1]]) % 10
    n = deck.n
    grid_pair = np.repeat(np.arange(len(deck.pairs)), n)
    grid_k = np.tile(np.arange(n), len(deck.pairs))
    i, j = deck.pairs[grid_pair, 0], deck.pairs[grid_pair, 1]
    keep = (grid_k != i) & (grid_k != j)
    path_pair = grid_pair[keep]
    path_cards = np.stack([i[keep], j[keep], grid_k[keep]], axis=1)
    path_class = triple_class[deck.triple_of[path_cards[:, 0], path_cards[:, 1], path_cards[:, 2]]]
    return _Hands(deck, classes, pair_class, pair_taem, pair_taem >= 8, path_pair, path_cards, path_class)


@dataclass(frozen=True)
class _PathSet:
    """A set of paths (all of two cards, or all of three) with an owner id each (a row or a class)."""

    cards: IntArray  # (m, 2) or (m, 3)
    owner: IntArray  # (m,)


def _subsets(deck: _Deck, paths: _PathSet, k: int) -> tuple[IntArray, IntArray]:
    """(owner, k-card subset index) for every k-card subset of every path."""
    width = paths.cards.shape[1]
    if k > width:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    owners: list[IntArray] = []
    subsets: list[IntArray] = []
    for combo in combinations(range(width), k):
        cols = [paths.cards[:, x] for x in combo]
        if k == 0:
            subsets.append(np.zeros(len(paths.owner), dtype=np.int64))
        elif k == 1:
            subsets.append(cols[0])
        elif k == 2:
            subsets.append(deck.pair_of[cols[0], cols[1]])
        else:
            subsets.append(deck.triple_of[cols[0], cols[1], cols[2]])
        owners.append(paths.owner)
    return np.concatenate(owners), np.concatenate(subsets)


def _subset_count(deck: _Deck, k: int) -> int:
    return (1, deck.n, len(deck.pairs), len(deck.triples))[k]


def _containing(deck: _Deck, paths: _PathSet, k: int, owners: int) -> FloatArray:
    """H[T, owner] = the number of paths of ``owner`` that contain the k-card set T."""
    size = _subset_count(deck, k)
    owner, subset = _subsets(deck, paths, k)
    counts = np.bincount(subset * owners + owner, minlength=size * owners)
    return counts.astype(np.float64).reshape(size, owners)


def _disjoint_pairs(deck: _Deck, player: _PathSet, rows: int, banker: _PathSet, classes: int) -> IntArray:
    """N[row, class]: pairs of a player path of ``row`` and a banker path of ``class`` with no common card."""
    total = np.zeros((rows, classes), dtype=np.float64)
    depth = min(player.cards.shape[1], banker.cards.shape[1])
    for k in range(depth + 1):
        h = _containing(deck, banker, k, classes)
        size = _subset_count(deck, k)
        owner, subset = _subsets(deck, player, k)
        if k < 3:
            g = np.bincount(owner * size + subset, minlength=rows * size).astype(np.float64).reshape(rows, size)
            term = g @ h
        else:  # G_3 is very sparse: add each player path's row of H_3 to its row
            term = np.zeros((rows, classes), dtype=np.float64)
            np.add.at(term, owner, h[subset])
        total += term if k % 2 == 0 else -term
    # Every partial sum above is an integer below 2**53, so float64 was exact; prove it.
    if not (np.all(np.abs(total) < _FLOAT_EXACT) and np.array_equal(total, np.rint(total)) and np.all(total >= 0)):
        raise ArithmeticError("path counts left the exact range of float64")
    return np.rint(total).astype(np.int64)


@dataclass(frozen=True)
class _Counts:
    """Path-pair counts of one profile, deck and banker strategy, for every player choice.

    Player rows are (two-card total, action, final class); ``vs_*`` hold N[row, banker class]
    against the banker's pok hands, its standing hands and its drawing paths.
    """

    hands: _Hands
    row_total: IntArray
    row_action: IntArray  # 0 stand, 1 draw
    row_class: IntArray
    vs_pok: IntArray
    vs_stand: IntArray
    vs_draw: IntArray

    @property
    def unseen(self) -> int:
        return self.hands.deck.n - 4

    def weights(self, action: int) -> tuple[int, int]:
        """The deal weights of a player row with ``action`` against a standing and a drawing banker."""
        m = self.unseen
        return (m * (m - 1), m - 1) if action == 0 else (m - 1, 1)


@lru_cache(maxsize=32)
def _counts(profile: Profile, cards: tuple[Card, ...], banker_draws: frozenset[int]) -> _Counts:
    hands = _hands(profile, cards)
    deck = hands.deck
    ncls = len(hands.classes)
    banker_strategy = Strategy("banker", banker_draws=banker_draws)
    banker_draw_total = np.array([banker_strategy.banker_action(profile, t) == "draw" for t in range(10)])

    # banker paths by class
    pok = hands.pair_pok
    stand = ~pok & ~banker_draw_total[hands.pair_taem]
    draw_paths = banker_draw_total[hands.pair_taem[hands.path_pair]] & ~pok[hands.path_pair]
    banker_pok = _PathSet(deck.pairs[pok], hands.pair_class[pok])
    banker_stand = _PathSet(deck.pairs[stand], hands.pair_class[stand])
    banker_draw = _PathSet(hands.path_cards[draw_paths], hands.path_class[draw_paths])

    # player rows: stand on two cards (every hand), draw from every hand that is not a pok
    stand_key = (hands.pair_taem * 2) * ncls + hands.pair_class
    player_draw = ~pok[hands.path_pair]
    draw_key = (hands.pair_taem[hands.path_pair[player_draw]] * 2 + 1) * ncls + hands.path_class[player_draw]
    keys, inverse = np.unique(np.concatenate([stand_key, draw_key]), return_inverse=True)
    rows = len(keys)
    player_stand = _PathSet(deck.pairs, inverse[: len(stand_key)])
    player_drawn = _PathSet(hands.path_cards[player_draw], inverse[len(stand_key) :])

    def against(banker: _PathSet) -> IntArray:
        return _disjoint_pairs(deck, player_stand, rows, banker, ncls) + _disjoint_pairs(
            deck, player_drawn, rows, banker, ncls
        )

    vs_pok = _disjoint_pairs(deck, player_stand, rows, banker_pok, ncls)
    return _Counts(
        hands,
        row_total=keys // ncls // 2,
        row_action=keys // ncls % 2,
        row_class=keys % ncls,
        vs_pok=vs_pok,
        vs_stand=against(banker_stand),
        vs_draw=against(banker_draw),
    )


def _deals(n: int) -> int:
    return math.comb(n, 2) * math.comb(n - 2, 2) * (n - 4) * (n - 5)


def _class_counts(counts: _Counts, rows: npt.NDArray[np.bool_], with_pok: bool) -> IntArray:
    """Weighted deal counts by (player final class, banker final class) for the selected rows."""
    ncls = len(counts.hands.classes)
    out = np.zeros((ncls, ncls), dtype=np.int64)
    for action in (0, 1):
        sel = rows & (counts.row_action == action)
        w_stand, w_draw = counts.weights(action)
        block = w_stand * counts.vs_stand[sel] + w_draw * counts.vs_draw[sel]
        np.add.at(out, counts.row_class[sel], block)
    if with_pok:
        m = counts.unseen
        stand_rows = counts.row_action == 0
        np.add.at(out, counts.row_class[stand_rows], m * (m - 1) * counts.vs_pok[stand_rows])
    return out


def _strategy_rows(counts: _Counts, profile: Profile, strategy: Strategy) -> npt.NDArray[np.bool_]:
    wanted = np.array([1 if strategy.player_action(profile, t) == "draw" else 0 for t in range(10)])
    return np.asarray(counts.row_action == wanted[counts.row_total], dtype=np.bool_)


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
    counts = _counts(profile, cards, banker_draws)
    classes = counts.hands.classes
    used = _class_counts(counts, np.ones(len(counts.row_total), dtype=np.bool_), with_pok=True) > 0
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


def _sum(counts: IntArray, values: IntArray) -> int:
    """Exact sum of counts * values (Python integers: no overflow)."""
    total = 0
    for value in np.unique(values):
        total += int(value) * int(counts[values == value].sum())
    return total


def _hand_types(
    classes: _Classes, per_class: Iterable[tuple[int, int]], total: int
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


def _nets(counts: IntArray, net: IntArray, stake: int, total: int) -> tuple[tuple[Fraction, Fraction], ...]:
    out = []
    for value in np.unique(net[counts > 0]):
        out.append((Fraction(int(value), stake), Fraction(int(counts[net == value].sum()), total)))
    return tuple(out)


def _exact_draw_game(profile: Profile, strategy: Strategy, stake: int | None, cards: tuple[Card, ...]) -> RtpResult:
    counts = _counts(profile, cards, strategy.banker_draws)
    classes = counts.hands.classes
    deals = _deals(len(cards))
    by_class = _class_counts(counts, _strategy_rows(counts, profile, strategy), with_pok=True)
    if int(by_class.sum()) != deals:
        raise ArithmeticError(f"the counts cover {int(by_class.sum())} deals, not {deals}")
    money = _money(profile, cards, strategy.banker_draws, stake)
    s = money.stake
    expected = Fraction(_sum(by_class, money.net), deals * s)
    second = Fraction(_sum(by_class, money.net * money.net), deals * s * s)
    decisions = _decisions(counts, profile, strategy, money)
    commission = None
    if profile.player_commission != "0" or profile.banker_commission != "0":
        commission = CommissionMath(
            profile.player_commission_rate,
            profile.banker_commission_rate,
            Fraction(_sum(by_class, money.player_commission), deals * s),
            Fraction(_sum(by_class, money.banker_commission), deals * s),
            1 + Fraction(_sum(by_class, money.gross_net), deals * s),
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
        nets=_nets(by_class, money.net, s, deals),
        decisions=decisions,
        side_bet=_side_bet(profile, cards) if profile.side_bet is not None else None,
        commission=commission,
    )


def _decisions(counts: _Counts, profile: Profile, strategy: Strategy, money: _Money) -> tuple[Decision, ...]:
    rule = profile.player_draw
    if rule is None:
        return ()
    deals = _deals(counts.hands.deck.n)
    out = []
    for total in range(8):
        evs: dict[int, Fraction] = {}
        masses: set[int] = set()
        for action in (0, 1):
            rows = (counts.row_total == total) & (counts.row_action == action)
            block = _class_counts(counts, rows, with_pok=False)
            mass = int(block.sum())
            masses.add(mass)
            evs[action] = Fraction(_sum(block, money.net), mass * money.stake) if mass else Fraction(0)
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
def _best_strategy(profile: Profile, cards: tuple[Card, ...] | None = None) -> Strategy:
    reference = reference_strategy(profile)
    if profile.player_draw is None:
        return Strategy("best", reference.player_draws, reference.banker_draws)
    deck = cards if cards is not None else canonical_deck(1)
    result = _exact_draw_game(profile, reference, None, deck)
    choice = set(_choice_totals(profile.player_draw))
    draws = frozenset(d.total for d in result.decisions if d.total in choice and d.ev_draw > d.ev_stand)
    return Strategy("best", draws, reference.banker_draws)


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


# ---------------------------------------------------------------------------------------
# ante: eight decks, two cards each, by card type with multiplicities


def _exact_ante(profile: Profile, stake: int | None, strategy_name: str) -> RtpResult:
    """Ante has no decisions: every strategy is the same (``strategy_name`` only labels the result)."""
    types = canonical_deck(1)
    copies = profile.decks
    shoe = copies * len(types)
    classes = _Classes()
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
    if by_class_f.max() >= _FLOAT_EXACT or int(by_class_f.sum()) != deals:
        raise ArithmeticError("ante counts are not exact")
    by_class = np.rint(by_class_f).astype(np.int64).reshape(ncls, ncls)
    if int(by_class.sum()) != deals:
        raise ArithmeticError(f"the ante counts cover {int(by_class.sum())} deals, not {deals}")

    at = stake if stake is not None else EXACT_STAKE
    half = at // 2
    ante_net = np.zeros((ncls, ncls), dtype=np.int64)
    bet_net = np.zeros((ncls, ncls), dtype=np.int64)
    outcome = np.zeros((ncls, ncls), dtype=np.int64)
    code = {Outcome.PLAYER_WINS: 1, Outcome.TIE: 0, Outcome.BANKER_WINS: -1}
    for i in range(ncls):
        for j in range(ncls):
            r = settle_values(profile, classes.values[i], classes.values[j], at)
            assert r.ante_net is not None and r.bet_net is not None
            ante_net[i, j], bet_net[i, j], outcome[i, j] = r.ante_net, r.bet_net, code[r.outcome]
    net = ante_net + bet_net
    expected = Fraction(_sum(by_class, net), deals * at)
    second_moment = Fraction(_sum(by_class, net * net), deals * at * at)
    per_class = by_class.sum(axis=1).tolist()
    hand_types: dict[str, int] = {}
    for k, count in enumerate(per_class):
        name = _ante_type(classes.values[k])
        hand_types[name] = hand_types.get(name, 0) + count
    order = {_ante_type(v): v.value for v in classes.values}
    ante = AnteMath(
        ante_ev=Fraction(_sum(by_class, ante_net), deals * half),
        bet_ev=Fraction(_sum(by_class, bet_net), deals * half),
        edge_per_ante=-Fraction(_sum(by_class, net), deals * half),
        bet_won=Fraction(int(by_class[bet_net > 0].sum()), deals),
        bet_push=Fraction(int(by_class[bet_net == 0].sum()), deals),
        bet_lost=Fraction(int(by_class[bet_net < 0].sum()), deals),
    )
    strategy = Strategy(strategy_name)
    return RtpResult(
        profile=profile.key,
        strategy=strategy,
        strategy_text="no decisions (two cards each)",
        method=f"complete enumeration of ordered card types ({t} types x {copies} copies, drawn without replacement)",
        stake=stake,
        deals=deals,
        rtp=1 + expected,
        win=Fraction(int(by_class[outcome == 1].sum()), deals),
        tie=Fraction(int(by_class[outcome == 0].sum()), deals),
        loss=Fraction(int(by_class[outcome == -1].sum()), deals),
        variance=second_moment - expected * expected,
        hand_types=tuple(
            (name, Fraction(hand_types[name], deals))
            for name in sorted(hand_types, key=order.__getitem__, reverse=True)
        ),
        nets=_nets(by_class, net, at, deals),
        ante=ante,
    )


def _ante_type(value: HandValue) -> str:
    if 71 <= value.value <= 75:
        return value.label
    points = value.value // 10
    return f"{points} special" if value.special else f"{points} plain"


# ---------------------------------------------------------------------------------------
# Monte Carlo through the round state machine


@dataclass(frozen=True, slots=True)
class Estimate:
    """A simulated figure with its 95% confidence interval and standard error."""

    value: float
    low: float
    high: float
    se: float

    def contains(self, x: float, sigmas: float = _Z95) -> bool:
        return abs(x - self.value) <= sigmas * self.se

    def to_dict(self) -> dict[str, float]:
        return {"value": self.value, "low": self.low, "high": self.high, "se": self.se}


@dataclass(frozen=True, slots=True)
class SimulationResult:
    profile: str
    strategy: Strategy
    strategy_text: str
    rounds: int
    seed: str
    stake: int
    rtp: Estimate
    win: Estimate
    tie: Estimate
    loss: Estimate
    sd: float
    hand_types: tuple[tuple[str, Estimate], ...]
    side_bets: int = 0
    side_bet_rtp: Estimate | None = None

    @property
    def house_edge(self) -> Estimate:
        r = self.rtp
        return Estimate(1 - r.value, 1 - r.high, 1 - r.low, r.se)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "profile": self.profile,
            "strategy": self.strategy.name,
            "strategy_text": self.strategy_text,
            "rounds": self.rounds,
            "seed": self.seed,
            "stake": self.stake,
            "rtp": self.rtp.to_dict(),
            "house_edge": self.house_edge.to_dict(),
            "win": self.win.to_dict(),
            "tie": self.tie.to_dict(),
            "loss": self.loss.to_dict(),
            "sd": self.sd,
            "hand_types": {name: est.to_dict() for name, est in self.hand_types},
        }
        if self.side_bet_rtp is not None:
            out["side_bets"] = self.side_bets
            out["side_bet_rtp"] = self.side_bet_rtp.to_dict()
        return out


def round_server_seed(seed: str | int, index: int) -> bytes:
    """The server seed of simulated round ``index``: sha256(seed || index as 8 bytes, big-endian)."""
    return hashlib.sha256(str(seed).encode("utf-8") + index.to_bytes(8, "big")).digest()


@dataclass(frozen=True, slots=True)
class Played:
    net: int
    outcome: str
    hand: str
    side_net: int | None


_PLAYER = "player"
_PLAYER_BANKER = "banker"


def play_round(profile: Profile, strategy: Strategy, server_seed: bytes, seed: str, nonce: int, stake: int) -> Played:
    """One whole round through the state machine: one stake on seat 1, a side bet whenever offered."""
    banker = None if BankerKind.HOUSE in profile.banker else _PLAYER_BANKER
    if profile.fixed_positions is not None:
        seats: tuple[tuple[int, str | None], ...] = tuple((p, None) for p in range(1, profile.fixed_positions + 1))
    else:
        seats = ((1, _PLAYER),)
    funds = 10 * stake * profile.reserve_multiple
    state = RoundState()
    history: list[e.RoundEvent] = []

    def run(command: c.RoundCommand) -> None:
        nonlocal state
        events, state = decide_and_fold(state, command)  # the state decide folded its events into
        history.extend(events)

    run(
        c.OpenRound(
            f"sim-{nonce}",
            "sim",
            nonce + 1,
            profile,
            seats,
            banker,
            2 if profile.wager_split else 1,  # (ante limits are even)
            stake,
            commitment(server_seed),
            f"sim:{seed}",
            nonce,
            SHUFFLE_ALGORITHM,
        )
    )
    state = attach_shoe(state, server_seed)
    run(c.PlaceBet(1, _PLAYER, stake, funds, funds if banker else None))
    run(c.Deal())
    side_placed = False
    for _ in range(16):
        if state.is_closed:
            break
        if state.phase is Phase.SIDE_BETS:
            if not side_placed:
                side_placed = True
                run(c.PlaceSideBet(1, _PLAYER, funds))
            else:
                run(c.CloseSideBets())
        elif state.turn == 1:
            draw = strategy.player_action(profile, _taem(state.cards(1))) == "draw"
            run(c.Draw(1, _PLAYER) if draw else c.Stay(1, _PLAYER))
        elif state.phase is Phase.BANKER_TURN:
            draw = strategy.banker_action(profile, _taem(state.cards(BANKER))) == "draw"
            run(c.BankerDraw(banker) if draw else c.BankerStay(banker))
        else:
            raise RuntimeError(f"the round is stuck in {state.phase.value}")
    if not state.is_closed:
        raise RuntimeError("the round did not close")
    settled = [ev for ev in history if isinstance(ev, e.BetSettled) and ev.seat == 1]
    sides = [ev for ev in history if isinstance(ev, e.SideBetsSettled)]
    side_net = sides[0].results[0][3] if sides and sides[0].results else None
    bet = settled[0]
    hand = bet.hand
    if profile.comparison is Comparison.ANTE:
        hand = _ante_type(evaluate(profile, state.cards(1)))
    return Played(bet.net, bet.outcome, hand, side_net)


def _taem(cards: Sequence[Card]) -> int:
    return sum(card.points for card in cards) % 10


def _mean_estimate(total: int, total_sq: int, n: int, scale: int) -> tuple[Estimate, float]:
    mean = Fraction(total, n * scale)
    var = Fraction(total_sq, n * scale * scale) - mean * mean
    if n > 1:
        var = var * n / (n - 1)
    sd = math.sqrt(max(var, Fraction(0)))
    se = sd / math.sqrt(n)
    value = float(mean)
    return Estimate(value, value - _Z95 * se, value + _Z95 * se, se), sd


def _proportion(hits: int, n: int) -> Estimate:
    """Wilson score interval; ``se`` is the binomial standard error at the observed proportion."""
    p = hits / n
    z2 = _Z95 * _Z95
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = _Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return Estimate(p, max(0.0, centre - half), min(1.0, centre + half), math.sqrt(p * (1 - p) / n))


def simulate(
    profile: str | Profile,
    rounds: int,
    seed: str | int,
    strategy: StrategyLike = "reference",
    *,
    stake: int = EXACT_STAKE,
    progress: Callable[[int], None] | None = None,
) -> SimulationResult:
    """Play ``rounds`` whole rounds through the state machine and estimate the exact figures.

    Round ``i`` is shuffled from server seed ``round_server_seed(seed, i)``, client seed
    ``"sim:<seed>"`` and nonce ``i``: the same arguments give the same result. One player
    stakes ``stake`` on seat 1 (ante: on position 1) and plays ``strategy``; under kingmaker
    it also places a side bet whenever offered (reported on its own). ``progress(done)`` is
    called every 1% of the rounds.
    """
    rules = get_profile(profile)
    if rounds < 2:
        raise ValueError("simulate at least two rounds")
    chosen = resolve_strategy(rules, strategy)
    total = total_sq = 0
    outcomes = {"player_wins": 0, "tie": 0, "banker_wins": 0}
    hands: dict[str, int] = {}
    side_total = side_sq = sides = 0
    step = max(1, rounds // 100)
    seed_text = str(seed)
    for i in range(rounds):
        played = play_round(rules, chosen, round_server_seed(seed_text, i), seed_text, i, stake)
        total += played.net
        total_sq += played.net * played.net
        outcomes[played.outcome] += 1
        hands[played.hand] = hands.get(played.hand, 0) + 1
        if played.side_net is not None:
            sides += 1
            side_total += played.side_net
            side_sq += played.side_net * played.side_net
        if progress is not None and ((i + 1) % step == 0 or i + 1 == rounds):
            progress(i + 1)
    mean, sd = _mean_estimate(total, total_sq, rounds, stake)
    rtp = Estimate(1 + mean.value, 1 + mean.low, 1 + mean.high, mean.se)
    side_rtp = None
    if sides >= 2:
        side_mean, _ = _mean_estimate(side_total, side_sq, sides, stake)
        side_rtp = Estimate(1 + side_mean.value, 1 + side_mean.low, 1 + side_mean.high, side_mean.se)
    order = _hand_order(rules)
    return SimulationResult(
        profile=rules.key,
        strategy=chosen,
        strategy_text=chosen.describe(rules),
        rounds=rounds,
        seed=seed_text,
        stake=stake,
        rtp=rtp,
        win=_proportion(outcomes["player_wins"], rounds),
        tie=_proportion(outcomes["tie"], rounds),
        loss=_proportion(outcomes["banker_wins"], rounds),
        sd=sd,
        hand_types=tuple(
            (name, _proportion(hands[name], rounds)) for name in sorted(hands, key=lambda h: order.get(h, len(order)))
        ),
        side_bets=sides,
        side_bet_rtp=side_rtp,
    )


def _hand_order(profile: Profile) -> dict[str, int]:
    """Hand-type names best first, as the exact tables list them."""
    names = [
        "pok deng",
        "pok",
        "tong",
        "straight flush",
        "straight",
        "sam lueang",
        "sam deng",
        "song deng",
        "normal",
        "taem",
    ]
    if profile.comparison is Comparison.ANTE:
        names = ["9 special", "9 plain", "8 special", "8 plain", "AK flush", "special pair"]
        names += ["face-card combination", "10 and face card", "zero flush"]
        names += [f"{p} {kind}" for p in range(7, -1, -1) for kind in ("special", "plain")]
    return {name: i for i, name in enumerate(names)}
