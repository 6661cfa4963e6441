"""Whole 5-seat kingmaker rounds per second over gRPC on SQLite, against two baselines (a script, not a test).

    python bench/bench_grpc.py [--rounds N] [--repeat R]

A real server (``create_server`` on a free loopback port, SQLite file, tokens) and one
client in this process play kingmaker rounds: StartRound, five PlaceBet, Deal, then
the decisions (every player takes the side bet when the window opens; players stay
on 5 or more and draw below); each command's response carries the round, so the
client sends no queries. Measured in the same run:

* baseline A, a bare unary gRPC call (the health check: no auth, no application)
  repeated as many times as a round needs;
* baseline B, raw eventsourcing appends of the same events in the same transactions
  (one per command, as many events as each command wrote, all aggregates included),
  with a minimal aggregate on its own SQLite file.

The three are interleaved round by round (a round over gRPC, as many bare calls, the round's
transactions appended raw), so that all three see the same machine and disk; ``--repeat`` blocks,
medians reported. Target (issue #16, item 4): a round costs at most 1.5x (A + B).
"""

from __future__ import annotations

import argparse
import os
import platform
import secrets
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_service import baseline_block, transactions  # type: ignore[import-not-found, unused-ignore]

from pokdeng_client import PokdengClient
from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_service.api.server import create_server
from pokdeng_service.application import PokdengApp
from pokdeng_service.application.config import StoreConfig
from pokdeng_service.auth import TokenStore
from pokdeng_service.store.vault import SeedVault
from pokdeng_testkit.harness.baseline import RawApp

PLAYERS = ("p1", "p2", "p3", "p4", "p5")
TARGET = 1.5  # a round over gRPC / (bare unary calls + raw appends)


def play_round(client: PokdengClient, table_id: str) -> int:
    """One kingmaker round through the API; returns the number of calls it took."""
    calls = 1
    current = client.call("RoundService", "StartRound", table_id=table_id, client_seed="bench").round
    round_id = current.round_id
    for number, player in enumerate(PLAYERS, start=1):
        bet = {"round_id": round_id, "seat": number, "player": player, "stake": 100}
        current = client.call("RoundService", "PlaceBet", **bet).round
        calls += 1
    current = client.call("RoundService", "Deal", round_id=round_id).round
    calls += 1
    while current.phase != pb.ROUND_PHASE_CLOSED:
        if current.phase == pb.ROUND_PHASE_SIDE_BETS:
            for bet in current.bets:
                if not any(s.seat == bet.seat for s in current.side_bets):
                    current = client.call(
                        "RoundService", "PlaceSideBet", round_id=round_id, seat=bet.seat, player=bet.player
                    ).round
                    calls += 1
            current = client.call("RoundService", "CloseSideBets", round_id=round_id).round
        elif current.phase == pb.ROUND_PHASE_PLAYER_TURNS:
            hand = next(h for h in current.hands if h.seat == current.turn)
            points = sum(_points(c) for c in hand.cards) % 10
            method = "Stay" if points >= 5 else "Draw"
            current = client.call(
                "RoundService", method, round_id=round_id, seat=current.turn, player=PLAYERS[current.turn - 1]
            ).round
        else:
            current = client.call("RoundService", "TimeOutTurn", round_id=round_id).round
        calls += 1
    return calls


def _points(card: str) -> int:
    rank = card[:-1]
    return 1 if rank == "A" else int(rank) if rank.isdigit() and rank != "10" else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=40, help="rounds per block (default 40)")
    parser.add_argument("--repeat", type=int, default=3, help="blocks; medians reported (default 3)")
    args = parser.parse_args(argv)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"grpcio {grpc.__version__}"
    )
    with tempfile.TemporaryDirectory(prefix="pokdeng-bench-grpc-") as folder:
        env = StoreConfig(kind="sqlite", sqlite_path=f"{folder}/app.sqlite").env()  # as `pokdeng serve` runs
        app = PokdengApp(env, vault=SeedVault.ephemeral())
        raw = RawApp({"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": f"{folder}/raw.sqlite"})
        token = secrets.token_urlsafe(16)
        server, port = create_server("127.0.0.1:0", app, tokens=TokenStore.from_tokens([(token, "operator", None)]))
        server.start()
        client = PokdengClient(f"127.0.0.1:{port}", token)
        health: Any = health_pb2_grpc.HealthStub(client.channel)
        try:
            for player in PLAYERS:
                client.call("WalletService", "OpenWallet", wallet_id=player)
                client.call("WalletService", "Deposit", wallet_id=player, amount=10**12)
            client.call(
                "TableService",
                "OpenTable",
                table_id="k",
                profile=pb.PROFILE_KINGMAKER,
                min_stake=100,
                max_stake=1000,
                seats=5,
                turn_timeout=timedelta(seconds=30),
            )
            for number, player in enumerate(PLAYERS, start=1):
                client.call("TableService", "TakeSeat", table_id="k", player=player, seat=number)
            play_round(client, "k")  # warm up
            rounds_s, unary_s, raw_s, calls_per_round, events_per_round = [], [], [], [], []
            request = health_pb2.HealthCheckRequest(service="")
            for _ in range(args.repeat):
                app_time = unary_time = raw_time = 0.0
                calls = events = 0
                for _ in range(args.rounds):
                    # one round over gRPC, then the same number of bare calls, then its transactions appended
                    # raw: interleaved round by round, so that all three see the same machine and disk
                    start_position = app.max_position
                    start = time.perf_counter()
                    made = play_round(client, "k")
                    app_time += time.perf_counter() - start
                    sizes = transactions(app, start_position, app.max_position)
                    start = time.perf_counter()
                    for _ in range(made):
                        health.Check(request, timeout=10)
                    unary_time += time.perf_counter() - start
                    raw_time += baseline_block(raw, sizes, [len(sizes)])
                    calls += made
                    events += sum(sizes)
                rounds_s.append(app_time / args.rounds)
                unary_s.append(unary_time / args.rounds)
                raw_s.append(raw_time / args.rounds)
                calls_per_round.append(calls / args.rounds)
                events_per_round.append(events / args.rounds)
        finally:
            client.close()
            server.stop(grace=1)
            app.close()
            raw.close()
    rnd, una, rw = statistics.median(rounds_s), statistics.median(unary_s), statistics.median(raw_s)
    print(
        f"kingmaker, 5 seats, SQLite: {statistics.median(calls_per_round):.1f} calls and "
        f"{statistics.median(events_per_round):.1f} events per round ({args.repeat} blocks of {args.rounds})"
    )
    print(f"  over gRPC          {1 / rnd:8.1f} rounds/s   {rnd * 1000:7.2f} ms/round")
    print(f"  A: bare unary      {1 / una:8.1f} rounds/s   {una * 1000:7.2f} ms/round (same number of calls)")
    print(f"  B: raw appends     {1 / rw:8.1f} rounds/s   {rw * 1000:7.2f} ms/round (same transactions)")
    ratio = rnd / (una + rw)
    print(f"  round cost / (A + B) = {ratio:.2f}  (target <= {TARGET:.2f}: {'met' if ratio <= TARGET else 'missed'})")
    calls = statistics.median(calls_per_round)
    print(
        f"  the service's own work (round - A - B): {(rnd - una - rw) * 1000:.2f} ms a round, "
        f"{(rnd - una - rw) / calls * 1e6:.0f} us a call; the target leaves {(TARGET - 1) * (una + rw) * 1000:.2f} ms, "
        f"{(TARGET - 1) * (una + rw) / calls * 1e6:.0f} us a call"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
