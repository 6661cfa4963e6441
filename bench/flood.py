"""The operator's latency under one player's flood of GetRound, against the same calls on a quiet server (a script,
not a test).

    python bench/flood.py [--calls N] [--repeat R] [--connections C] [--rates off]

Three processes, as a deployment has them: the server (``create_server`` on a free loopback port, an SQLite
file, the default limits and rates, the call log written as ``pokdeng serve`` writes it, to /dev/null), the
flooder (one player token sending GetRound of its own closed round, in the full view, from ``--connections``
threads, each on a connection of its own, each sending its next call as soon as the last is answered,
served or refused), and this one, the operator's client. Blocks alternate: quiet (the operator's calls
alone), then flood (the same calls while the flooder floods); each block is ``--calls`` calls, GetTable
and GetRound in turn. Reported: the operator's median and 90th percentile latency of each kind of block,
their ratio (the goal: at most 2x at the median), and what the flooder got (served and refused a second).
``--rates off`` serves without the callers' rates, for the comparison.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pokdeng_client import PokdengClient
from pokdeng_client.v1 import pokdeng_pb2 as pb

OPERATOR = "flood-bench-operator-token-0123456789"
FLOODER = "flood-bench-player-token-0123456789"
PLAYER = "mallory"
TARGET = 2.0  # the operator's median latency under the flood / quiet
OWN_CONNECTION = (("grpc.use_local_subchannel_pool", 1),)


def _serve(folder: str, rates_on: bool, ports: Any, stop: Any) -> None:
    """The server's process: serve until ``stop`` is set."""
    sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (the call log, written as the server writes it, unread)
    from pokdeng_service.api.rates import RATE_CLASSES, Rate
    from pokdeng_service.api.server import create_server
    from pokdeng_service.application import PokdengApp
    from pokdeng_service.application.config import StoreConfig
    from pokdeng_service.auth import TokenStore
    from pokdeng_service.logs import configure_logging
    from pokdeng_service.store.vault import SeedVault

    configure_logging("json", "INFO")
    app = PokdengApp(StoreConfig(kind="sqlite", sqlite_path=f"{folder}/app.sqlite").env(), vault=SeedVault.ephemeral())
    tokens = TokenStore.from_tokens([(OPERATOR, "operator", None), (FLOODER, "player", PLAYER)])
    rates = None if rates_on else {name: Rate(0, 0) for name in RATE_CLASSES}
    server, port = create_server("127.0.0.1:0", app, tokens=tokens, rates=rates, probe=False)
    server.start()
    ports.put(port)
    stop.wait()
    server.stop(1).wait(10)
    app.close()


