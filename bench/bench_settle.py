"""Settlements per second, per profile, on random final hands (a script that prints figures, not a test).

    python bench/bench_settle.py                 # defaults: 200,000 scalar and 2,000,000 batch hands a profile
    python bench/bench_settle.py --scalar 50000 --batch 1000000 --repeat 5 --seed 1

Paths measured, on the same hands, each against a baseline measured in the same run:

* ``settle_values``: the scalar public path with hands already evaluated (``evaluate``);
* ``settle``: the scalar public path from card tuples (hand evaluation cached after warm-up);
* baseline for both: a bare dict lookup of the precomputed result for the same (player, banker, stake),
  in the same kind of Python loop -- the floor for anything called once per settlement from Python;
* ``settle_batch``: the numpy fast path (``pokdeng_core.fastsettle``) on arrays of hand ids and stakes;
* baseline for it: a bare numpy gather of the precomputed nets (``nets[index]``) of the same size.

Random final hands: single-deck profiles deal six distinct cards a round, the player's hand the first
two or three, the banker's the next two or three (each size with probability 1/2); ante deals two
cards each from an eight-deck shoe. Stakes are uniform in 1..10^12 (even for ante). The best of
``--repeat`` timings is reported; every run first checks that all paths give the same nets.
One core: nothing here is parallel.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pokdeng_core import PROFILE_NAMES, Card, Profile, canonical_deck, evaluate, get_profile, settle
from pokdeng_core.fastsettle import hand_ids, settle_batch, settle_table
from pokdeng_core.settlement import settle_values

DECK = canonical_deck()
TARGET = 1_000_000


def deal(profile: Profile, count: int, rng: np.random.Generator) -> tuple[NDArray[np.int64], ...]:
    """(player ids, banker ids, stakes, player card rows, banker card rows, player sizes, banker sizes)."""
    if profile.decks > 1:
        cards = rng.integers(0, 52, size=(count, 4))
        sizes = np.full((count, 2), 2)
        player, banker = cards[:, 0:2], cards[:, 2:4]
        player_ids, banker_ids = hand_ids(player), hand_ids(banker)
    else:
        cards = np.argsort(rng.random((count, 52)), axis=1)[:, :6]
        sizes = rng.integers(2, 4, size=(count, 2))
        player, banker = cards[:, 0:3], cards[:, 3:6]
        player_ids = np.where(sizes[:, 0] == 2, hand_ids(player[:, :2]), hand_ids(player))
        banker_ids = np.where(sizes[:, 1] == 2, hand_ids(banker[:, :2]), hand_ids(banker))
    stakes = rng.integers(1, 10**12, size=count, dtype=np.int64)
    if profile.wager_split:
        stakes = stakes * 2
    return player_ids, banker_ids, stakes, player, banker, sizes[:, 0], sizes[:, 1]


def best_rate(work: Callable[[], object], count: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return count / best


def bench_profile(profile: Profile, scalar: int, batch: int, repeat: int, seed: int) -> list[tuple[str, float, float]]:
    rng = np.random.default_rng(seed)
    player_ids, banker_ids, stakes, player_rows, banker_rows, player_sizes, banker_sizes = deal(profile, scalar, rng)
    player_cards: list[tuple[Card, ...]] = [
        tuple(DECK[i] for i in row[:n]) for row, n in zip(player_rows.tolist(), player_sizes.tolist(), strict=True)
    ]
    banker_cards: list[tuple[Card, ...]] = [
        tuple(DECK[i] for i in row[:n]) for row, n in zip(banker_rows.tolist(), banker_sizes.tolist(), strict=True)
    ]
    stake_list = stakes.tolist()
    values = [(evaluate(profile, p), evaluate(profile, b)) for p, b in zip(player_cards, banker_cards, strict=True)]
    # Precomputed results for the baseline (and the cross-check of every path).
    nets = [
        settle(profile, player=p, banker=b, stake=s).player_net
        for p, b, s in zip(player_cards, banker_cards, stake_list, strict=True)
    ]
    keys = list(zip(player_ids.tolist(), banker_ids.tolist(), stake_list, strict=True))
    lookup = dict(zip(keys, nets, strict=True))
    assert settle_batch(profile, player_ids, banker_ids, stakes).tolist() == nets
    assert [settle_values(profile, p, b, s).player_net for (p, b), s in zip(values, stake_list, strict=True)] == nets

    def run_lookup() -> None:
        get = lookup.__getitem__
        for key in keys:
            get(key)

    def run_settle_values() -> None:
        for (p, b), s in zip(values, stake_list, strict=True):
            settle_values(profile, p, b, s)

    def run_settle() -> None:
        for p, b, s in zip(player_cards, banker_cards, stake_list, strict=True):
            settle(profile, player=p, banker=b, stake=s)

    rows = []
    dict_rate = best_rate(run_lookup, scalar, repeat)
    rows.append(("dict lookup (baseline)", dict_rate, dict_rate))
    rows.append(("settle_values (scalar)", best_rate(run_settle_values, scalar, repeat), dict_rate))
    rows.append(("settle (scalar, cards)", best_rate(run_settle, scalar, repeat), dict_rate))

    # The batch path on a larger batch of fresh hands.
    player_ids, banker_ids, stakes, *_ = deal(profile, batch, rng)
    settle_table(profile)  # built once per profile (not timed)
    results = settle_batch(profile, player_ids, banker_ids, stakes)
    index = rng.permutation(batch)
    gather_rate = best_rate(lambda: results[index], batch, repeat)
    batch_rate = best_rate(lambda: settle_batch(profile, player_ids, banker_ids, stakes), batch, repeat)
    rows.append(("numpy gather (baseline)", gather_rate, dict_rate))
    rows.append(("settle_batch (numpy)", batch_rate, dict_rate))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scalar", type=int, default=200_000, help="hands a profile for the scalar paths")
    parser.add_argument("--batch", type=int, default=2_000_000, help="hands a profile for the batch path")
    parser.add_argument("--repeat", type=int, default=3, help="timings to take the best of")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--profiles", nargs="*", default=list(PROFILE_NAMES))
    args = parser.parse_args()

    print(f"Python {platform.python_version()} on {platform.machine()}, numpy {np.__version__}; one core")
    print(f"scalar paths: {args.scalar:,} hands a profile; batch: {args.batch:,}; best of {args.repeat}")
    print(f"target: {TARGET:,} settlements/s")
    print()
    header = f"{'profile':<10} {'path':<24} {'settlements/s':>15} {'vs dict lookup':>15}  target"
    print(header)
    print("-" * len(header))
    for name in args.profiles:
        profile = get_profile(name)
        for path, rate, baseline in bench_profile(profile, args.scalar, args.batch, args.repeat, args.seed):
            verdict = "" if "baseline" in path else "met" if rate >= TARGET else "not met"
            print(f"{name:<10} {path:<24} {rate:>15,.0f} {rate / baseline:>14.2f}x  {verdict}")
    print()
    print("dict lookup: a Python loop of bare dict lookups of the precomputed results for the same hands;")
    print("numpy gather: a bare numpy gather of the precomputed nets, as many as settle_batch settles.")


if __name__ == "__main__":
    main()
