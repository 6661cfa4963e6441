"""Partitions on separate PostgreSQL servers, served by two ``pokdeng serve`` replicas, one killed under load.

    python -m pokdeng_testkit.harness.partition_replicas [--seconds 5] [--tables 2] [--kill-after 1.5]

Two throwaway clusters (``pokdeng_testkit/pgserver.py``), one per partition: the replicas run with the same
partition map (``--partitions 2 --partition-url 0=URL0 --partition-url 1=URL1``), token file and vault
key. Tables of both partitions (``--tables`` each, their ids and wallets sharded so that each lobby lives
in one partition) are played by ``driver.TableDriver``s whose channel spreads the calls over both
replicas (gRPC round robin): consecutive commands of one round go to different processes, so each
replica's cache is always a command behind, and closes in both processes append to each store's
``RoundLog`` (the log of closed rounds) at the same time. ``--kill-after`` seconds into the play replica
A is SIGKILLed (calls in flight on it fail and are retried, with the same request ids, on B), and
``--down-for`` seconds later it is started again; once it serves and the play is over, the clients play
``--after-restart`` seconds more, through both.

Then the checks: both replicas tell the same story; every command answered, asked again with its
request id through either replica, gets its first answer; per partition ``checks.audit_api`` (its
events through the API, the replicas alternately) and ``checks.audit_store`` (its own store, the
servers stopped); ``pokdeng verify --all`` with the partition map, and on each store alone. Measured:
version conflicts in each store by the stream they hit (from PostgreSQL's log: the round log, tables,
rounds, wallets, request records), the servers' ``pokdeng_commands_retried_total``, ABORTED answers.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pokdeng_service.application.partitions import partition_of

from ..ports import free_port
from .answers import (
    Answers,
    RecordingClient,
    check_first_answers,
    log_size,
    sample,
    store_conflicts,
    stream_names,
)
from .checks import audit_api, audit_store
from .client import HarnessClient
from .driver import TableDriver, TableSpec, all_acked, make_tables, merged_ledger
from .failover import verify_all
from .findings import Findings, findings_lines, finish
from .replicas import check_agreement
from .server import ServerProcess, Store, servers
from .tokens import Tokens


@dataclass
class PartitionReplicaConfig:
    seconds: float = 5.0  # the clients start no new round after this
    tables: int = 2  # per partition
    kill_after: float = 1.5  # seconds of play before replica A is killed
    down_for: float = 0.5  # seconds before it is started again
    after_restart: float = 2.0  # seconds of play once it serves again (and the first play is over)
    first_answers: int | None = 300  # answers asked again besides every retried one (None: all)
    each_store: bool = False  # also pokdeng verify --all on each store alone (besides the partition map)


@dataclass
class PartitionReplicaReport:
    seconds: float = 0.0
    partitions: int = 0
    rounds_per_partition: dict[int, int] = field(default_factory=dict)
    killed_for: float = 0.0  # seconds replica A was down (kill to SERVING again)
    restart_seconds: float = 0.0  # of those, its start-up (spawn to SERVING)
    served_after_restart: int = 0  # commands replica A answered after its restart, while the clients played
    in_flight_at_kill: int = 0  # commands sent before the kill and answered after it, on B
    replayed: int = 0  # answers flagged replays: the other replica (or the killed one) had carried them out
    first_answers: int = 0
    aborted: int = 0  # ABORTED answers (a conflict outlasted the server's retries), retried by the clients
    client_errors: dict[str, int] = field(default_factory=dict)
    retried: dict[str, int] = field(default_factory=dict)  # the servers' pokdeng_commands_retried_total
    conflicts: dict[int, dict[str, int]] = field(default_factory=dict)  # per store: by the stream they hit
    verify: dict[str, int] = field(default_factory=dict)  # pokdeng verify --all: exit code per store and map
    counts: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    server_errors: list[str] = field(default_factory=list)
    phases: dict[str, float] = field(default_factory=dict)  # seconds

    @property
    def ok(self) -> bool:
        return not self.problems and not self.unexpected and all(rc == 0 for rc in self.verify.values())

    def phase(self, name: str, since: float) -> float:
        now = time.monotonic()
        self.phases[name] = round(now - since, 2)
        return now

    def render(self) -> str:
        lines = [
            f"partition replicas: {self.partitions} partitions on {self.partitions} PostgreSQL servers, 2 replicas, "
            f"{self.seconds:.1f}s",
            f"  rounds closed per partition: {self.rounds_per_partition}",
            f"  replica A killed, down {self.killed_for:.2f}s (start-up {self.restart_seconds:.2f}s); commands in "
            f"flight at the kill (retried on B): {self.in_flight_at_kill}; answered by A after its restart: "
            f"{self.served_after_restart}",
            f"  replays: {self.replayed}; asked again with their request ids (either replica): {self.first_answers}",
            f"  version conflicts per store, by stream: {self.conflicts}",
            f"  retried by the servers (pokdeng_commands_retried_total): {sum(self.retried.values())} "
            f"{self.retried}; ABORTED (retried by the clients): {self.aborted}",
            f"  client errors: {self.client_errors}; pokdeng verify --all: {self.verify}",
            f"  checked: {dict(sorted(self.counts.items()))}",
            f"  seconds by phase: {self.phases}",
        ]
        lines += findings_lines(self.unexpected, self.server_errors, [("PROBLEMS", self.problems)], self.ok)
        return "\n".join(lines)


def shard_for(partition: int, partitions: int) -> str:
    """A shard name whose ids live in ``partition``."""
    for i in range(10_000):
        name = f"lobby{i}"
        if partition_of(f"{name}/x", partitions) == partition:
            return name
    raise AssertionError("no shard found")  # pragma: no cover


def served_since_start(server: ServerProcess) -> int:
    """Commands the server answered (OK) since its last start, from its call log."""
    try:
        text = server.log_path.read_text(errors="replace")
    except OSError:
        return 0
    last = text.rsplit("\n--- start", 1)[-1]
    return sum(1 for line in last.splitlines() if '"request_id"' in line and '"code":"OK"' in line)


def store_url(url: str, partition: int) -> str:
    """Partition k's store alone, as one store: its URL, with its schema (``pokdeng_p<k>``) for k > 0."""
    return url if not partition else f"{url}{'&' if '?' in url else '?'}schema=pokdeng_p{partition}"


