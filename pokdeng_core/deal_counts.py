"""Counting deals exactly: every hand of a single-deck draw game classified, and the deals of each pair of
final hands (player, banker) counted in integers, for every player choice against a banker strategy.

A "path" is a hand's final card set together with how it got there: its two dealt cards,
and the drawn card if it drew. Every deal is a sequence of distinct cards, all equally
likely; grouping them by (player path, banker path) with the right number of unseen
cards gives integer counts whose total is
    deals = C(n, 2) * C(n - 2, 2) * (n - 4) * (n - 5)
(the player's two cards, the banker's two, and the next two cards of the shoe).
Weights, with m = n - 4 unseen cards after the deal:
    banker pok, or both stand: m (m - 1); exactly one draws: m - 1; both draw: 1.

Disjointness by inclusion-exclusion: the number of (player path, banker path) pairs
with no card in common is sum over k of (-1)^k sum over k-card sets T of
G_k[player row, T] * H_k[T, banker class], where G_k / H_k count the paths containing T.
k runs to 3, so each product is a matrix product over 1, n, C(n,2) or C(n,3) columns.

Also the exact sums the figures are made of (``exact_sum``, ``net_law``), shared with the ante's
enumeration (``ante_math``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from itertools import combinations

import numpy as np
import numpy.typing as npt

from .cards import Card
from .evaluation import HandValue, evaluate
from .profiles import Profile
from .strategies import Strategy

IntArray = npt.NDArray[np.int64]


FloatArray = npt.NDArray[np.float64]


EXACT_STAKE = 2_000_000
"""The stake at which every profile's money is exact (0.95 x, 3% of 1 x .. 5 x, an even ante wager).
``exact`` checks it: every net at twice this stake is exactly twice the net at this stake."""


FLOAT_EXACT = 2**53  # float64 holds every integer below this exactly


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


class HandClasses:
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
    classes: HandClasses
    pair_class: IntArray  # (P,)
    pair_taem: IntArray  # (P,)
    pair_pok: npt.NDArray[np.bool_]  # (P,)
    path_pair: IntArray  # (Q,): the two dealt cards of each three-card path
    path_cards: IntArray  # (Q, 3): dealt, dealt, drawn
    path_class: IntArray  # (Q,)


@lru_cache(maxsize=16)
def _hands(profile: Profile, cards: tuple[Card, ...]) -> _Hands:
    deck = _deck(cards)
    classes = HandClasses()
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
    if not (np.all(np.abs(total) < FLOAT_EXACT) and np.array_equal(total, np.rint(total)) and np.all(total >= 0)):
        raise ArithmeticError("path counts left the exact range of float64")
    return np.rint(total).astype(np.int64)


@dataclass(frozen=True)
class PathCounts:
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
def path_counts(profile: Profile, cards: tuple[Card, ...], banker_draws: frozenset[int]) -> PathCounts:
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
    return PathCounts(
        hands,
        row_total=keys // ncls // 2,
        row_action=keys // ncls % 2,
        row_class=keys % ncls,
        vs_pok=vs_pok,
        vs_stand=against(banker_stand),
        vs_draw=against(banker_draw),
    )


def deal_count(n: int) -> int:
    return math.comb(n, 2) * math.comb(n - 2, 2) * (n - 4) * (n - 5)


def class_counts(counts: PathCounts, rows: npt.NDArray[np.bool_], with_pok: bool) -> IntArray:
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


def strategy_rows(counts: PathCounts, profile: Profile, strategy: Strategy) -> npt.NDArray[np.bool_]:
    wanted = np.array([1 if strategy.player_action(profile, t) == "draw" else 0 for t in range(10)])
    return np.asarray(counts.row_action == wanted[counts.row_total], dtype=np.bool_)


def exact_sum(counts: IntArray, values: IntArray) -> int:
    """Exact sum of counts * values (Python integers: no overflow)."""
    total = 0
    for value in np.unique(values):
        total += int(value) * int(counts[values == value].sum())
    return total


def net_law(counts: IntArray, net: IntArray, stake: int, total: int) -> tuple[tuple[Fraction, Fraction], ...]:
    out = []
    for value in np.unique(net[counts > 0]):
        out.append((Fraction(int(value), stake), Fraction(int(counts[net == value].sum()), total)))
    return tuple(out)
