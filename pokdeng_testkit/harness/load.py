"""The load run of ``bench/load.py``: N concurrent gRPC clients against one ``pokdeng serve`` for a bounded time.

``run_load`` plays one configuration (a fresh store, one server, N client threads each at its own table,
``driver.TableDriver`` exactly as a platform would) and returns a ``LoadResult``: rounds, calls, errors,
latencies by RPC, and, when asked, the baselines of the same run (the health check's unary ceiling, the
window's transactions appended raw to a fresh store of the same kind, the server's CPU from ``/proc``).
``render`` prints results as tables. ``bench/load.py`` is the command; the short form (``SHORT_CLIENTS``,
``SHORT_SECONDS``) is what tests/reliability/test_load_short.py runs.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from .baseline import LogReader, raw_env, replay, transactions
from .client import HarnessClient, Stats
from .driver import TableDriver, make_tables, play_for
from .server import ServerProcess, Store, postgres_databases, servers
from .tokens import Tokens

SHORT_CLIENTS = (1, 8)  # --short, and tests/reliability/test_load_short.py
SHORT_SECONDS = 1.5
RAW_TARGET = 0.50  # rounds/s over the raw-append round rate of the same store (8 clients)
MAIN_RPCS = (
    "GetTable",
    "StartRound",
    "PlaceBet",
    "Deal",
    "GetRound",
    "GetLegalCommands",
    "Draw",
    "Stay",
    "BankerDraw",
    "BankerStay",
    "TimeOutTurn",
    "Deposit",
    "Withdraw",
)


@dataclass
class LoadResult:
    store: str
    clients: int
    seconds: float
    rounds: int
    calls: int
    errors: dict[str, int]  # "rpc code" -> count
    rpcs: list[dict[str, Any]]
    baseline_calls_per_s: float | None = None
    notes: list[str] = field(default_factory=list)
    raw_seconds: float | None = None  # the window's transactions appended raw, one after the other
    transactions: int = 0  # command transactions committed in the window
    server_cpu: float | None = None  # CPU seconds the server process used in the window (/proc)
    bare_call_cpu: float | None = None  # the server's CPU seconds per health check (the baseline's calls)
    raw_cpu: float | None = None  # CPU seconds of the raw replay (its wall time less the disk's)

    @property
    def raw_rounds_per_s(self) -> float | None:
        return self.rounds / self.raw_seconds if self.raw_seconds else None

    @property
    def raw_ratio(self) -> float | None:
        """rounds/s over the raw-append round rate (the same work): the raw replay's time over the window's."""
        return self.raw_seconds / self.seconds if self.raw_seconds and self.seconds else None

    def budget(self) -> str | None:
        """Where the server's CPU went, a round at a time: the calls' bare transport (as many health checks),
        the raw appends' own CPU, and the rest, the service's own work; against what the 50% target allows
        (the server's threads share one interpreter lock: a busy server runs about one core of Python)."""
        raw_rate = self.raw_rounds_per_s
        if not (self.server_cpu and self.rounds and raw_rate) or self.bare_call_cpu is None or self.raw_cpu is None:
            return None
        per_round = self.server_cpu / self.rounds * 1000
        calls = self.calls / self.rounds
        transport = calls * self.bare_call_cpu * 1000
        raw = self.raw_cpu / self.rounds * 1000
        allowed = 1000 / (RAW_TARGET * raw_rate)
        return (
            f"server CPU {self.server_cpu / self.seconds:.2f} cores, {per_round:.2f} ms a round "
            f"({calls:.1f} calls, {per_round / calls * 1000:.0f} us a call): bare transport {transport:.2f} ms "
            f"({self.bare_call_cpu * 1e6:.0f} us a health check), raw appends' CPU {raw:.2f} ms, own work "
            f"{per_round - transport - raw:.2f} ms; {RAW_TARGET:.0%} of the raw rate allows {allowed:.2f} ms a "
            f"round of one core"
        )

    @property
    def rounds_per_s(self) -> float:
        return self.rounds / self.seconds if self.seconds else 0.0

    @property
    def calls_per_s(self) -> float:
        return self.calls / self.seconds if self.seconds else 0.0

    @property
    def error_total(self) -> int:
        return sum(self.errors.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "store": self.store,
            "clients": self.clients,
            "seconds": round(self.seconds, 3),
            "rounds": self.rounds,
            "rounds_per_s": round(self.rounds_per_s, 1),
            "calls_per_s": round(self.calls_per_s, 1),
            "errors": self.errors,
            "rpcs": self.rpcs,
            "baseline_health_calls_per_s": self.baseline_calls_per_s,
            "transactions": self.transactions,
            "raw_rounds_per_s": None if self.raw_rounds_per_s is None else round(self.raw_rounds_per_s, 1),
            "raw_ratio": None if self.raw_ratio is None else round(self.raw_ratio, 3),
            "server_cpu_seconds": self.server_cpu,
            "bare_call_cpu_seconds": self.bare_call_cpu,
            "raw_cpu_seconds": self.raw_cpu,
        }


def _health_baseline(target: str, clients: int, seconds: float = 1.0) -> tuple[int, float]:
    """Health checks made by ``clients`` threads (a channel each) against the same server, and the seconds."""
    counts = [0] * clients
    stop_at = time.monotonic() + seconds

    def hammer(i: int) -> None:
        with grpc.insecure_channel(target) as channel:
            stub: Any = health_pb2_grpc.HealthStub(channel)
            request = health_pb2.HealthCheckRequest()
            while time.monotonic() < stop_at:
                stub.Check(request, timeout=10)
                counts[i] += 1

    threads = [threading.Thread(target=hammer, args=(i,), daemon=True) for i in range(clients)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=seconds + 30)
    return sum(counts), time.monotonic() - started


def run_load(
    store: Store,
    workdir: Path,
    clients: int,
    seconds: float,
    *,
    workers: int = 16,
    baseline: bool = True,
    raw_store: Store | None = None,
) -> LoadResult:
    """One configuration: a fresh ``store``, one server, ``clients`` threads for ``seconds``; with
    ``raw_store`` (a fresh store of the same kind) the window's transactions are appended there raw."""
    specs = make_tables(f"load{clients}", clients)
    wallets = [w for spec in specs for w in spec.wallets]
    tokens = Tokens.for_players(wallets)
    tokens_file = tokens.write(workdir / f"tokens-{clients}.json")
    with servers() as running:
        server = ServerProcess(
            store, tokens_file, workdir / f"server-{store.kind}-{clients}.log", workers=workers, name="pokdeng serve"
        )
        running.append(server)
        server.start()
        drivers = [TableDriver(spec, HarnessClient(server.target, patience=30.0), tokens) for spec in specs]
        reader = LogReader(store) if raw_store is not None else None
        sizes: list[int] = []
        try:
            for driver in drivers:
                driver.setup()
                driver.stats.clear()  # the set-up is not measured
            first = reader.position() if reader is not None else 0
            cpu_before = server.cpu_seconds()
            elapsed, stuck = play_for(drivers, seconds)
            cpu_after = server.cpu_seconds()
            result = _played(store, clients, drivers, elapsed, stuck)
            result.server_cpu = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
            if reader is not None:
                sizes = transactions(reader, first, reader.position())
            if baseline:
                result.baseline_calls_per_s, result.bare_call_cpu = _health_ceiling(server, clients)
        finally:
            for driver in drivers:
                driver.client.close()
            if reader is not None:
                reader.close()
        result.notes.extend(server.log_errors())
    result.transactions = len(sizes)
    if raw_store is not None and sizes:  # (the server has stopped)
        result.raw_seconds, result.raw_cpu = replay(raw_env(raw_store), sizes)
    return result


def _played(store: Store, clients: int, drivers: Sequence[TableDriver], elapsed: float, stuck: int) -> LoadResult:
    """What the clients did in the window: rounds, calls and errors, each method's figures; the notes: their
    unexpected errors, a client that did not stop."""
    stats = Stats()
    for driver in drivers:
        stats.merge(driver.stats)
    notes = [f"{d.name}: {u}" for d in drivers for u in d.unexpected]
    if stuck:
        notes.append("a client did not stop within 60 s")
    errors = {f"{rpc} {code}": n for (rpc, code), n in sorted(stats.errors.items())}
    rounds = sum(len(d.closed) for d in drivers)
    return LoadResult(store.kind, clients, elapsed, rounds, stats.calls, errors, stats.table(), notes=notes)


def _health_ceiling(server: ServerProcess, clients: int) -> tuple[float, float | None]:
    """The server's ceiling of bare calls (health checks a second, ``clients`` at once), and the CPU seconds
    of one (None if the server's CPU time cannot be read)."""
    health_before = server.cpu_seconds()
    checks, took = _health_baseline(server.target, clients)
    health_after = server.cpu_seconds()
    bare_cpu = None
    if health_before is not None and health_after is not None and checks:
        bare_cpu = (health_after - health_before) / checks
    return checks / took, bare_cpu


@contextlib.contextmanager
def stores(kinds: list[str], workdir: Path, postgres_url: str | None) -> Iterator[Any]:
    """A factory ``new(kind, name) -> Store`` of fresh stores."""
    with contextlib.ExitStack() as stack:
        factories: dict[str, Any] = {}

        def new(kind: str, name: str) -> Store:
            if kind == "sqlite":
                path = workdir / f"{name}.sqlite"
                return Store.sqlite(path)
            if "postgres" not in factories:
                factories["postgres"] = stack.enter_context(postgres_databases(postgres_url))
            return Store.postgres(factories["postgres"]())

        yield new


def render(results: list[LoadResult]) -> str:
    lines = [
        "| store | clients | rounds/s | raw-append rounds/s | ratio | calls/s | health calls/s (baseline) | errors |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        base = f"{r.baseline_calls_per_s:,.0f}" if r.baseline_calls_per_s else "-"
        raw = f"{r.raw_rounds_per_s:,.1f}" if r.raw_rounds_per_s else "-"
        ratio = f"{r.raw_ratio:.0%}" if r.raw_ratio else "-"
        lines.append(
            f"| {r.store} | {r.clients} | {r.rounds_per_s:,.1f} | {raw} | {ratio} | {r.calls_per_s:,.0f} | {base} "
            f"| {r.error_total} |"
        )
    lines += ["", "p50 / p99 latency per RPC, ms:", ""]
    header = "| store | clients | " + " | ".join(MAIN_RPCS) + " |"
    lines += [header, "|" + "---|" * (len(MAIN_RPCS) + 2)]
    for r in results:
        by_name = {row["rpc"]: row for row in r.rpcs}
        cells = []
        for name in MAIN_RPCS:
            row = by_name.get(name)
            cells.append(f"{row['p50_ms']:.1f} / {row['p99_ms']:.1f}" if row and row["calls"] else "-")
        lines.append(f"| {r.store} | {r.clients} | " + " | ".join(cells) + " |")
    for r in results:
        if r.errors or r.notes:
            lines.append(f"\n{r.store} x {r.clients}: errors {r.errors}; notes {r.notes[:10]}")
    return "\n".join(lines)
