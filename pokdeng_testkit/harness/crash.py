"""Crash and restart: ``pokdeng serve`` SIGKILLed at random moments under concurrent clients.

    python -m pokdeng_testkit.harness.crash [--store sqlite|postgres] [--kills 30] [--clients 8] [--seed S]
                                  [--postgres-url URL] [--workdir DIR] [--json FILE]

One server process (an SQLite file, or a PostgreSQL store: ``--postgres-url``, else a throwaway
cluster) with a token file (operator, auditor, a token per player). ``--clients`` threads each
play rounds at their own table (profiles in rotation: classic with a backer, kingmaker, room with
its banker bid, ante) through ``HarnessClient`` (a ``PokdengClient``), with request ids derived
from the round and its state (``driver.py``), depositing and withdrawing between rounds.

The killer waits a random 0.05-0.4 s after the server serves, sends SIGKILL, and starts it again on
the same port (now and then it kills the new process again during its start-up, before it
serves). Clients retry their last request (same request id) on UNAVAILABLE and, once it went
through, read the round again (GetRound, GetLegalCommands) and go on. After ``--kills`` kills the
clients stop wherever they are, the server is killed once more, restarted, and the rounds left
open are checked resumable (GetLegalCommands); every other one is voided, the rest are finished.
Then ``checks.audit_api`` (server running) and ``checks.audit_store`` (server stopped) check that
nothing was lost or duplicated, nothing paid twice, every wallet equals its statement, the money
balances to zero and every closed round verifies. Exit code 0 when everything holds.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pokdeng_client.v1 import pokdeng_pb2 as pb

from .checks import audit_run
from .client import HarnessClient, Stats, command_names
from .driver import TableDriver, all_acked, make_tables, merged_ledger
from .feed import FeedFollower
from .findings import findings_lines, finish
from .server import ServerProcess, Store, postgres_databases, servers
from .tokens import Tokens


@dataclass
class CrashConfig:
    kills: int = 30  # kills while the server serves clients
    clients: int = 8
    min_up: float = 0.05  # seconds from "serving" to the kill
    max_up: float = 0.4
    max_down: float = 0.1  # seconds the server stays dead
    startup_kill_chance: float = 0.05  # a restart is killed again before it serves
    max_seconds: float = 900.0  # the kill loop's bound: a hang guard (a loaded machine restarts slowly)
    seed: int | None = None


@dataclass
class CrashReport:
    store: str
    seed: int
    clients: int
    kills: int = 0  # while serving
    startup_kills: int = 0
    starts: int = 0
    seconds: float = 0.0
    play_seconds: float = 0.0
    check_seconds: float = 0.0
    startup_median: float = 0.0
    rounds_closed: int = 0
    rounds_per_client: dict[str, int] = field(default_factory=dict)
    rounds_interrupted: int = 0  # rounds in which a client had to retry a command (a kill hit them)
    open_after_final_kill: list[tuple[str, str, list[str]]] = field(default_factory=list)
    voided_at_end: int = 0
    finished_at_end: int = 0
    wallet_ops: int = 0
    feed_subscriptions: int = 0  # times the event feed client subscribed (again after each kill)
    client_errors: dict[str, int] = field(default_factory=dict)  # by code, every failed attempt
    unexpected: list[str] = field(default_factory=list)
    server_errors: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems and not self.unexpected

    def render(self) -> str:
        lines = [
            f"crash harness on {self.store}: seed {self.seed}, {self.clients} clients, {self.seconds:.1f}s "
            f"(play {self.play_seconds:.1f}s, checks {self.check_seconds:.1f}s)",
            f"  kills while serving: {self.kills}; kills during start-up: {self.startup_kills}; "
            f"starts: {self.starts} (median start-up {self.startup_median:.2f}s)",
            f"  rounds closed by clients: {self.rounds_closed}; rounds a kill interrupted: {self.rounds_interrupted}; "
            f"wallet deposits/withdrawals: {self.wallet_ops}; event feed subscriptions: {self.feed_subscriptions}",
            f"  open after the final kill: {len(self.open_after_final_kill)} "
            f"({Counter(p for _r, p, _l in self.open_after_final_kill)}); "
            f"voided {self.voided_at_end}, finished {self.finished_at_end}",
            f"  client errors (retried or not): {self.client_errors}",
            f"  checked: {dict(sorted(self.counts.items()))}",
        ]
        lines += findings_lines(self.unexpected, self.server_errors, [("PROBLEMS", self.problems)], self.ok)
        return "\n".join(lines)


def _kill_loop(server: ServerProcess, config: CrashConfig, rng: random.Random, report: CrashReport) -> None:
    deadline = time.monotonic() + config.max_seconds
    while report.kills < config.kills and time.monotonic() < deadline:
        time.sleep(rng.uniform(config.min_up, config.max_up))
        server.kill()
        report.kills += 1
        time.sleep(rng.uniform(0.0, config.max_down))
        while rng.random() < config.startup_kill_chance and time.monotonic() < deadline:
            server.spawn()  # killed again during start-up (opening the store, binding the port)
            time.sleep(rng.uniform(0.05, 0.8))
            server.kill()
            report.startup_kills += 1
        server.start()


def _finish_open_rounds(drivers: list[TableDriver], report: CrashReport) -> None:
    """After the final kill: each table's open round must be resumable; void every other one, finish the rest."""
    for index, driver in enumerate(drivers):
        table = driver.table()
        round_id = table.current_round_id
        if not round_id:
            continue
        current = driver.round(round_id)
        phase = pb.RoundPhase.Name(current.phase)
        legal = command_names(driver.ops.send("RoundService", "GetLegalCommands", round_id=round_id).commands)
        report.open_after_final_kill.append((round_id, phase, legal))
        if "void_round" not in legal:
            report.problems.append(f"{round_id} ({phase}) left open by the kill cannot be voided: {legal}")
        if index % 2 == 0:
            answer = driver.command(
                driver.ops,
                "RoundService",
                "VoidRound",
                f"{round_id}:void-after-crash",
                round_id=round_id,
                reason="crash harness: voided after the final kill",
            )
            report.voided_at_end += answer.round.outcome == pb.ROUND_OUTCOME_VOIDED
        else:
            closed = driver.play_round(round_id)
            report.finished_at_end += closed is not None and closed.phase == pb.ROUND_PHASE_CLOSED


