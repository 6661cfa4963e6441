"""Rounds verified per second from SQLite, against reading the same rounds' events raw (a script, not a test).

    python bench/bench_verify.py [--rounds N] [--tables T] [--repeat R] [--profile NAME ...] [--cprofile]

Rounds are played first through ``PokdengApp`` (bench/bench_service.py's player: 5 seats,
kingmaker and classic by default, ``--tables`` tables per profile) into an SQLite file.
Then, on a fresh application instance per pass (an auditor's process: nothing cached),
each pass goes over every round once:

* raw read: ``list(app.events.get(round_uuid))``, the round's stored events decoded by
  the library, nothing else;
* verification: ``verify_rounds(app, round_ids, check_wallets=False)``, the audit's batch
  verification of rounds: it reads the rounds' stored rows afresh, ``ROUNDS_PER_READ``
  rounds at a time (``fastpaths.stream_facts``: one query on SQLite, each row's JSON decoded
  by orjson), and for each round checks the hash chain, replays the round from the revealed
  seed and the recorded decisions (every event compared), checks the money, and finds the
  table's pin of the round's last digest (each table's stream read forward a page at a time
  over the batch). Every verdict must pass.
* single calls: ``verify_round(app, round_id)`` once per round, which reads the round's rows
  and the table's pin with reads of its own each time (what the VerifyRound RPC does).

The whole store (``pokdeng verify --all``): ``verify_store(app)``, every stream of the store read
once from its notification log and verified (rounds as above, and the tables' chains, pins and
house ledger, the wallets' chains, rounds and balances, the snapshots, the sealed seeds and the
command records), against reading every stream's events raw (``events.get`` per stream; target:
at most 2x) and against one pass over the notification log with every row decoded by the
library's mapper (the same rows verify_store reads).

For scale, the time to fetch the rows alone (``recorder.select_events``, no decoding) is
printed too; the part-by-part breakdown shows what the checks cost beyond reading.

Passes alternate (raw, verify, raw, verify, ...); medians are reported. Target (issue #12):
verification costs at most 2x the raw read.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_service import Player, machine_line, make_app

from pokdeng_service.application import PokdengApp
from pokdeng_service.audit import verify_round, verify_rounds, verify_store
from pokdeng_service.store import aggregates as ag

TARGET = 2.0  # verification time over raw read time, at most
STORE_TARGET = 2.0  # the whole store's verification over the raw read of every stream, at most
PROFILES = ("kingmaker", "classic")


def raw_pass(app: PokdengApp, round_ids: Sequence[str]) -> tuple[float, int]:
    events = 0
    start = time.perf_counter()
    for round_id in round_ids:
        events += len(list(app.events.get(ag.round_uuid(round_id))))
    return time.perf_counter() - start, events


def rows_pass(app: PokdengApp, round_ids: Sequence[str]) -> tuple[float, int]:
    rows = 0
    start = time.perf_counter()
    for round_id in round_ids:
        rows += len(app.recorder.select_events(ag.round_uuid(round_id)))
    return time.perf_counter() - start, rows


def verify_pass(app: PokdengApp, round_ids: Sequence[str]) -> tuple[float, int]:
    start = time.perf_counter()
    for verdict in verify_rounds(app, round_ids, check_wallets=False):
        if not verdict.ok:
            raise AssertionError(verdict.render())
    return time.perf_counter() - start, len(round_ids)


def single_pass(app: PokdengApp, round_ids: Sequence[str]) -> tuple[float, int]:
    start = time.perf_counter()
    for round_id in round_ids:
        verdict = verify_round(app, round_id, check_wallets=False)
        if not verdict.ok:
            raise AssertionError(verdict.render())
    return time.perf_counter() - start, len(round_ids)


def store_streams(app: PokdengApp) -> list[Any]:
    """Every stream of the store (from its notification log; not timed)."""
    seen: dict[Any, None] = {}
    start = 1
    while True:
        notes = app.recorder.select_notifications(start=start, limit=1000)
        for note in notes:
            seen.setdefault(note.originator_id)
        if len(notes) < 1000:
            return list(seen)
        start = notes[-1].id + 1


def raw_store_pass(app: PokdengApp, streams: Sequence[Any]) -> tuple[float, int]:
    """Every stream's events decoded by the library (``events.get``), nothing else."""
    events = 0
    start = time.perf_counter()
    for uuid in streams:
        events += len(list(app.events.get(uuid)))
    return time.perf_counter() - start, events


def raw_log_pass(app: PokdengApp, _streams: Sequence[Any]) -> tuple[float, int]:
    """The notification log read once, a page at a time, every row decoded by the library's mapper."""
    events = 0
    start = time.perf_counter()
    position = 1
    while True:
        notes = app.recorder.select_notifications(start=position, limit=1000)
        events += len([app.mapper.to_domain_event(note) for note in notes])
        if len(notes) < 1000:
            break
        position = notes[-1].id + 1
    return time.perf_counter() - start, events