def _flood(target: str, round_id: str, connections: int, flooding: Any, stop: Any, counts: Any) -> None:
    """The flooder's process: ``connections`` threads send GetRound while ``flooding`` is set."""
    metadata = (("authorization", f"Bearer {FLOODER}"),)
    request = pb.GetRoundRequest(round_id=round_id)
    served, refused = _Slot(counts, 0), _Slot(counts, 1)

    def loop() -> None:
        channel = grpc.insecure_channel(target, options=OWN_CONNECTION)
        call = channel.unary_unary(
            "/pokdeng.v1.RoundService/GetRound",
            request_serializer=pb.GetRoundRequest.SerializeToString,
            response_deserializer=pb.GetRoundResponse.FromString,
        )
        mine = [0, 0]
        while not stop.is_set():
            if not flooding.wait(0.1):
                served.add(mine[0])
                refused.add(mine[1])
                mine = [0, 0]
                continue
            try:
                call(request, metadata=metadata, timeout=10)
                mine[0] += 1
            except grpc.RpcError:
                mine[1] += 1
        served.add(mine[0])
        refused.add(mine[1])
        channel.close()

    threads = [threading.Thread(target=loop, daemon=True) for _ in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


class _Slot:
    """One count of a shared array, added to under its lock."""

    def __init__(self, array: Any, index: int) -> None:
        self.array, self.index = array, index

    def add(self, count: int) -> None:
        if count:
            with self.array.get_lock():
                self.array[self.index] += count

    @property
    def value(self) -> int:
        return int(self.array[self.index])


def _set_up(client: PokdengClient) -> str:
    """The flooder's wallet, a table, and a closed round it took part in: its id."""
    client.call("WalletService", "OpenWallet", wallet_id=PLAYER)
    client.call("WalletService", "Deposit", wallet_id=PLAYER, amount=10**9)
    client.call(
        "TableService", "OpenTable", table_id="t", profile=pb.PROFILE_CLASSIC, min_stake=100, max_stake=1000, seats=2
    )
    client.call("TableService", "TakeSeat", table_id="t", player=PLAYER, seat=1)
    current = client.call("RoundService", "StartRound", table_id="t", client_seed="flood").round
    round_id = current.round_id
    client.call("RoundService", "PlaceBet", round_id=round_id, seat=1, player=PLAYER, stake=100)
    current = client.call("RoundService", "Deal", round_id=round_id).round
    while current.phase != pb.ROUND_PHASE_CLOSED:
        if current.phase == pb.ROUND_PHASE_SIDE_BETS:
            current = client.call("RoundService", "CloseSideBets", round_id=round_id).round
        else:
            current = client.call("RoundService", "TimeOutTurn", round_id=round_id).round
    return str(round_id)


def _block(client: PokdengClient, round_id: str, calls: int) -> list[float]:
    latencies = []
    for k in range(calls):
        started = time.perf_counter()
        if k % 2:
            client.call("RoundService", "GetRound", round_id=round_id)
        else:
            client.call("TableService", "GetTable", table_id="t")
        latencies.append(time.perf_counter() - started)
    return latencies


def _p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=400, help="the operator's calls a block (default 400)")
    parser.add_argument("--repeat", type=int, default=3, help="quiet and flood blocks each (default 3)")
    parser.add_argument("--connections", type=int, default=16, help="the flooder's connections (default 16)")
    parser.add_argument("--rates", choices=["on", "off"], default="on", help="the callers' rates (default on)")
    args = parser.parse_args(argv)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"grpcio {grpc.__version__}; rates {args.rates}"
    )
    spawn = mp.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="pokdeng-bench-flood-") as folder:
        ports, stop, flooding, stop_flood = spawn.Queue(), spawn.Event(), spawn.Event(), spawn.Event()
        server = spawn.Process(target=_serve, args=(folder, args.rates == "on", ports, stop), daemon=True)
        server.start()
        flooder = None
        try:
            target = f"127.0.0.1:{ports.get(timeout=60)}"
            client = PokdengClient(target, OPERATOR)
            round_id = _set_up(client)
            counts = spawn.Array("q", 2)
            flooder = spawn.Process(
                target=_flood, args=(target, round_id, args.connections, flooding, stop_flood, counts), daemon=True
            )
            flooder.start()
            _block(client, round_id, args.calls)  # warm-up
            quiet: list[float] = []
            flood: list[float] = []
            flood_seconds = 0.0
            for _ in range(args.repeat):
                quiet += _block(client, round_id, args.calls)
                flooding.set()
                began = time.perf_counter()
                time.sleep(1.0)  # the flood under way
                flood += _block(client, round_id, args.calls)
                flooding.clear()
                flood_seconds += time.perf_counter() - began
                time.sleep(1.0)  # the flood's calls in flight drain, its threads count what they got
            client.close()
        finally:
            stop_flood.set()
            flooding.set()
            if flooder is not None:
                flooder.join(30)
            stop.set()
            server.join(30)
    served, refused = counts[0], counts[1]
    ratio = statistics.median(flood) / statistics.median(quiet)
    print(f"the operator's calls (GetTable and GetRound in turn), {len(quiet)} quiet and {len(flood)} under the flood:")
    print(f"  quiet: median {1000 * statistics.median(quiet):.2f} ms, p90 {1000 * _p90(quiet):.2f} ms")
    print(f"  flood: median {1000 * statistics.median(flood):.2f} ms, p90 {1000 * _p90(flood):.2f} ms")
    print(
        f"  the flooder ({args.connections} connections, one player token, GetRound): {served} served and "
        f"{refused} refused in {flood_seconds:.1f} s of flood (about {served / max(flood_seconds, 1e-9):.0f} served "
        f"and {refused / max(flood_seconds, 1e-9):.0f} refused a second)"
    )
    verdict = "meets" if ratio <= TARGET else "misses"
    print(f"ratio flood/quiet at the median: {ratio:.2f}x ({verdict} the goal of at most {TARGET:g}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