def run_crash(store: Store, workdir: Path, config: CrashConfig | None = None) -> CrashReport:
    """One crash run on ``store`` (fresh), files in ``workdir``; the report (``report.ok``)."""
    config = config or CrashConfig()
    seed = config.seed if config.seed is not None else random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    report = CrashReport(store.kind, seed, config.clients)
    started = time.monotonic()
    specs = make_tables("crash", config.clients)
    wallets = [w for spec in specs for w in spec.wallets]
    tokens = Tokens.for_players(wallets)
    tokens_file = tokens.write(workdir / "tokens.json")
    stats = Stats()
    with servers() as running:
        server = ServerProcess(store, tokens_file, workdir / "server.log", name="pokdeng serve")
        running.append(server)
        server.start()
        drivers = [
            TableDriver(spec, HarnessClient(server.target), tokens, name=f"crash-c{i}") for i, spec in enumerate(specs)
        ]
        feed_client = HarnessClient(server.target, tokens.auditor)
        follower = FeedFollower(feed_client, threading.Event(), max_seconds=config.max_seconds + 300)
        try:
            for driver in drivers:
                driver.setup()
            feed_thread = _play_under_kills(server, drivers, follower, config, rng, report)
            server.kill()  # the final kill: rounds are left where the clients stopped
            report.kills += 1
            server.start()
            _finish_open_rounds(drivers, report)
            follower.finish()  # everything is written: the feed reads up to the head and ends
            feed_thread.join(timeout=120)
            report.feed_subscriptions = follower.subscriptions
            if not follower.done:
                report.problems.append(f"the event feed client did not finish: {dict(follower.errors)}")
            _tally(drivers, report, stats)
            _audit(server, store, tokens, [spec.table_id for spec in specs], wallets, drivers, follower, report)
        finally:  # closed channels end every client thread at its next call
            follower.stop.set()
            feed_client.close()
            for driver in drivers:
                driver.client.close()
        report.starts = server.starts
        ordered = sorted(server.startup_seconds)
        report.startup_median = ordered[len(ordered) // 2] if ordered else 0.0
        report.server_errors = server.log_errors()
    report.client_errors = _client_errors(stats)
    report.seconds = time.monotonic() - started
    return report


def _client_errors(stats: Stats) -> dict[str, int]:
    """The clients' errors by status code, whatever the method."""
    errors: Counter[str] = Counter()
    for (_rpc, code), n in stats.errors.items():
        errors[code] += n
    return dict(errors)


def _play_under_kills(
    server: ServerProcess,
    drivers: Sequence[TableDriver],
    follower: FeedFollower,
    config: CrashConfig,
    rng: random.Random,
    report: CrashReport,
) -> threading.Thread:
    """The clients play and the feed follows while the server is killed and restarted ``config.kills`` times;
    then the clients stop. The feed's thread, still running."""
    stop = threading.Event()
    hard_deadline = time.monotonic() + config.max_seconds + 60
    threads = [
        threading.Thread(target=d.play, args=(stop,), kwargs={"deadline": hard_deadline}, daemon=True) for d in drivers
    ]
    feed_thread = threading.Thread(target=follower.run, daemon=True)
    feed_thread.start()
    for thread in threads:
        thread.start()
    play_started = time.monotonic()
    try:
        _kill_loop(server, config, rng, report)
        if report.kills < config.kills:  # (the loop's time bound is a hang guard, not a budget)
            report.problems.append(
                f"the kill loop made {report.kills} of its {config.kills} kills in {config.max_seconds:g}s"
            )
        time.sleep(rng.uniform(config.min_up, config.max_up))
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=120)
    if any(t.is_alive() for t in threads):
        report.problems.append("a client did not stop within 120 s")
    report.play_seconds = time.monotonic() - play_started
    return feed_thread