def store_pass(app: PokdengApp, _streams: Sequence[Any]) -> tuple[float, int]:
    """``verify_store``: what ``pokdeng verify --all`` runs (every stream, rounds, tables, wallets, seeds,
    requests, snapshots); every verdict must pass."""
    start = time.perf_counter()
    verdicts = verify_store(app)
    seconds = time.perf_counter() - start
    failed = [v.render() for v in verdicts if not v.ok]
    if failed:
        raise AssertionError("\n".join(failed))
    return seconds, len(verdicts)


def stages_pass(app: PokdengApp, round_ids: Sequence[str]) -> dict[str, float]:
    """Seconds spent in each part of a batch verification, done part by part (what verify_rounds does,
    in order); and, apart (``"table record, alone"``), what verify_round on its own spends on the
    table's pin instead (``table_finish``: fresh reads of its own each time)."""
    from pokdeng_service import audit
    from pokdeng_service.audit import live, table_pins
    from pokdeng_service.store.fastpaths import stream_facts

    spent: dict[str, float] = {}
    clock = time.perf_counter

    def lap(name: str, since: float) -> float:
        now = clock()
        spent[name] = spent.get(name, 0.0) + now - since
        return now

    pins = table_pins.TablePins(app)
    alone: list[tuple[str, str, int, str]] = []
    for start in range(0, len(round_ids), live.ROUNDS_PER_READ):
        batch = round_ids[start : start + live.ROUNDS_PER_READ]
        t = clock()
        uuids = [ag.round_uuid(round_id) for round_id in batch]
        read = stream_facts(app.recorder, app.mapper, uuids)
        t = lap("read + decode rows", t)
        for round_id, uuid in zip(batch, uuids, strict=True):
            verdict = audit.Verdict(round_id)
            events = read[uuid]
            last = audit.check_chain(verdict, round_id, events)
            t = lap("hash chain", t)
            opened = next(e for e in events if e.kind == "round_opened")
            audit.check_replay(verdict, events)
            t = lap("replay + compare", t)
            audit.check_money(verdict, events)
            t = lap("money", t)
            finished = pins.find(opened.data["table_id"], round_id, opened.data["round_no"])
            t = lap("table record", t)
            if not verdict.ok or finished is None or finished.data["round_digest"] != last:
                raise AssertionError(verdict.render())
            alone.append((opened.data["table_id"], round_id, opened.data["round_no"], last))
    t = clock()
    for table_id, round_id, round_no, last in alone:
        finished = table_pins.table_finish(app, table_id, round_id, round_no)
        if finished is None or finished.data["round_digest"] != last:
            raise AssertionError(f"round {round_id}: no pin of its last digest")
    lap("table record, alone", t)
    return spent


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=100, help="rounds per table (default 100)")
    parser.add_argument("--tables", type=int, default=1, help="tables per profile (default 1)")
    parser.add_argument("--repeat", type=int, default=5, help="passes of each kind; medians (default 5)")
    parser.add_argument("--profile", action="append", help=f"profiles (default: {', '.join(PROFILES)})")
    parser.add_argument("--cprofile", action="store_true", help="profile one verification pass (cProfile)")
    args = parser.parse_args(argv)
    profiles = args.profile or list(PROFILES)
    began = time.perf_counter()
    print(machine_line())
    folder = tempfile.mkdtemp(prefix="pokdeng-bench-verify-")
    env = {
        "PERSISTENCE_MODULE": "eventsourcing.sqlite",
        "SQLITE_DBNAME": os.path.join(folder, "verify.sqlite"),
        "SQLITE_LOCK_TIMEOUT": "10",
    }
    try:
        app = make_app(env)
        round_ids: list[str] = []
        start = time.perf_counter()
        for profile in profiles:
            for t in range(args.tables):
                player = Player(app, f"v{t}-{profile}", profile, prefix=f"v{t}-{profile}")
                for _ in range(args.rounds):
                    round_ids.append(player.play_round())
        app.close()
        print(
            f"played {len(round_ids)} rounds ({', '.join(profiles)}; {args.tables} table(s) per profile, "
            f"{args.rounds} rounds each) in {time.perf_counter() - start:.1f} s into {env['SQLITE_DBNAME']}"
        )
        print(f"{args.repeat} passes of each kind, alternating, each on a fresh application instance; medians")

        passes: dict[str, list[float]] = {"raw": [], "verify": [], "single": [], "rows": []}
        events = 0
        runners: dict[str, Callable[[PokdengApp, Sequence[str]], tuple[float, int]]] = {
            "raw": raw_pass,
            "verify": verify_pass,
            "single": single_pass,
            "rows": rows_pass,
        }
        for _ in range(args.repeat):
            for kind, run in runners.items():
                fresh = make_app(env)
                try:
                    seconds, count = run(fresh, round_ids)
                finally:
                    fresh.close()
                passes[kind].append(seconds)
                if kind == "raw":
                    events = count
        raw = statistics.median(passes["raw"])
        verify = statistics.median(passes["verify"])
        n = len(round_ids)
        ratio = verify / raw
        print(f"{'':<22} {'rounds/s':>9} {'ms/round':>9} {'events/s':>9}")
        print(f"{'raw read (events.get)':<22} {n / raw:>9.0f} {raw / n * 1e3:>9.3f} {events / raw:>9.0f}")
        rows = statistics.median(passes["rows"])
        print(f"{'rows only (no decode)':<22} {n / rows:>9.0f} {rows / n * 1e3:>9.3f} {events / rows:>9.0f}")
        single = statistics.median(passes["single"])
        print(f"{'verify_rounds (batch)':<22} {n / verify:>9.0f} {verify / n * 1e3:>9.3f} {events / verify:>9.0f}")
        print(f"{'verify_round (single)':<22} {n / single:>9.0f} {single / n * 1e3:>9.3f} {events / single:>9.0f}")
        print(
            f"verification costs {ratio:.2f}x the raw read ({events / n:.1f} events per round): "
            f"{'meets' if ratio <= TARGET else 'MISSES'} the target of <= {TARGET:.0f}x; "
            f"one verify_round call per round: {single / raw:.2f}x"
        )
        probe = make_app(env)
        try:
            streams = store_streams(probe)
        finally:
            probe.close()
        store_runners = {"raw store": raw_store_pass, "raw log": raw_log_pass, "store": store_pass}
        store_passes: dict[str, list[float]] = {kind: [] for kind in store_runners}
        store_events = 0
        for _ in range(args.repeat):
            for kind, run in store_runners.items():
                fresh = make_app(env)
                try:
                    seconds, count = run(fresh, streams)
                finally:
                    fresh.close()
                store_passes[kind].append(seconds)
                if kind == "raw store":
                    store_events = count
        raw_all = statistics.median(store_passes["raw store"])
        raw_log = statistics.median(store_passes["raw log"])
        whole = statistics.median(store_passes["store"])
        print(
            f"the whole store ({len(streams)} streams, {store_events} events: rounds, tables, wallets, sealed seeds, "
            "command records), passes alternating as above:"
        )
        print(f"{'':<22} {'ms':>9} {'events/s':>9}")
        print(f"{'raw read (events.get)':<22} {raw_all * 1e3:>9.1f} {store_events / raw_all:>9.0f}")
        print(f"{'raw read (the log)':<22} {raw_log * 1e3:>9.1f} {store_events / raw_log:>9.0f}")
        print(f"{'verify_store (--all)':<22} {whole * 1e3:>9.1f} {store_events / whole:>9.0f}")
        print(
            f"verify_store costs {whole / raw_all:.2f}x the raw read of every stream (events.get per stream): "
            f"{'meets' if whole / raw_all <= STORE_TARGET else 'MISSES'} the target of <= {STORE_TARGET:.0f}x; "
            f"{whole / raw_log:.2f}x one library-decoded pass over the log; "
            f"{whole / raw:.2f}x the raw read of the rounds alone"
        )
        fresh = make_app(env)
        try:
            spent = stages_pass(fresh, round_ids)
        finally:
            fresh.close()
        print("where a batch verification's time goes (one pass, part by part; x = times the raw read's median):")
        alone = spent.pop("table record, alone")
        for name, seconds in spent.items():
            print(f"  {name:<18} {seconds / n * 1e6:8.0f} us/round  {seconds / raw:5.2f}x")
        print(f"  {'total':<18} {sum(spent.values()) / n * 1e6:8.0f} us/round  {sum(spent.values()) / raw:5.2f}x")
        print(
            f"  (verify_round alone reads the table's pin afresh instead: {alone / n * 1e6:.0f} us/round, "
            f"{alone / raw:.2f}x)"
        )
        if args.cprofile:
            fresh = make_app(env)
            profiler = cProfile.Profile()
            profiler.enable()
            verify_pass(fresh, round_ids)
            profiler.disable()
            fresh.close()
            print("\n== cProfile of one verification pass")
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)
            fresh = make_app(env)
            profiler = cProfile.Profile()
            profiler.enable()
            store_pass(fresh, [])
            profiler.disable()
            fresh.close()
            print("\n== cProfile of one whole-store verification (verify_store)")
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"total time {time.perf_counter() - began:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
