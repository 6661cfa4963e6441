"""The RNG report's shuffle rate against the reference implementation, measured in the same run.

    python bench/bench_shuffle.py [--seconds 3] [--workers 2]

For one-deck and eight-deck shoes of the report's seed schedule (docs/certification.md):

* reference: ``pokdeng_core.shuffle.deck_order_indices``, shoe after shoe, in this process;
* fast: ``certification.fastshuffle.order_matrix`` (batched HMAC states, vectorised Fisher-Yates), in this
  process;
* report: ``certification.tallies.run_shoes`` (the fast shuffle and every tally of the report) over
  ``--workers`` processes, pool start included.

The reference and the fast shuffle are timed for ``--seconds`` each, back to back, ``--rounds`` times: on a
shared machine the ratio of two rates measured together is steadier than either rate, so the median of the
rounds' ratios is printed (with their range). The report is timed once, between two more measurements of
the reference. All ratios are against the reference of this same run. The fast shuffle's orders are checked against the
reference's for the shoes the reference shuffled.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pokdeng_core.shuffle import deck_order_indices
from pokdeng_service.certification import schedule
from pokdeng_service.certification.fastshuffle import order_matrix
from pokdeng_service.certification.tallies import run_shoes

SEED = "bench"


def reference_rate(decks: int, seconds: float) -> tuple[float, list[tuple[int, ...]]]:
    client = schedule.client_seed(decks)
    orders = []
    started = time.perf_counter()
    index = 0
    while True:
        orders.append(deck_order_indices(schedule.server_seed(SEED, index), client, index, decks))
        index += 1
        elapsed = time.perf_counter() - started
        if elapsed >= seconds and index >= 100:
            return index / elapsed, orders


def fast_rate(decks: int, seconds: float, check: list[tuple[int, ...]]) -> float:
    client = schedule.client_seed(decks)
    batch = max(2, (1 << 20) // (52 * decks))
    started = time.perf_counter()
    index = 0
    while True:
        seeds = schedule.server_seeds(SEED, index, batch)
        orders = order_matrix(seeds, client, range(index, index + batch), decks)
        if index == 0:
            for k, expected in enumerate(check[:batch]):
                if tuple(orders[:, k].tolist()) != expected:
                    raise SystemExit(f"fast shuffle differs from the reference at shoe {k} ({decks} decks)")
        index += batch
        elapsed = time.perf_counter() - started
        if elapsed >= seconds:
            return index / elapsed


def report_rate(decks: int, shoes: int, workers: int) -> float:
    started = time.perf_counter()
    run_shoes(SEED, decks, shoes, workers=workers)
    return shoes / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="time per slice (default 1)")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds of reference and fast (default 7)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="report processes (default: CPUs)")
    args = parser.parse_args()
    print(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    print(
        f"{'decks':>5} {'reference':>11} {'fast, 1 process':>16} {'ratio (min..max)':>22} "
        f"{'report, ' + str(args.workers) + ' processes':>24} {'ratio':>6}"
    )
    for decks in (1, 8):
        references, fasts, ratios = [], [], []
        for _ in range(args.rounds):  # each round's two rates measured back to back: their ratio shares the load
            reference, orders = reference_rate(decks, args.seconds)
            fast = fast_rate(decks, args.seconds, orders)
            references.append(reference)
            fasts.append(fast)
            ratios.append(fast / reference)
        reference, fast, ratio = (statistics.median(v) for v in (references, fasts, ratios))
        shoes = max(20_000, int(fast * args.seconds * 4 * args.workers) // 2 * 2)
        before, _ = reference_rate(decks, args.seconds)
        report = report_rate(decks, shoes, args.workers)
        after, _ = reference_rate(decks, args.seconds)
        around = (before + after) / 2
        print(
            f"{decks:>5} {reference:>9,.0f}/s {fast:>14,.0f}/s {ratio:>6.1f}x ({min(ratios):.1f}..{max(ratios):.1f})"
            f"{report:>22,.0f}/s {report / around:>5.1f}x"
        )
    print(
        "shoes per second, medians of the rounds; fast ratio = the median of each round's fast / reference;\n"
        "report ratio = against the reference measured just before and after it (processes' start included);\n"
        "the fast orders checked equal to the reference's"
    )


if __name__ == "__main__":
    main()
