"""What the RNG report counts over a run of shoes, and the run itself over processes.

Each shoe is its order as card types: the canonical index mod 52 (docs/shuffle.md section 1: type ``t``
is suit ``"SHCD"[t // 13]``, rank ``t % 13``; an eight-deck shoe holds eight cards of each type). Counted:

* ``positions[t, p]``: shoes whose position ``p`` (0 = first card dealt) holds type ``t``;
* ``player_hands[a, b]`` / ``banker_hands[a, b]``: shoes whose cards at positions 0 and 2 / 1 and 3 (the
  two-card hands of one player and the banker, dealt one card at a time: docs/rules.md section 5) are
  of types ``a`` and ``b``, in dealing order;
* ``first_pairs[a, b]``: pairs of consecutive shoes ``(2j, 2j + 1)`` whose first cards are ``a``, ``b``;
* ``matches[m]``: pairs ``(2j, 2j + 1)`` whose shoes hold the same type at exactly ``m`` positions;
* ``colour_runs[r]``: shoes whose colour sequence (red: hearts, diamonds) has exactly ``r`` runs;
* ``first_types[i]``: the first card's type of shoe ``i``, in shoe order;
* ``rejected``: shoes whose shuffle rejected a word (docs/shuffle.md section 5).
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from pokdeng_service.certification import schedule
from pokdeng_service.certification.fastshuffle import OrderMatrix, order_matrix

__all__ = ("Shuffler", "Tallies", "count_orders", "run_shoes", "scheduled_orders")

Counts = npt.NDArray[np.int64]
Shuffler = Callable[[str, int, int, int, list[int]], OrderMatrix]
"""``(report_seed, decks, start, count, rejected) -> orders``: shoes ``start .. start + count - 1``."""

TYPES = 52
RED = np.array([t // 13 in (1, 3) for t in range(TYPES)], dtype=np.int8)  # H and D of "SHCD"


@dataclass
class Tallies:
    decks: int
    shoes: int = 0
    positions: Counts = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    player_hands: Counts = field(default_factory=lambda: np.zeros((TYPES, TYPES), dtype=np.int64))
    banker_hands: Counts = field(default_factory=lambda: np.zeros((TYPES, TYPES), dtype=np.int64))
    first_pairs: Counts = field(default_factory=lambda: np.zeros((TYPES, TYPES), dtype=np.int64))
    matches: Counts = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    colour_runs: Counts = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    first_types: npt.NDArray[np.uint8] = field(default_factory=lambda: np.zeros(0, dtype=np.uint8))
    rejected: list[int] = field(default_factory=list)
    start: int = 0

    def __post_init__(self) -> None:
        size = 52 * self.decks
        if self.positions.size == 0:
            self.positions = np.zeros((TYPES, size), dtype=np.int64)
        if self.matches.size == 0:
            self.matches = np.zeros(size + 1, dtype=np.int64)
        if self.colour_runs.size == 0:
            self.colour_runs = np.zeros(size + 1, dtype=np.int64)

    @property
    def size(self) -> int:
        return 52 * self.decks

    def add(self, other: Tallies) -> None:
        """Add the tallies of the shoes that follow these (``other.start == self.start + self.shoes``)."""
        if other.decks != self.decks or other.start != self.start + self.shoes:
            raise ValueError("tallies are added in shoe order, of one deck count")
        if self.shoes % 2:
            raise ValueError("a run's pieces hold whole pairs of shoes")
        self.shoes += other.shoes
        self.positions += other.positions
        self.player_hands += other.player_hands
        self.banker_hands += other.banker_hands
        self.first_pairs += other.first_pairs
        self.matches += other.matches
        self.colour_runs += other.colour_runs
        self.first_types = np.concatenate([self.first_types, other.first_types])
        self.rejected += other.rejected


def count_orders(orders: OrderMatrix, decks: int, start: int = 0) -> Tallies:
    """The tallies of shoes given as an order matrix (``fastshuffle.order_matrix``: one column per shoe)."""
    size, shoes = orders.shape
    if size != 52 * decks:
        raise ValueError(f"{size} cards is not a {decks}-deck shoe")
    types = (orders % TYPES).astype(np.intp)  # (positions, shoes)
    rows = np.arange(size, dtype=np.intp)[:, None]
    out = Tallies(decks, shoes, start=start)
    out.positions = np.bincount((types * size + rows).ravel(), minlength=TYPES * size).reshape(TYPES, size)
    out.player_hands = _pairs(types[0], types[2])
    out.banker_hands = _pairs(types[1], types[3])
    even, odd = types[:, 0 : shoes - shoes % 2 : 2], types[:, 1::2]
    out.first_pairs = _pairs(even[0], odd[0])
    out.matches = np.bincount((even == odd).sum(axis=0), minlength=size + 1)
    colours = RED[types]
    runs = 1 + (colours[1:] != colours[:-1]).sum(axis=0)
    out.colour_runs = np.bincount(runs, minlength=size + 1)
    out.first_types = types[0].astype(np.uint8)
    return out


def _pairs(a: npt.NDArray[np.intp], b: npt.NDArray[np.intp]) -> Counts:
    return np.bincount(a * TYPES + b, minlength=TYPES * TYPES).reshape(TYPES, TYPES).astype(np.int64)


def scheduled_orders(report_seed: str, decks: int, start: int, count: int, rejected: list[int]) -> OrderMatrix:
    """Shoes ``start .. start + count - 1`` of the seed schedule (``schedule``), by the fast shuffle."""
    seeds = schedule.server_seeds(report_seed, start, count)
    found: list[int] = []
    orders = order_matrix(seeds, schedule.client_seed(decks), range(start, start + count), decks, found)
    rejected.extend(start + k for k in found)
    return orders


def batch_size(decks: int) -> int:
    """Shoes shuffled at once: about 1 MB of orders (an even number)."""
    return max(2, (1 << 19) // (52 * decks) // 2 * 2)


def tally_range(report_seed: str, decks: int, start: int, count: int, shuffler: Shuffler = scheduled_orders) -> Tallies:
    """The tallies of shoes ``start .. start + count - 1`` (``start`` and ``count`` even, but for the last)."""
    total = Tallies(decks, start=start)
    step = batch_size(decks)
    for first in range(start, start + count, step):
        n = min(step, start + count - first)
        rejected: list[int] = []
        part = count_orders(shuffler(report_seed, decks, first, n, rejected), decks, first)
        part.rejected = rejected
        total.add(part)
    return total


def _chunks(shoes: int, chunk: int) -> Iterator[tuple[int, int]]:
    for start in range(0, shoes, chunk):
        yield start, min(chunk, shoes - start)


def run_shoes(
    report_seed: str,
    decks: int,
    shoes: int,
    *,
    workers: int = 1,
    shuffler: Shuffler = scheduled_orders,
    progress: Callable[[int], None] | None = None,
) -> Tallies:
    """Tally shoes ``0 .. shoes - 1`` of the schedule, over ``workers`` processes (1: in this one).

    The pieces are added in shoe order, so the result does not depend on ``workers``. ``progress(done)``
    is called as pieces finish. ``shuffler`` (tests: a planted defect) must be a module-level function
    when ``workers > 1``.
    """
    if shoes < 2:
        raise ValueError("at least two shoes")
    chunk = min(batch_size(decks) * 4, -(-shoes // (4 * max(1, workers))))  # at least 4 pieces a process
    chunk += chunk % 2
    pieces: dict[int, Tallies] = {}
    done = 0
    if workers <= 1:
        for start, count in _chunks(shoes, chunk):
            pieces[start] = tally_range(report_seed, decks, start, count, shuffler)
            done += count
            if progress is not None:
                progress(done)
    else:
        context = multiprocessing.get_context("spawn")  # (no fork of a process that may hold threads)
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            futures = {
                pool.submit(tally_range, report_seed, decks, start, count, shuffler): count
                for start, count in _chunks(shoes, chunk)
            }
            for future in as_completed(futures):
                piece = future.result()
                pieces[piece.start] = piece
                done += futures[future]
                if progress is not None:
                    progress(done)
    total = Tallies(decks)
    for start in sorted(pieces):
        total.add(pieces[start])
    return total
