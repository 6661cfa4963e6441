"""A PostgreSQL failover under load: the primary stops, the synchronous standby is promoted, the service follows.

    python -m pokdeng_testkit.harness.failover [--seconds 6] [--clients 3] [--fail-after 2] [--promote-after 0.5]

Two throwaway clusters (``pokdeng_testkit/pgstandby.py``): a primary and its synchronous streaming standby. One
``pokdeng serve`` whose store URL is libpq's multi-host form with ``target_session_attrs=read-write``
(``postgresql://…@127.0.0.1:P1,127.0.0.1:P2/db?target_session_attrs=read-write``): its sessions go to
whichever server takes writes. Clients (``driver.TableDriver``, one table each, request ids derived
from the round) play rounds, and a pinger deposits 1 to a wallet every 50 ms, each retrying the same
request id on UNAVAILABLE. ``--fail-after`` seconds into the play the primary is stopped as by
``pg_ctl stop -m immediate`` (SIGQUIT to its postmaster), and ``--promote-after`` seconds later the
standby is promoted (``pg_ctl promote``). Measured: when health turned NOT_SERVING and SERVING again,
and the first command that succeeded after the stop (the resume, which must come within 10 s).

Then the checks: every command acknowledged before the stop is in the store (synchronous replication:
nothing acknowledged is lost); the commands in flight at the stop, retried with their request ids, were
carried out once (a replay if the standby had their commit); every command answered, asked again with
its request id, gets its first answer (a replay with the same events); ``checks.audit_api`` and
``checks.audit_store`` (nothing lost or doubled, money balanced, every round verifies); and
``pokdeng verify --all`` on the promoted store passes.
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from .answers import Answers, RecordingClient, check_first_answers, sample
from .checks import audit_run
from .driver import TableDriver, all_acked, make_tables, merged_ledger
from .findings import findings_lines, finish
from .server import ROOT, ServerProcess, Store, child_env, servers
from .tokens import Tokens

PING_WALLET = "fo-ping"
SERVING = health_pb2.HealthCheckResponse.SERVING


@dataclass
class FailoverConfig:
    seconds: float = 6.0  # the clients start no new round after this (they finish the one in play)
    clients: int = 3
    fail_after: float = 2.0  # seconds of play before the primary stops
    promote_after: float = 0.5  # seconds from the stop to pg_ctl promote
    resume_limit: float = 10.0  # the service must take commands again this soon after the standby was promoted
    first_answers: int | None = 300  # answers asked again besides every retried one (None: all)


@dataclass
class FailoverReport:
    seconds: float = 0.0
    not_serving_after: float | None = None  # health NOT_SERVING (or unanswered), seconds after the stop
    promoted_after: float = 0.0  # the standby took writes, seconds after the stop
    serving_after: float | None = None  # health SERVING again
    resumed_after: float | None = None  # the first command that succeeded after the stop
    rounds_closed: int = 0
    rounds_before: int = 0  # closed before the stop
    acked_before: int = 0  # commands answered before the stop
    in_flight: int = 0  # commands sent before the stop and answered after it (their first try was lost)
    in_flight_replayed: int = 0  # of those, answered as replays (the standby had their commit)
    first_answers: int = 0  # commands asked again afterwards: each a replay with its first answer's events
    pings: int = 0
    client_errors: dict[str, int] = field(default_factory=dict)
    verify_rc: int | None = None
    verify_tail: str = ""
    counts: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    server_errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems and not self.unexpected and self.verify_rc == 0

    def render(self) -> str:
        def s(value: float | None) -> str:
            return "never" if value is None else f"{value:.2f}s"

        lines = [
            f"failover: primary stopped, standby promoted under load, {self.seconds:.1f}s in all",
            f"  after the stop: health NOT_SERVING {s(self.not_serving_after)}, standby promoted "
            f"{s(self.promoted_after)}, health SERVING {s(self.serving_after)}, first command through "
            f"{s(self.resumed_after)}",
            f"  rounds closed: {self.rounds_closed} ({self.rounds_before} before the stop); pings: {self.pings}",
            f"  commands answered before the stop: {self.acked_before}; in flight at the stop: {self.in_flight} "
            f"({self.in_flight_replayed} of them replays: committed before the stop)",
            f"  asked again with their request ids: {self.first_answers}, each its first answer",
            f"  client errors (retried): {self.client_errors}; pokdeng verify --all: exit {self.verify_rc}",
            f"  checked: {dict(sorted(self.counts.items()))}",
        ]
        said = [f"  verify --all said: {self.verify_tail}"] if self.verify_rc else []
        lines += findings_lines(self.unexpected, self.server_errors, [("PROBLEMS", self.problems)], self.ok, said)
        return "\n".join(lines)


@dataclass
class HealthWatch:
    """Health every 50 ms: (monotonic time, SERVING or not) at each change."""

    target: str
    changes: list[tuple[float, bool]] = field(default_factory=list)

    def run(self, stop: threading.Event) -> None:
        with grpc.insecure_channel(self.target) as channel:
            stub: Any = health_pb2_grpc.HealthStub(channel)
            while not stop.is_set():
                try:
                    serving = stub.Check(health_pb2.HealthCheckRequest(), timeout=0.5).status == SERVING
                except grpc.RpcError:
                    serving = False
                if not self.changes or self.changes[-1][1] != serving:
                    self.changes.append((time.monotonic(), serving))
                stop.wait(0.05)

    def first(self, serving: bool, after: float) -> float | None:
        return next((t for t, state in self.changes if state == serving and t >= after), None)


@dataclass
class Pinger:
    """A deposit of 1 every 50 ms, each with its own request id, retried with it until answered."""

    client: RecordingClient
    ledger: dict[str, tuple[str, int]] = field(default_factory=dict)
    acked: set[str] = field(default_factory=set)
    unexpected: list[str] = field(default_factory=list)

    def run(self, stop: threading.Event) -> None:
        for n in range(1, 100_000):
            if stop.is_set():
                return
            rid = f"ping:{n}"
            try:
                self.client.send("WalletService", "Deposit", request_id=rid, wallet_id=PING_WALLET, amount=1)
            except Exception as error:  # a thread's target: report, never die silently
                self.unexpected.append(f"{rid}: {type(error).__name__}: {error}")
                return
            self.acked.add(rid)
            self.ledger[rid] = (PING_WALLET, 1)
            stop.wait(0.05)


OUTAGE = ("StoreUnreachable", "OperationalError", "InterfaceError", "store probe failed", "connection")


def outage(line: str) -> bool:
    """An error line of the server's log that says the store could not be reached (the failover itself)."""
    return any(mark in line for mark in OUTAGE)


