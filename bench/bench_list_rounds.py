"""A page of ListRounds (with the record's access checks) against the read model alone (a script, not a test).

    python bench/bench_list_rounds.py [--rounds N] [--tables T] [--page P] [--repeat R]

ListRounds takes a page of closed rounds from the read models, then loads each listed round's record (its
aggregate and its view's events): the record decides what is listed (``api/rounds.py``, ``_as_listed``: a
player's rounds are those the record says it takes part in) and what the caller may see of each. This
measures what that costs on a store of ``--rounds`` closed rounds, played through the API by the test
kit's drivers (``pokdeng_testkit.harness.driver``) on SQLite, ``--tables`` tables in rotation of the
profiles. Measured in the same run, each the median of ``--repeat`` runs:

* the baseline: the read model alone (``PartitionedReadModels.page_rounds``, a page of ``--page``);
* ListRounds' body in this process (``api.rounds.list_rounds``: the page, each round's record and events,
  the record's check, the reply's messages), for an operator (every round) and for a player (its own);
  warm (the loader's caches hold the rounds, as on a server that has served them) and cold (a freshly
  opened application: the first listing after a restart, or of rounds nobody read since);
* the whole call over gRPC (loopback, warm), for the same two callers.

Each is printed with its ratio to the baseline. The target: a page costs at most ``TARGET`` times the
read model alone, warm, in the body.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pokdeng_client import PokdengClient
from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_service.api.hub import EventHub
from pokdeng_service.api.rounds import list_rounds
from pokdeng_service.api.rpcs import Call, Env
from pokdeng_service.application.config import StoreConfig
from pokdeng_service.application.principal import Principal, Role
from pokdeng_service.auth import TokenStore
from pokdeng_service.compose import Deployment
from pokdeng_service.readmodels.paging import RoundFilterArgs
from pokdeng_service.readmodels.partitioned import PartitionedReadModels
from pokdeng_testkit.harness.client import HarnessClient
from pokdeng_testkit.harness.driver import TableDriver, make_tables
from pokdeng_testkit.harness.tokens import Tokens
from pokdeng_testkit.keys import VAULT_KEY

TARGET = 10.0  # a page with the access checks / the read model alone (warm, in the body)


def timed(work: Callable[[], Any]) -> float:
    began = time.perf_counter()
    work()
    return time.perf_counter() - began


def interleaved(measures: dict[str, Callable[[], float]], repeat: int) -> dict[str, float]:
    """Each measure's median seconds over ``repeat`` rounds, the measures taken in turn within each round
    (so that all of them see the same machine; one round first, not counted)."""
    times: dict[str, list[float]] = {label: [] for label in measures}
    for counted in [False] + [True] * repeat:
        for label, measure in measures.items():
            seconds = measure()
            if counted:
                times[label].append(seconds)
    return {label: statistics.median(values) for label, values in times.items()}


def play(target: str, tokens: Tokens, drivers_specs: list[Any], rounds: int) -> int:
    """``rounds`` closed rounds, spread over the tables, played through the API; the number closed."""
    per_table = -(-rounds // len(drivers_specs))
    drivers = [
        TableDriver(spec, HarnessClient(target), tokens, name=spec.table_id, wallet_every=0) for spec in drivers_specs
    ]
    threads = []
    for driver in drivers:
        driver.setup()
        thread = threading.Thread(target=driver.play, args=(threading.Event(), per_table), daemon=True)
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join()
    for driver in drivers:
        driver.client.close()
    return sum(len(driver.closed) for driver in drivers)


def measure(
    label: str,
    principal: Principal,
    client: PokdengClient,
    deployment: Deployment,
    models: PartitionedReadModels,
    page: int,
    repeat: int,
) -> list[tuple[str, float]]:
    """One caller's rows: the read model alone, ListRounds' body warm and cold, ListRounds over gRPC."""
    player = principal.player if principal.role is Role.PLAYER else None
    filters: RoundFilterArgs = {
        "table_id": None,
        "player": player,
        "closed_from": None,
        "closed_to": None,
        "outcome": None,
    }
    listed = len(models.page_rounds(limit=page, **filters).rounds)
    request = pb.ListRoundsRequest(page_size=page)
    call = Call(principal, None)  # type: ignore[arg-type]  # (the body reads no context)
    warm = Env(deployment.target, EventHub(1), models, token_key=b"bench")
    assert len(client.call("RoundService", "ListRounds", page_size=page).rounds) == listed

    def read_model() -> float:
        return timed(lambda: models.page_rounds(limit=page, **filters))

    def body_warm() -> float:
        return timed(lambda: list_rounds(warm, call, request))

    def body_cold() -> float:  # (a freshly opened application: its caches empty)
        fresh = Deployment.open(deployment.config, clocks=False, read_models=False, lock=False)
        try:
            cold = Env(fresh.target, EventHub(1), models, token_key=b"bench")
            return timed(lambda: list_rounds(cold, call, request))
        finally:
            fresh.close()

    def over_grpc() -> float:
        return timed(lambda: client.call("RoundService", "ListRounds", page_size=page))

    measures = {
        f"{label}: the read model alone, {listed} rounds (baseline)": read_model,
        f"{label}: ListRounds' body, warm": body_warm,
        f"{label}: ListRounds' body, cold": body_cold,
        f"{label}: ListRounds over gRPC, warm": over_grpc,
    }
    return list(interleaved(measures, repeat).items())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=400, help="closed rounds in the store (default 400)")
    parser.add_argument("--tables", type=int, default=4, help="tables they are played at (default 4)")
    parser.add_argument("--page", type=int, default=100, help="rounds a page (default 100, the most)")
    parser.add_argument("--repeat", type=int, default=15, help="runs of each measure; medians (default 15)")
    args = parser.parse_args(argv)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    specs = make_tables("bench", args.tables)
    tokens = Tokens.for_players(player for spec in specs for player in spec.wallets)
    with tempfile.TemporaryDirectory(prefix="pokdeng-bench-list-") as folder:
        config = StoreConfig(kind="sqlite", sqlite_path=f"{folder}/pokdeng.sqlite", vault_key=VAULT_KEY)
        token_file = tokens.write(Path(folder) / "tokens.json")
        deployment = Deployment.open(config, clocks=False, lock=False)
        server, port = deployment.server("127.0.0.1:0", tokens=TokenStore.from_file(token_file))
        server.start()
        try:
            began = time.perf_counter()
            closed = play(f"127.0.0.1:{port}", tokens, specs, args.rounds)
            models = deployment.read_models
            assert models is not None
            models.catch_up()
            print(
                f"store: {closed} closed rounds at {args.tables} tables, played in {time.perf_counter() - began:.1f} s"
            )
            player = specs[0].players[0]
            callers = {
                "operator": (Principal(Role.OPERATOR, None, "bench"), tokens.operator),
                f"player {player}": (Principal(Role.PLAYER, player), tokens.players[player]),
            }
            rows: list[tuple[str, float]] = []
            for label, (principal, token) in callers.items():
                client = PokdengClient(f"127.0.0.1:{port}", token)
                try:
                    rows += measure(label, principal, client, deployment, models, args.page, args.repeat)
                finally:
                    client.close()
        finally:
            server.stop(0).wait(10)
            deployment.close()
    width = max(len(label) for label, _ in rows)
    baseline = rows[0][1]
    worst = 1.0
    for label, seconds in rows:
        if "(baseline)" in label:
            baseline = seconds
        ratio = seconds / baseline
        if "body, warm" in label:
            worst = max(worst, ratio)
        print(f"  {label:<{width}}  {seconds * 1000:8.2f} ms  {ratio:7.1f}x")
    verdict = "met" if worst <= TARGET else "NOT met"
    print(f"target: a page's body, warm, at most {TARGET:g}x the read model alone: {verdict} ({worst:.1f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