@dataclass
class MappedServer(ServerProcess):
    """``pokdeng serve`` with a partition map (``--partition-url K=URL`` each) and a metrics port."""

    partition_urls: tuple[str, ...] = ()
    metrics_port: int = 0

    def command(self) -> list[str]:
        command = super().command()
        at = command.index("--postgres-url")
        del command[at : at + 2]
        mapped = [f"--partition-url={k}={url}" for k, url in enumerate(self.partition_urls)]
        return [
            *command,
            "--partitions",
            str(len(self.partition_urls)),
            *mapped,
            "--metrics-port",
            str(self.metrics_port),
        ]

    def retried(self) -> Counter[str]:
        """``pokdeng_commands_retried_total`` by command, since this process started (empty if it is down)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as page:
                text = page.read().decode()
        except OSError:
            return Counter()
        found: Counter[str] = Counter()
        for command, value in re.findall(r'^pokdeng_commands_retried_total\{command="([^"]+)"\} (\S+)$', text, re.M):
            found[command] += int(float(value))
        return found


def run_partition_replicas(
    urls: Sequence[str], workdir: Path, config: PartitionReplicaConfig | None = None, logs: Sequence[Path] = ()
) -> PartitionReplicaReport:
    """Two replicas over the partitions of ``urls`` (one store each); ``logs``: each store's PostgreSQL log."""
    config = config or PartitionReplicaConfig()
    n = len(urls)
    report = PartitionReplicaReport(partitions=n)
    started = time.monotonic()
    specs = {k: make_tables(f"{shard_for(k, n)}/pr", config.tables) for k in range(n)}
    every: list[TableSpec] = [spec for k in range(n) for spec in specs[k]]
    wallets = sorted({w for spec in every for w in spec.wallets})
    tokens = Tokens.for_players(wallets)
    tokens_file = tokens.write(workdir / "tokens.json")
    answers = Answers()
    retried: Counter[str] = Counter()
    with servers() as running, contextlib.ExitStack() as closing:
        replicas = _replicas(urls, tokens_file, workdir)
        running.extend(replicas)
        for replica in replicas:
            replica.start()
        mark = report.phase("start", started)
        targets = [replica.target for replica in replicas]

        def spread(token: str | None = None) -> RecordingClient:
            made = RecordingClient(targets, answers, token, patience=60.0)
            closing.callback(made.close)
            return made

        drivers = {k: [TableDriver(spec, spread(), tokens, name=spec.table_id) for spec in specs[k]] for k in specs}
        everyone = [d for k in drivers for d in drivers[k]]
        for driver in everyone:
            driver.setup()
        mark = report.phase("setup", mark)
        killed = _play_through_a_kill(replicas, everyone, config, report, retried)
        sizes = [log_size(log) for log in logs]  # (the conflicts of the load, not of the checks' requests)
        _check_restarted(report, replicas[0])
        mark = report.phase("play", mark)
        kept = answers.all()
        _tally(report, kept, killed, drivers)
        one, two = (HarnessClient(target, tokens.operator) for target in targets)
        closing.callback(one.close)
        closing.callback(two.close)
        check_agreement(report.problems, one, two, [spec.table_id for spec in every], wallets)
        first = check_first_answers(spread(tokens.operator), sample(kept, config.first_answers))  # (each replica)
        mark = report.phase("first answers", mark)
        report.first_answers = first.checked
        report.problems.extend(first.problems)
        mark = _audit(report, urls, specs, drivers, replicas, targets, tokens, retried, mark)
        names = stream_names([spec.table_id for spec in every], wallets, [r for d in everyone for r in d.closed])
        report.conflicts = {k: dict(store_conflicts(log, names, sizes[k])) for k, log in enumerate(logs)}
    _verify_stores(report, urls, config)
    report.phase("verify --all", mark)
    report.seconds = time.monotonic() - started
    return report


