"""Two ``pokdeng serve`` replicas on one PostgreSQL store, clients sharing tables and wallets.

    python -m pokdeng_testkit.harness.replicas [--seconds 15] [--tables 5] [--clock-tables 6] [--postgres-url URL]

* **Shared tables.** Each table is played by two drivers at once, one through each replica
  (``driver.TableDriver`` in shared mode, taking decisions in opposite orders). Both place every
  stake and take every decision, with request ids derived from the round and its state, so the
  two often send the same request at the same moment through different servers (one carries it
  out, the other's answer is the replay), and as often different requests on the same round and
  wallets (one of them meets a version conflict in the store and the server retries it; a
  conflict that outlasts the server's retries is ABORTED and the client retries the same request
  id). A command decided on a state that another replica has moved past is refused
  (FAILED_PRECONDITION) and the driver reads the round again.
* **Shared wallets.** A common wallet backs a hand at every classic table and bets at the ante
  table; every driver, and two wallet hammers (one per replica), deposit to and withdraw from it
  and the tables' wallets while they are staked.
* **Turn clocks.** Both replicas run their turn clock. Clock tables (turn timeout 1 s) deal rounds
  in which nobody acts: every wait must end in exactly one timeout (one ``turn_timed_out`` and one
  ``timeout:`` request record per wait) and never before the wait has lasted the table's timeout.

At the end ``checks.audit_api`` (through replica A; the replicas must agree on every table and
wallet) and ``checks.audit_store`` (replicas stopped): nothing lost or doubled, money balances,
every round verifies.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from pokdeng_client.v1 import pokdeng_pb2 as pb

from .checks import audit_api, audit_store
from .client import HarnessClient, Stats
from .clocks import CLOCK_TIMEOUT, check_clock_round, clock_table, request_ids, run_clock_table
from .driver import MAX_UNEXPECTED, TableDriver, TableSpec, all_acked, merged_ledger
from .findings import Findings, findings_lines, finish
from .server import ServerProcess, Store, postgres_databases, servers
from .tokens import Tokens

COMMON = "rep-common"
PROFILES = ("classic", "kingmaker", "room", "ante")


@dataclass
class ReplicaConfig:
    seconds: float = 15.0
    tables: int = 5
    clock_tables: int = 6
    clock_rounds: int = 2  # rounds per clock table, one after the other
    hammer_ops: int = 400  # deposits/withdrawals per hammer at most
    # a shared table that closed fewer rounds in ``seconds`` (a loaded machine) goes on until it has, for at
    # most ``extra_seconds`` more: what a test needs is the rounds, however long they take
    min_rounds: int = 0
    extra_seconds: float = 60.0


@dataclass
class ReplicaReport:
    seconds: float = 0.0
    rounds_closed: int = 0
    rounds_per_table: dict[str, int] = field(default_factory=dict)
    replayed: dict[str, int] = field(default_factory=dict)  # answers that were replays, by RPC
    refused: dict[str, int] = field(default_factory=dict)  # stale decisions refused, by RPC
    aborted: int = 0  # ABORTED answers (conflicts that outlasted the server's retries), retried
    conflicted_rows: int | None = None  # event rows inserted by transactions the store rolled back (conflicts)
    client_errors: dict[str, int] = field(default_factory=dict)
    wallet_ops: int = 0
    clock_rounds: int = 0
    clock_timeouts: int = 0
    clock_gaps: tuple[float, float] = (0.0, 0.0)  # shortest and longest wait before a timeout, seconds
    unexpected: list[str] = field(default_factory=list)
    server_errors: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    clock_problems: list[str] = field(default_factory=list)
    clock_early: list[str] = field(default_factory=list)  # timeouts before the wait had lasted the timeout

    @property
    def ok(self) -> bool:
        return not self.problems and not self.unexpected and not self.clock_problems and not self.clock_early

    def render(self) -> str:
        lines = [
            f"replicas: 2 servers on one PostgreSQL store, {self.seconds:.1f}s",
            f"  rounds closed at shared tables: {self.rounds_closed} {self.rounds_per_table}",
            f"  replays (the other replica had carried the request out): {sum(self.replayed.values())} {self.replayed}",
            f"  stale decisions refused: {sum(self.refused.values())} {self.refused}; "
            f"ABORTED (retried): {self.aborted}",
            f"  version conflicts in the store (event rows of rolled-back saves, retried by the servers): "
            f"{self.conflicted_rows}",
            f"  deposits/withdrawals on shared wallets: {self.wallet_ops}; client errors: {self.client_errors}",
            f"  turn clocks: {self.clock_rounds} rounds, {self.clock_timeouts} timeouts, "
            f"waits before a timeout {self.clock_gaps[0]:.2f}-{self.clock_gaps[1]:.2f}s (timeout {CLOCK_TIMEOUT}s)",
            f"  checked: {dict(sorted(self.counts.items()))}",
        ]
        problems = [
            ("PROBLEMS", self.problems),
            ("TURN CLOCK PROBLEMS", self.clock_problems),
            ("TURN CLOCK: TIMED OUT EARLY", self.clock_early),
        ]
        lines += findings_lines(self.unexpected, self.server_errors, problems, self.ok)
        return "\n".join(lines)


def shared_tables(count: int) -> list[TableSpec]:
    specs = []
    for i in range(count):
        profile = PROFILES[i % len(PROFILES)]
        players = tuple(f"rep-{i}-p{j}" for j in range(3))
        if profile == "ante":
            players = (COMMON, *players[1:])
        specs.append(TableSpec(f"rep-{i}", profile, players, backer=COMMON if profile == "classic" else None))
    return specs


@dataclass
class WalletHammer:
    """Deposits and withdrawals, as fast as they go, on wallets that are being staked."""

    name: str
    client: HarnessClient
    wallets: Sequence[str]
    max_ops: int
    ledger: dict[str, tuple[str, int]] = field(default_factory=dict)
    acked: set[str] = field(default_factory=set)
    unexpected: list[str] = field(default_factory=list)

    def run(self, deadline: float) -> None:
        for k in range(1, self.max_ops + 1):
            if time.monotonic() > deadline:
                return
            wallet = self.wallets[k % len(self.wallets)]
            rid = f"{self.name}:{k}"
            method, amount = ("Deposit", 1000 + k) if k % 2 else ("Withdraw", 900 + k)
            try:
                self.client.send("WalletService", method, request_id=rid, wallet_id=wallet, amount=amount)
            except grpc.RpcError as error:
                code = error.code() if isinstance(error, grpc.Call) else None
                if code != grpc.StatusCode.FAILED_PRECONDITION:
                    self.unexpected.append(f"{self.name} {rid}: {code}: {error}")
                    return
                continue
            except Exception as error:  # e.g. GaveUp, or the channel closed because the harness is ending
                self.unexpected.append(f"{self.name} {rid}: {type(error).__name__}: {error}")
                return
            self.acked.add(rid)
            self.ledger[rid] = (wallet, amount if method == "Deposit" else -amount)


def _play_shared(driver: TableDriver, stop: threading.Event, deadline: float, config: ReplicaConfig) -> None:
    """A shared table's rounds for ``config.seconds`` (every client at once: the contention), then, if it
    closed fewer than ``config.min_rounds``, on until it has or ``config.extra_seconds`` have passed."""
    driver.play(stop, deadline=deadline)
    latest = deadline + config.extra_seconds
    while (
        len(driver.closed) < config.min_rounds
        and time.monotonic() < latest
        and not stop.is_set()
        and len(driver.unexpected) < MAX_UNEXPECTED
    ):
        driver.play(stop, config.min_rounds, latest)  # (returns once it has seen min_rounds rounds close)


def rolled_back_rows(store: Store) -> int | None:
    """Rows inserted into the events table by transactions that rolled back: the losers of version conflicts.

    PostgreSQL counts every inserted tuple (``n_tup_ins``), committed or not; the events table is
    never updated or deleted from, so inserted minus live tuples are the rolled-back ones. (The
    statistics are flushed when the servers' connections close: read after they stopped.)
    """
    import psycopg

    from pokdeng_service.application.config import postgres_settings

    settings = postgres_settings(store.url)
    schema = settings.get("POSTGRES_SCHEMA", "public")
    try:
        with psycopg.connect(
            host=settings["POSTGRES_HOST"],
            port=int(settings["POSTGRES_PORT"]),
            user=settings["POSTGRES_USER"],
            password=settings["POSTGRES_PASSWORD"],
            dbname=settings["POSTGRES_DBNAME"],
            autocommit=True,
        ) as conn:
            time.sleep(0.5)  # let the servers' backends exit and flush their statistics
            row = conn.execute(
                "SELECT sum(n_tup_ins - n_live_tup) FROM pg_stat_user_tables WHERE schemaname = %s AND relname LIKE %s",
                (schema, "%events"),
            ).fetchone()
    except psycopg.Error:
        return None
    return int(row[0]) if row and row[0] is not None else None


def run_replicas(store: Store, workdir: Path, config: ReplicaConfig | None = None) -> ReplicaReport:
    config = config or ReplicaConfig()
    report = ReplicaReport()
    started = time.monotonic()
    specs = shared_tables(config.tables)
    clock_specs = [clock_table(i) for i in range(config.clock_tables)]
    wallets = sorted({w for spec in (*specs, *clock_specs) for w in spec.wallets})
    tokens = Tokens.for_players(wallets)
    tokens_file = tokens.write(workdir / "tokens.json")
    with servers() as running:
        replicas = [
            ServerProcess(store, tokens_file, workdir / f"replica-{name}.log", name=f"replica {name}") for name in "ab"
        ]
        running.extend(replicas)
        replicas[0].start()  # the first creates the tables of the store
        replicas[1].start()
        a, b = (server.target for server in replicas)
        clients: list[HarnessClient] = []
        try:
            drivers = _shared_drivers(specs, (a, b), tokens, clients)
            for driver in drivers:  # each table set up through both replicas: the second time, replays
                driver.setup()
            clock_drivers = _clock_drivers(clock_specs, (a, b), tokens, clients)
            hammers = _hammers(specs, (a, b), tokens, config, clients)
            _play(drivers, clock_drivers, hammers, config, report)
            ledger, acked = _tally(report, drivers, clock_drivers, hammers, clients)
            operator = HarnessClient(a, tokens.operator)
            clients.append(operator)
            _check_clocks(report, operator, tokens, clock_specs, config)
            other = HarnessClient(b, tokens.operator)
            clients.append(other)
            check_agreement(report.problems, operator, other, [s.table_id for s in (*specs, *clock_specs)], wallets)
            tables = [spec.table_id for spec in (*specs, *clock_specs)]
            found = Findings()
            found.merge(audit_api(a, tokens, tables, wallets, ledger, acked))
            for server in replicas:
                server.stop()
            report.conflicted_rows = rolled_back_rows(store)
            found.merge(audit_store(store, tables, wallets, ledger, acked))
            report.problems.extend(found.problems)
            report.counts = dict(found.counts)
        finally:
            for client in clients:
                client.close()
        for server in replicas:
            report.server_errors.extend(f"{server.name}: {line}" for line in server.log_errors())
    report.seconds = time.monotonic() - started
    return report


def _shared_drivers(
    specs: Sequence[TableSpec], targets: tuple[str, str], tokens: Tokens, clients: list[HarnessClient]
) -> list[TableDriver]:
    """Two drivers of each shared table, one through each replica (the second in reverse order)."""
    drivers: list[TableDriver] = []
    for i, spec in enumerate(specs):
        pool = (*spec.wallets, COMMON) if COMMON not in spec.wallets else spec.wallets
        for side, target in enumerate(targets):
            client = HarnessClient(target)
            clients.append(client)
            drivers.append(
                TableDriver(
                    spec,
                    client,
                    tokens,
                    name=f"rep-{i}-{'ab'[side]}",
                    shared=True,
                    reverse=bool(side),
                    wallet_every=2,
                    wallet_pool=pool,
                )
            )
    return drivers


def _clock_drivers(
    clock_specs: Sequence[TableSpec], targets: tuple[str, str], tokens: Tokens, clients: list[HarnessClient]
) -> list[TableDriver]:
    """One driver of each clock table, through the replicas in turn; each set up."""
    clock_drivers = []
    for i, spec in enumerate(clock_specs):
        client = HarnessClient(targets[i % 2])
        clients.append(client)
        clock_drivers.append(TableDriver(spec, client, tokens, name=spec.table_id, wallet_every=0))
        clock_drivers[-1].setup()
    return clock_drivers


def _hammers(
    specs: Sequence[TableSpec],
    targets: tuple[str, str],
    tokens: Tokens,
    config: ReplicaConfig,
    clients: list[HarnessClient],
) -> list[WalletHammer]:
    """A wallet hammer through each replica, on the common wallet and a player of each shared table."""
    hammers = []
    for side, target in enumerate(targets):
        client = HarnessClient(target)
        clients.append(client)
        hammers.append(
            WalletHammer(
                f"hammer-{'ab'[side]}",
                client.as_token(tokens.operator),
                [COMMON, *(spec.players[1] for spec in specs)],
                config.hammer_ops,
            )
        )
    return hammers


def _play(
    drivers: Sequence[TableDriver],
    clock_drivers: Sequence[TableDriver],
    hammers: Sequence[WalletHammer],
    config: ReplicaConfig,
    report: ReplicaReport,
) -> None:
    """The shared tables, the hammers and the clock tables played at once, to the deadline."""
    stop = threading.Event()
    deadline = time.monotonic() + config.seconds
    clock_closed: list[str] = []
    threads = [threading.Thread(target=_play_shared, args=(d, stop, deadline, config), daemon=True) for d in drivers]
    threads += [threading.Thread(target=h.run, args=(deadline,), daemon=True) for h in hammers]
    threads += [
        threading.Thread(
            target=run_clock_table,
            args=(d, config.clock_rounds, deadline + config.extra_seconds, clock_closed),
            daemon=True,
        )
        for d in clock_drivers
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=config.seconds + 120)
    if any(t.is_alive() for t in threads):
        stop.set()
        report.problems.append("a client did not stop in time")


def _tally(
    report: ReplicaReport,
    drivers: Sequence[TableDriver],
    clock_drivers: Sequence[TableDriver],
    hammers: Sequence[WalletHammer],
    clients: Sequence[HarnessClient],
) -> tuple[dict[str, tuple[str, int]], set[str]]:
    """What the clients did (unexpected errors, refusals, rounds, replays, aborts, errors, wallet operations);
    the ledger of wallet operations and the acknowledged requests, for the audits."""
    stats = Stats()
    everyone = [*drivers, *clock_drivers]
    for driver in everyone:
        report.unexpected.extend(f"{driver.name}: {u}" for u in driver.unexpected)
        for name, n in driver.refused.items():
            report.refused[name] = report.refused.get(name, 0) + n
    for hammer in hammers:
        report.unexpected.extend(hammer.unexpected)
    for client in clients:
        stats.merge(client.stats)
    closed = {r for d in drivers for r in d.closed}
    report.rounds_closed = len(closed)
    report.rounds_per_table = dict(Counter(r.rsplit("#", 1)[0] for r in closed))
    report.replayed = dict(stats.replayed)
    report.aborted = stats.error_count("ABORTED")
    report.client_errors = dict(Counter(code for (_rpc, code), n in stats.errors.items() for _ in range(n)))
    ledger = merged_ledger(everyone)
    for hammer in hammers:
        ledger.update(hammer.ledger)
    acked = all_acked(everyone).union(*(h.acked for h in hammers))
    report.wallet_ops = sum(1 for rid in ledger if not rid.startswith("setup:"))
    return ledger, acked


def _check_clocks(
    report: ReplicaReport,
    operator: HarnessClient,
    tokens: Tokens,
    clock_specs: Sequence[TableSpec],
    config: ReplicaConfig,
) -> None:
    """The turn clocks: every wait ended by exactly one timeout, never early; every clock round closed."""
    requests = request_ids(operator.as_token(tokens.auditor))
    waits: list[float] = []
    for spec in clock_specs:
        table = operator.send("TableService", "GetTable", table_id=spec.table_id).table
        for n in range(1, table.round_no + 1):
            r = operator.send("RoundService", "GetRound", round_id=f"{spec.table_id}#{n}").round
            waits.extend(check_clock_round(report.clock_problems, report.clock_early, r, CLOCK_TIMEOUT, requests))
            report.clock_rounds += r.phase == pb.ROUND_PHASE_CLOSED
    report.clock_timeouts = len(waits)
    report.clock_gaps = (min(waits), max(waits)) if waits else (0.0, 0.0)
    expected_clock = config.clock_tables * config.clock_rounds
    if report.clock_rounds != expected_clock:
        report.clock_problems.append(f"{report.clock_rounds} of {expected_clock} clock rounds closed")


def check_agreement(
    problems: list[str], one: HarnessClient, other: HarnessClient, tables: Sequence[str], wallets: Sequence[str]
) -> None:
    """Both replicas tell the same story: every table and every wallet alike (else a line in ``problems``)."""
    for table_id in tables:
        if one.send("TableService", "GetTable", table_id=table_id) != other.send(
            "TableService", "GetTable", table_id=table_id
        ):
            problems.append(f"the replicas disagree on table {table_id}")
    for wallet in wallets:
        if one.send("WalletService", "GetWallet", wallet_id=wallet) != other.send(
            "WalletService", "GetWallet", wallet_id=wallet
        ):
            problems.append(f"the replicas disagree on wallet {wallet}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pokdeng_testkit.harness.replicas", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--seconds", type=float, default=15.0, help="how long the shared tables are played")
    parser.add_argument("--tables", type=int, default=5, help="shared tables (two clients each, one per replica)")
    parser.add_argument("--clock-tables", type=int, default=6, help="tables whose turns the clocks time out")
    parser.add_argument("--clock-rounds", type=int, default=2, help="rounds per clock table")
    parser.add_argument("--postgres-url", help="a PostgreSQL database (a fresh schema in it); default: throwaway")
    parser.add_argument("--workdir", help="where the token file and the servers' logs go (default: temporary)")
    parser.add_argument("--json", help="also write the report as JSON to this file")
    args = parser.parse_args(argv)
    config = ReplicaConfig(args.seconds, args.tables, args.clock_tables, args.clock_rounds)
    with contextlib.ExitStack() as stack:
        if args.workdir:
            workdir = Path(args.workdir)
            workdir.mkdir(parents=True, exist_ok=True)
        else:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="pokdeng-replicas-")))
        new_database = stack.enter_context(postgres_databases(args.postgres_url))
        report = run_replicas(Store.postgres(new_database()), workdir, config)
    return finish(report, args.json)


if __name__ == "__main__":
    sys.exit(main())