def _tally(drivers: Sequence[TableDriver], report: CrashReport, stats: Stats) -> None:
    """What the clients did: their unexpected errors, rounds closed and interrupted, wallet operations, calls."""
    for driver in drivers:
        report.unexpected.extend(f"{driver.name}: {u}" for u in driver.unexpected)
        report.rounds_closed += len(driver.closed)
        report.rounds_per_client[driver.name] = len(driver.closed)
        report.rounds_interrupted += len(driver.interrupted)
        report.wallet_ops += len(driver.ledger) - len(driver.spec.wallets)
        stats.merge(driver.client.stats)


def _audit(
    server: ServerProcess,
    store: Store,
    tokens: Tokens,
    tables: list[str],
    wallets: list[str],
    drivers: Sequence[TableDriver],
    follower: FeedFollower,
    report: CrashReport,
) -> None:
    """The audits: through the API of the restarted server, then in the store with the server stopped."""
    ledger, acked = merged_ledger(drivers), all_acked(drivers)
    checks_started = time.monotonic()
    found = audit_run(server, store, tokens, tables, wallets, ledger, acked, feed=follower.items)
    report.check_seconds = time.monotonic() - checks_started
    report.problems.extend(found.problems)
    report.counts = dict(found.counts)


@contextlib.contextmanager
def fresh_store(kind: str, workdir: Path, postgres_url: str | None = None) -> Iterator[Store]:
    if kind == "sqlite":
        yield Store.sqlite(workdir / "pokdeng.sqlite")
        return
    with postgres_databases(postgres_url) as new_database:
        yield Store.postgres(new_database())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pokdeng_testkit.harness.crash", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument(
        "--postgres-url", help="a PostgreSQL database to use (a fresh schema in it); default: a throwaway cluster"
    )
    parser.add_argument("--kills", type=int, default=30, help="kills while serving (default 30)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients, one table each (default 8)")
    parser.add_argument("--seed", type=int, help="the kill schedule's seed (default: random, printed)")
    parser.add_argument("--workdir", help="where the store (SQLite), token file and server log go (default: temporary)")
    parser.add_argument("--json", help="also write the report as JSON to this file")
    args = parser.parse_args(argv)
    config = CrashConfig(kills=args.kills, clients=args.clients, seed=args.seed)
    with contextlib.ExitStack() as stack:
        if args.workdir:
            workdir = Path(args.workdir)
            workdir.mkdir(parents=True, exist_ok=True)
        else:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="pokdeng-crash-")))
        store = stack.enter_context(fresh_store(args.store, workdir, args.postgres_url))
        report = run_crash(store, workdir, config)
    return finish(report, args.json)


if __name__ == "__main__":
    sys.exit(main())