def _replicas(urls: Sequence[str], tokens_file: Path, workdir: Path) -> list[MappedServer]:
    """Replicas A and B over the partition map of ``urls``, each with its metrics (its retries are read there)."""
    return [
        MappedServer(
            Store.postgres(urls[0]),
            tokens_file,
            workdir / f"replica-{name}.log",
            workers=8,
            name=f"replica {name}",
            partition_urls=tuple(urls),
            metrics_port=free_port(),
        )
        for name in "ab"
    ]


def _play_through_a_kill(
    replicas: Sequence[MappedServer],
    everyone: Sequence[TableDriver],
    config: PartitionReplicaConfig,
    report: PartitionReplicaReport,
    retried: Counter[str],
) -> float:
    """The clients play through both replicas while replica A is killed and started again (they play on through
    B meanwhile), then on through both. When A was killed (``time.monotonic``)."""
    halt = threading.Event()  # set only if a client hangs

    def play(seconds: float) -> list[threading.Thread]:
        deadline = time.monotonic() + seconds
        return [threading.Thread(target=d.play, args=(halt,), kwargs={"deadline": deadline}) for d in everyone]

    def restart() -> None:
        try:
            report.restart_seconds = replicas[0].start()
        except Exception as error:  # a thread's target: report, never die silently
            report.problems.append(f"replica A did not start again: {error}")

    threads = play(config.seconds)
    for thread in threads:
        thread.start()
    time.sleep(config.kill_after)
    retried.update(replicas[0].retried())
    killed = time.monotonic()
    replicas[0].kill()
    time.sleep(config.down_for)
    restarting = threading.Thread(target=restart)  # (the clients play on meanwhile, through B)
    restarting.start()
    restarting.join(timeout=120)
    report.killed_for = time.monotonic() - killed
    for thread in threads:
        thread.join(timeout=config.seconds + 120)
    more = play(config.after_restart)  # both replicas again, whatever the start-up took
    for thread in more:
        thread.start()
    for thread in more:
        thread.join(timeout=config.after_restart + 120)
    if any(t.is_alive() for t in (*threads, *more)):
        halt.set()
        report.problems.append("a client did not finish in time")
    return killed


def _check_restarted(report: PartitionReplicaReport, replica: MappedServer) -> None:
    """Replica A answered commands again after its restart."""
    report.served_after_restart = served_since_start(replica)
    if not report.served_after_restart:
        report.problems.append("replica A answered no command after its restart")


def _tally(
    report: PartitionReplicaReport,
    kept: Sequence[Any],
    killed: float,
    drivers: dict[int, list[TableDriver]],
) -> None:
    """What the clients did: commands in flight at the kill, replays, rounds per partition (each at least one),
    unexpected errors, errors by status code."""
    report.in_flight_at_kill = sum(1 for a in kept if a.sent < killed < a.answered and a.retried)
    report.replayed = sum(1 for a in kept if a.replayed)
    report.rounds_per_partition = {k: sum(len(d.closed) for d in drivers[k]) for k in drivers}
    errors: Counter[str] = Counter()
    for driver in (d for k in drivers for d in drivers[k]):
        report.unexpected.extend(f"{driver.name}: {u}" for u in driver.unexpected)
        errors.update({code: n for (_rpc, code), n in driver.client.stats.errors.items()})
    report.client_errors = dict(errors)
    report.aborted = errors.get("ABORTED", 0)
    if min(report.rounds_per_partition.values(), default=0) < 1:
        report.problems.append(f"a partition closed no round: {report.rounds_per_partition}")


