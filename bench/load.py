"""Load: N concurrent gRPC clients against ``pokdeng serve`` on loopback, for a bounded time.

    python bench/load.py [--seconds 10] [--clients 1,8,32] [--store sqlite,postgres]
                         [--postgres-url URL] [--workers 16] [--repeat R] [--short] [--json FILE]

For every store and client count: a fresh store (an SQLite file; a fresh PostgreSQL database of
a throwaway cluster from ``pokdeng_testkit/pgserver.py``, or a fresh schema in ``--postgres-url``), one
``pokdeng serve`` child process on 127.0.0.1 with a token file, and N client threads, each
playing whole rounds at its own table (profiles in rotation: classic with a backer, kingmaker,
room, ante; three players a table) through ``pokdeng_testkit.harness.driver`` exactly as a platform would:
GetTable, StartRound, PlaceBet with each player's own token, Deal, GetRound, GetLegalCommands,
Draw/Stay, the banker's moves, a deposit or withdrawal every third round. Set-up is not timed.
After ``--seconds`` the clients stop where they are.

Reported per configuration: rounds/s (rounds closed in the window), calls/s, p50 and p99
latency per RPC, and errors by RPC and code (any error is a failure: exit code 1). Two
baselines are measured in the same run: the same N threads call the gRPC health check of the
same server for one second (the transport's unary ceiling on this machine), and, once the
server has stopped, the very transactions the server committed in the window (as many events
in each, read from its log) are appended raw, one after the other, with a minimal aggregate to
a fresh store of the same kind on the same disk (``pokdeng_testkit.harness.baseline``): the store's own
round rate. The ratio of the two round rates is printed (target: at least 50% at 8 clients), and
where the server's CPU went a round at a time (read from ``/proc``): the bare transport of its calls
(the server's CPU per health check, times the calls), the raw appends' own CPU, and the rest, the
service's own work, against the CPU a round may take on one core for the ratio to reach 50% (the
server's Python threads share one interpreter lock).

``--short`` (what CI runs, through tests/reliability/test_load_short.py): 1.5 seconds, 1 and 8
clients, no baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import grpc  # noqa: E402

from pokdeng_testkit.harness.load import (  # noqa: E402
    RAW_TARGET,
    SHORT_CLIENTS,
    SHORT_SECONDS,
    LoadResult,
    render,
    run_load,
    stores,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python bench/load.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="measured seconds per configuration")
    parser.add_argument("--clients", default="1,8,32", help="comma-separated client counts")
    parser.add_argument("--store", default="sqlite,postgres", help="comma-separated: sqlite, postgres")
    parser.add_argument("--postgres-url", help="a PostgreSQL database (fresh schemas in it); default: throwaway")
    parser.add_argument("--workers", type=int, default=16, help="the server's request threads")
    parser.add_argument("--short", action="store_true", help="CI form: 1.5 s, 1 and 8 clients, no baseline")
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--repeat", type=int, default=1, help="runs per configuration (fresh store each); medians")
    parser.add_argument("--json", help="also write the results as JSON to this file")
    args = parser.parse_args(argv)
    counts = [int(c) for c in args.clients.split(",") if c]
    kinds = [k.strip() for k in args.store.split(",") if k.strip()]
    seconds = args.seconds
    baseline = not args.no_baseline
    if args.short:
        counts, seconds, baseline = list(SHORT_CLIENTS), SHORT_SECONDS, False
    if any(k not in ("sqlite", "postgres") for k in kinds) or not counts or min(counts) < 1:
        parser.error("stores are sqlite and postgres; clients are positive numbers")
    print(f"pokdeng load: {os.cpu_count()} cores, python {sys.version.split()[0]}, grpcio {grpc.__version__}")
    results: list[LoadResult] = []
    with tempfile.TemporaryDirectory(prefix="pokdeng-load-") as tmp, stores(kinds, Path(tmp), args.postgres_url) as new:
        for kind in kinds:
            for n in counts:
                ratios: list[float] = []
                rates: list[float] = []
                for run in range(max(1, args.repeat)):
                    raw_store = new(kind, f"raw-{n}-{run}") if baseline else None
                    result = run_load(
                        new(kind, f"load-{n}-{run}"),
                        Path(tmp),
                        n,
                        seconds,
                        workers=args.workers,
                        baseline=baseline,
                        raw_store=raw_store,
                    )
                    results.append(result)
                    rates.append(result.rounds_per_s)
                    raw = ""
                    if result.raw_ratio is not None and result.raw_rounds_per_s is not None:
                        ratios.append(result.raw_ratio)
                        verdict = "meets" if result.raw_ratio >= RAW_TARGET else "misses"
                        raw = (
                            f"; raw appends of the same {result.transactions} transactions: "
                            f"{result.raw_rounds_per_s:.1f} rounds/s; ratio {result.raw_ratio:.0%} "
                            f"({verdict} >= {RAW_TARGET:.0%})"
                        )
                    print(
                        f"{kind:8} {n:3} clients: {result.rounds_per_s:7.1f} rounds/s, "
                        f"{result.calls_per_s:7.0f} calls/s, {result.error_total} errors{raw}",
                        flush=True,
                    )
                    budget = result.budget()
                    if budget is not None:
                        print(f"{'':13}{budget}", flush=True)
                if args.repeat > 1:
                    line = f"{kind:8} {n:3} clients, median of {args.repeat}: {statistics.median(rates):7.1f} rounds/s"
                    if ratios:
                        ratio = statistics.median(ratios)
                        verdict = "meets" if ratio >= RAW_TARGET else "misses"
                        line += f"; ratio to raw appends {ratio:.0%} ({verdict} >= {RAW_TARGET:.0%})"
                    print(line, flush=True)
    print()
    print(render(results))
    if args.json:
        Path(args.json).write_text(json.dumps([r.as_dict() for r in results], indent=2), encoding="utf-8")
    failed = [r for r in results if r.error_total or r.notes or not r.rounds]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
