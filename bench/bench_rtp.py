"""Time the exact RTP of every profile and the simulation rate through the round state machine.

    python bench/bench_rtp.py [--rounds 2000]

Each exact computation runs cold in a fresh interpreter (hand-evaluation caches empty; the
interpreter's own start-up is not counted), then once more warm in that process (the
per-deck tables are cached, so only the strategy's sums and the money are recomputed).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

PROFILES = ("classic", "ante", "room", "kingmaker")
TARGET_SECONDS = {"classic": 60.0, "room": 60.0, "kingmaker": 60.0, "ante": 5.0}

_CHILD = """
import json, sys, time
t0 = time.perf_counter()
from pokdeng_core.gamemath import exact
t1 = time.perf_counter()
result = exact(sys.argv[1], sys.argv[2])
t2 = time.perf_counter()
exact(sys.argv[1], sys.argv[2])
t3 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "cold": t2 - t1, "warm": t3 - t2, "rtp": float(result.rtp)}))
"""


def time_exact(profile: str, strategy: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, profile, strategy], capture_output=True, text=True, check=True, timeout=600
    )
    timing: dict[str, float] = json.loads(done.stdout)
    return timing


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000, help="simulated rounds per profile (default 2000)")
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from pokdeng_core.rtp_simulation import simulate

    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores")
    print("exact RTP (seconds; cold = fresh interpreter, import not counted)")
    print(f"{'profile':<10} {'strategy':<10} {'cold':>7} {'warm':>7} {'target':>7}  rtp")
    for profile in PROFILES:
        for strategy in ("reference", "best") if profile != "ante" else ("reference",):
            t = time_exact(profile, strategy)
            target = TARGET_SECONDS[profile]
            flag = "ok" if t["cold"] < target else "SLOW"
            print(
                f"{profile:<10} {strategy:<10} {t['cold']:7.2f} {t['warm']:7.2f} {target:7.0f}  {t['rtp']:.6f} {flag}"
            )
    print(f"\nsimulation through the state machine ({args.rounds} rounds, reference strategy)")
    for profile in PROFILES:
        started = time.perf_counter()
        simulate(profile, args.rounds, seed="bench")
        seconds = time.perf_counter() - started
        print(f"{profile:<10} {args.rounds / seconds:8.0f} rounds/s  ({seconds:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