def verify_all(url: str, partitions: list[str] | None = None) -> tuple[int, str]:
    """``pokdeng verify --all --quiet`` on the store (a URL, or a partition map), as a child process."""
    store = [f"--partition-url={k}={u}" for k, u in enumerate(partitions)] if partitions else ["--postgres-url", url]
    done = subprocess.run(
        [sys.executable, "-m", "pokdeng_service.cli", "verify", "--all", "--quiet", *store],
        cwd=str(ROOT),
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return done.returncode, (done.stdout + done.stderr).strip()[-600:]


def run_failover(pair: Any, workdir: Path, config: FailoverConfig | None = None) -> FailoverReport:
    """The failover of ``pair`` (a started ``pokdeng_testkit.pgstandby.ReplicatedPostgres``) under load."""
    config = config or FailoverConfig()
    report = FailoverReport()
    started = time.monotonic()
    specs = make_tables("fo", config.clients)
    wallets = [w for spec in specs for w in spec.wallets]
    tokens = Tokens.for_players(wallets)
    store = Store.postgres(pair.url)
    answers = Answers()
    with servers() as running, contextlib.ExitStack() as closing:
        server = ServerProcess(store, tokens.write(workdir / "tokens.json"), workdir / "server.log", workers=8)
        running.append(server)
        server.start()

        def client(token: str | None = None) -> RecordingClient:
            made = RecordingClient([server.target], answers, token, patience=60.0)
            closing.callback(made.close)
            return made

        drivers = [TableDriver(spec, client(), tokens, name=f"fo-c{i}") for i, spec in enumerate(specs)]
        for driver in drivers:
            driver.setup()
        pinger = Pinger(client(tokens.operator))
        pinger.client.send("WalletService", "OpenWallet", request_id="setup:ping", wallet_id=PING_WALLET)
        pinger.acked.add("setup:ping")
        watch = HealthWatch(server.target)
        stopped = _fail_over(pair, config, drivers, pinger, watch, report)
        kept = answers.all()
        _time_the_failover(report, watch, kept, stopped)
        _tally(report, drivers, pinger)
        _judge(report, config, watch)
        first = check_first_answers(client(tokens.operator), sample(kept, config.first_answers))
        report.first_answers = first.checked
        report.problems.extend(first.problems)
        _audit(report, server, store, tokens, [spec.table_id for spec in specs], wallets, drivers, pinger)
    report.verify_rc, report.verify_tail = verify_all(pair.url)
    report.seconds = time.monotonic() - started
    return report


def _fail_over(
    pair: Any,
    config: FailoverConfig,
    drivers: Sequence[TableDriver],
    pinger: Pinger,
    watch: HealthWatch,
    report: FailoverReport,
) -> float:
    """The clients play, the pinger pings and health is watched while the primary crashes and the standby is
    promoted; the clients play on to the deadline. When the primary stopped (``time.monotonic``)."""
    stop, halt = threading.Event(), threading.Event()  # halt: never set (the drivers stop at the deadline)
    deadline = time.monotonic() + config.seconds
    threads = [threading.Thread(target=d.play, args=(halt,), kwargs={"deadline": deadline}) for d in drivers]
    helpers = [threading.Thread(target=pinger.run, args=(stop,)), threading.Thread(target=watch.run, args=(stop,))]
    for thread in (*threads, *helpers):
        thread.start()
    try:
        time.sleep(config.fail_after)
        report.rounds_before = sum(len(d.closed) for d in drivers)
        stopped = time.monotonic()
        pair.crash_primary()
        time.sleep(config.promote_after)
        pair.promote()
        report.promoted_after = time.monotonic() - stopped
        for thread in threads:
            thread.join(timeout=config.seconds + 120)
    finally:
        stop.set()
        for thread in helpers:
            thread.join(timeout=30)
    if any(t.is_alive() for t in threads):
        halt.set()
        report.problems.append("a client did not finish in time")
    return stopped


def _time_the_failover(report: FailoverReport, watch: HealthWatch, kept: Sequence[Any], stopped: float) -> None:
    """From the primary's stop: health NOT_SERVING, SERVING again, the first command through; the commands
    acknowledged before, and those in flight across it (replayed or not)."""
    down = watch.first(False, stopped)
    report.not_serving_after = None if down is None else down - stopped
    up = watch.first(True, down) if down is not None else None
    report.serving_after = None if up is None else up - stopped
    through = [a.answered for a in kept if a.answered > stopped and (a.sent > stopped or a.retried)]
    report.resumed_after = min(through) - stopped if through else None
    report.acked_before = sum(1 for a in kept if a.answered < stopped)
    flying = [a for a in kept if a.sent < stopped < a.answered and a.retried]
    report.in_flight = len(flying)
    report.in_flight_replayed = sum(1 for a in flying if a.replayed)


def _tally(report: FailoverReport, drivers: Sequence[TableDriver], pinger: Pinger) -> None:
    """What the clients did: pings, rounds closed, unexpected errors, errors by status code."""
    report.pings = len(pinger.acked)
    report.rounds_closed = sum(len(d.closed) for d in drivers)
    for driver in drivers:
        report.unexpected.extend(f"{driver.name}: {u}" for u in driver.unexpected)
    report.unexpected.extend(pinger.unexpected)
    errors: Counter[str] = Counter()
    for made in (*(d.client for d in drivers), pinger.client):
        errors.update({code: n for (_rpc, code), n in made.stats.errors.items()})
    report.client_errors = dict(errors)


def _judge(report: FailoverReport, config: FailoverConfig, watch: HealthWatch) -> None:
    """The failover's own problems: no command through soon after the promotion, health not seen going down
    and up, no round closed after it."""
    # (from the promotion, not the stop: how long pg_ctl promote takes is PostgreSQL's and the machine's)
    if report.resumed_after is None or report.resumed_after - report.promoted_after >= config.resume_limit:
        report.problems.append(f"no command went through within {config.resume_limit}s of the promotion")
    if report.not_serving_after is None or report.serving_after is None:
        report.problems.append(f"health did not go NOT_SERVING then SERVING: {watch.changes}")
    if report.rounds_closed <= report.rounds_before:
        report.problems.append("no round closed after the failover")


def _audit(
    report: FailoverReport,
    server: ServerProcess,
    store: Store,
    tokens: Tokens,
    tables: list[str],
    wallets: list[str],
    drivers: Sequence[TableDriver],
    pinger: Pinger,
) -> None:
    """The audits (the pinger's wallet with the players'), through the API then in the store; the server's
    logged errors that are not the outage's."""
    ledger = {**merged_ledger(drivers), **pinger.ledger}
    acked = all_acked(drivers) | pinger.acked
    found = audit_run(server, store, tokens, tables, [*wallets, PING_WALLET], ledger, acked)
    report.problems.extend(found.problems)
    report.counts = dict(found.counts)
    report.server_errors = server.log_errors()
    report.problems.extend(f"server log: {line[:300]}" for line in report.server_errors if not outage(line))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pokdeng_testkit.harness.failover", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--seconds", type=float, default=6.0, help="how long the clients play")
    parser.add_argument("--clients", type=int, default=3, help="tables, one client each")
    parser.add_argument("--fail-after", type=float, default=2.0, help="seconds of play before the primary stops")
    parser.add_argument("--promote-after", type=float, default=0.5, help="seconds from the stop to the promotion")
    parser.add_argument("--first-answers", type=int, help="answers asked again besides the retried ones (default: all)")
    parser.add_argument("--workdir", help="where the token file and the server's log go (default: temporary)")
    parser.add_argument("--json", help="also write the report as JSON to this file")
    args = parser.parse_args(argv)
    config = FailoverConfig(
        args.seconds, args.clients, args.fail_after, args.promote_after, first_answers=args.first_answers
    )
    from ..pgstandby import replicated_postgres

    with contextlib.ExitStack() as stack:
        if args.workdir:
            workdir = Path(args.workdir)
            workdir.mkdir(parents=True, exist_ok=True)
        else:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="pokdeng-failover-")))
        pair = stack.enter_context(replicated_postgres())
        report = run_failover(pair, workdir, config)
    return finish(report, args.json)


if __name__ == "__main__":
    sys.exit(main())
