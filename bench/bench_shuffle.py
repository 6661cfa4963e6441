"""The RNG report's shuffle rate against the reference implementation, measured in the same run.

    python bench/bench_shuffle.py [--seconds 3] [--workers 2]

For one-deck and eight-deck shoes of the report's seed schedule (docs/certification.md):

* reference: ``pokdeng_core.shuffle.deck_order_indices``, shoe after shoe, in this process;
* fast: ``certification.fastshuffle.order_matrix`` (batched HMAC states, vectorised Fisher-Yates), in this
  process;
* report: ``certification.tallies.run_shoes`` (the fast shuffle and every tally of the report) over
  ``--workers`` processes, pool start included.

Each is timed for about ``--seconds`` seconds, ``--rounds`` times in turn (reference, fast, report, then
again), and its best rate kept: on a shared machine the best of interleaved rounds is the least disturbed.
The ratios are against the reference of this same run. The fast shuffle's orders are checked against the
reference's for the shoes the reference shuffled.
"""

from __future__ import annotations

import argparse
import os
import platform
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
    parser.add_argument("--seconds", type=float, default=3.0, help="time per measurement (default 3)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="report processes (default: CPUs)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds, best kept (default 3)")
    args = parser.parse_args()
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores; "
          f"load average {os.getloadavg()[0]:.2f}")  # fmt: skip
    print(f"{'decks':>5} {'reference':>12} {'fast, 1 process':>18} {'ratio':>6} "
          f"{'report, ' + str(args.workers) + ' processes':>24} {'ratio':>6}")  # fmt: skip
    for decks in (1, 8):
        reference = fast = report = 0.0
        for _ in range(args.rounds):
            rate, orders = reference_rate(decks, args.seconds)
            reference = max(reference, rate)
            fast = max(fast, fast_rate(decks, args.seconds, orders))
            shoes = max(20_000, int(fast * args.seconds * args.workers) // 2 * 2)
            report = max(report, report_rate(decks, shoes, args.workers))
        print(f"{decks:>5} {reference:>10,.0f}/s {fast:>16,.0f}/s {fast / reference:>5.1f}x "
              f"{report:>22,.0f}/s {report / reference:>5.1f}x")  # fmt: skip
    print("shoes per second; ratio = rate / the reference's rate measured above (the fast orders checked equal)")


if __name__ == "__main__":
    main()