def _audit(
    report: PartitionReplicaReport,
    urls: Sequence[str],
    specs: dict[int, list[TableSpec]],
    drivers: dict[int, list[TableDriver]],
    replicas: Sequence[MappedServer],
    targets: Sequence[str],
    tokens: Tokens,
    retried: Counter[str],
    mark: float,
) -> float:
    """Each partition audited through the API (of the replicas in turn), then, the replicas stopped (their
    retries read first), in its store; the replicas' logged errors. The time of the last phase's end."""
    found = Findings()
    for k in range(len(urls)):
        tables = [spec.table_id for spec in specs[k]]
        mine = sorted({w for spec in specs[k] for w in spec.wallets})
        ledger, acked = merged_ledger(drivers[k]), all_acked(drivers[k])
        found.merge(audit_api(targets[k % 2], tokens, tables, mine, ledger, acked, partition=k))
    mark = report.phase("audit api", mark)
    for replica in replicas:
        retried.update(replica.retried())
    report.retried = dict(retried)
    for replica in replicas:
        replica.stop()
    for k in range(len(urls)):
        tables = [spec.table_id for spec in specs[k]]
        mine = sorted({w for spec in specs[k] for w in spec.wallets})
        store = Store.postgres(store_url(urls[k], k))
        found.merge(audit_store(store, tables, mine, merged_ledger(drivers[k]), all_acked(drivers[k])))
    report.problems.extend(found.problems)
    report.counts = dict(found.counts)
    mark = report.phase("audit store", mark)
    for replica in replicas:
        report.server_errors.extend(f"{replica.name}: {line}" for line in replica.log_errors())
    return mark


def _verify_stores(report: PartitionReplicaReport, urls: Sequence[str], config: PartitionReplicaConfig) -> None:
    """``pokdeng verify --all`` of the partition map, and (``config.each_store``) of each store alone."""
    report.verify["map"], tail = verify_all("", list(urls))
    if report.verify["map"]:
        report.problems.append(f"pokdeng verify --all (the partition map): {tail}")
    for k, url in enumerate(urls if config.each_store else ()):
        report.verify[f"store {k}"], tail = verify_all(store_url(url, k))
        if report.verify[f"store {k}"]:
            report.problems.append(f"pokdeng verify --all (store {k}): {tail}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pokdeng_testkit.harness.partition_replicas", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--seconds", type=float, default=5.0, help="how long the clients play")
    parser.add_argument("--tables", type=int, default=2, help="tables per partition, one client each")
    parser.add_argument("--kill-after", type=float, default=1.5, help="seconds of play before replica A is killed")
    parser.add_argument("--down-for", type=float, default=0.5, help="seconds before it starts again")
    parser.add_argument("--after-restart", type=float, default=2.0, help="seconds of play once it serves again")
    parser.add_argument("--first-answers", type=int, help="answers asked again besides the retried ones (default: all)")
    parser.add_argument("--no-each-store", action="store_true", help="verify --all with the map only")
    parser.add_argument("--workdir", help="where the token file and the servers' logs go (default: temporary)")
    parser.add_argument("--json", help="also write the report as JSON to this file")
    args = parser.parse_args(argv)
    config = PartitionReplicaConfig(
        args.seconds, args.tables, args.kill_after, args.down_for, args.after_restart, args.first_answers,
        not args.no_each_store,
    )  # fmt: skip
    from ..pgserver import temporary_postgres

    with contextlib.ExitStack() as stack:
        if args.workdir:
            workdir = Path(args.workdir)
            workdir.mkdir(parents=True, exist_ok=True)
        else:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="pokdeng-partitions-")))
        clusters = [stack.enter_context(temporary_postgres()) for _ in range(2)]
        report = run_partition_replicas([c.info.url for c in clusters], workdir, config, [c.log_file for c in clusters])
    return finish(report, args.json)


if __name__ == "__main__":
    sys.exit(main())
