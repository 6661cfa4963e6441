"""Scale: rounds/s with 1, 2 and 4 partitions, one server process per partition, and with replicas.

    python bench/scale.py [--partitions 1,2,4] [--store sqlite,postgres] [--replicas 1,2]
                          [--clients 4] [--seconds 6] [--workers 8] [--postgres-url URL] [--json FILE]

A partition is an event store of its own: an SQLite file, or a PostgreSQL schema (``pokdeng_p<k>``)
of one database. For every store kind and partition count P, the run starts P x R ``pokdeng serve``
processes (R replicas of each partition: SQLite has one server a file, so R is 1 there; on
PostgreSQL each partition's replicas share its schema), and ``--clients`` client threads per
partition, each playing whole rounds at a table of its own on its partition's servers (replicas
in turn), through ``pokdeng_testkit.harness.driver`` exactly as ``bench/load.py`` does (GetTable,
StartRound, the bets with the players' tokens, Deal, GetRound, GetLegalCommands, the decisions,
a deposit or withdrawal every third round). A platform routes a table to its partition by the
table's shard (docs/operations.md, "Partitions"); here each table is placed on its partition's
servers directly. Set-up is not timed.

Printed per configuration: rounds/s, the ratio to one partition with the same store and replicas
in the same run (perfect scaling: P), commits/s per partition (command transactions, counted in
each partition's log in the window), CPU seconds the servers used per round, and errors. The
machine's cores bound what more processes can add: the figures say how far this machine scales,
and the commits/s of one partition are what docs/operations.md ("Capacity") builds on.

PostgreSQL: ``--postgres-url`` (a fresh database per configuration must be creatable there), else
a throwaway cluster from ``pokdeng_testkit/pgserver.py`` with ``fsync``, ``synchronous_commit`` and
``full_page_writes`` on (durable, as in production); without PostgreSQL binaries or psycopg the
PostgreSQL part is skipped with the reason.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pokdeng_testkit.harness.baseline import LogReader, transactions  # noqa: E402
from pokdeng_testkit.harness.client import HarnessClient, Stats  # noqa: E402
from pokdeng_testkit.harness.driver import TableDriver, make_tables, play_for  # noqa: E402
from pokdeng_testkit.harness.server import ServerProcess, Store, servers, with_schema  # noqa: E402
from pokdeng_testkit.harness.tokens import Tokens  # noqa: E402

DURABLE = {"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on"}


@dataclass
class ScaleResult:
    store: str
    partitions: int
    replicas: int
    tables: int
    seconds: float
    rounds: int
    commits: list[int]  # per partition, in the window
    server_cpu: float  # seconds, every server process together
    errors: dict[str, int]
    notes: list[str] = field(default_factory=list)
    base: ScaleResult | None = None  # one partition, same store and replicas

    @property
    def rounds_per_s(self) -> float:
        return self.rounds / self.seconds if self.seconds else 0.0

    @property
    def ratio(self) -> float | None:
        if self.base is None or not self.base.rounds_per_s:
            return None
        return self.rounds_per_s / self.base.rounds_per_s

    @property
    def commits_per_s(self) -> list[float]:
        return [c / self.seconds for c in self.commits]

    def as_dict(self) -> dict[str, Any]:
        return {
            "store": self.store,
            "partitions": self.partitions,
            "replicas": self.replicas,
            "tables": self.tables,
            "seconds": round(self.seconds, 2),
            "rounds": self.rounds,
            "rounds_per_s": round(self.rounds_per_s, 1),
            "ratio_to_one_partition": None if self.ratio is None else round(self.ratio, 2),
            "commits_per_s_per_partition": [round(c, 1) for c in self.commits_per_s],
            "server_cpu_ms_per_round": round(1000 * self.server_cpu / self.rounds, 1) if self.rounds else None,
            "errors": self.errors,
        }


def _cpu_seconds(pid: int) -> float:
    """User and system CPU of a process and its reaped children (Linux ``/proc``); 0 elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def run_config(
    stores: list[Store], replicas: int, clients: int, seconds: float, workdir: Path, workers: int
) -> ScaleResult:
    """``len(stores)`` partitions, ``replicas`` servers each, ``clients`` tables a partition, for ``seconds``."""
    kind, partitions = stores[0].kind, len(stores)
    name = f"{kind}-p{partitions}-r{replicas}"
    specs = make_tables(name, partitions * clients)
    tokens = Tokens.for_players([w for spec in specs for w in spec.wallets])
    tokens_file = tokens.write(workdir / f"tokens-{name}.json")
    with servers() as running:
        by_partition: list[list[ServerProcess]] = []
        for k, store in enumerate(stores):
            group = [
                ServerProcess(store, tokens_file, workdir / f"{name}-{k}-{r}.log", workers=workers, name=f"p{k}r{r}")
                for r in range(replicas)
            ]
            by_partition.append(group)
            running.extend(group)
        # The first replica of each partition makes its store's tables, then the others start (two
        # PostgreSQL servers creating the same table at once collide in PostgreSQL's catalogue).
        for wave in (0, 1):
            starting = [group[0] for group in by_partition] if wave == 0 else [s for g in by_partition for s in g[1:]]
            for server in starting:
                server.spawn()
            for server in starting:
                server.wait_ready(time.monotonic() + 90)
        drivers = []
        for i, spec in enumerate(specs):
            k = i % partitions
            server = by_partition[k][(i // partitions) % replicas]
            drivers.append(TableDriver(spec, HarnessClient(server.target, patience=30.0), tokens))
        readers = [LogReader(store) for store in stores]
        try:
            for driver in drivers:
                driver.setup()
                driver.stats.clear()
            first = [reader.position() for reader in readers]
            cpu = sum(_cpu_seconds(s.proc.pid) for s in running if s.proc is not None)
            elapsed, _stuck = play_for(drivers, seconds)
            cpu = sum(_cpu_seconds(s.proc.pid) for s in running if s.proc is not None) - cpu
            commits = [len(transactions(r, f, r.position())) for r, f in zip(readers, first, strict=True)]
        finally:
            for reader in readers:
                reader.close()
            for driver in drivers:
                driver.client.close()
        stats = Stats()
        for driver in drivers:
            stats.merge(driver.stats)
        notes = [f"{d.name}: {u}" for d in drivers for u in d.unexpected]
        for server in running:
            notes.extend(f"{server.name}: {line}" for line in server.log_errors())
    errors = {f"{rpc} {code}": n for (rpc, code), n in sorted(stats.errors.items())}
    rounds = sum(len(d.closed) for d in drivers)
    return ScaleResult(kind, partitions, replicas, len(specs), elapsed, rounds, commits, cpu, errors, notes)


# --- stores -------------------------------------------------------------------------------------


def sqlite_stores(workdir: Path, name: str, partitions: int) -> list[Store]:
    """One SQLite file a partition (as ``--partitions`` names them: ``<db>``, ``<stem>.p<k><suffix>``)."""
    folder = workdir / name
    folder.mkdir()
    return [Store.sqlite(folder / (f"pokdeng.p{k}.sqlite" if k else "pokdeng.sqlite")) for k in range(partitions)]


@contextlib.contextmanager
def postgres_factory(url: str | None) -> Iterator[Callable[[int], list[Store]] | str]:
    """``new(partitions)``: a fresh database with one schema a partition (``public``, ``pokdeng_p1``, ...), or
    the reason there is no PostgreSQL."""
    try:
        import psycopg
        from psycopg import sql

        from pokdeng_testkit.pgserver import TemporaryPostgres, create_database, find_pg_bin_dir, unique_name
    except ImportError as error:
        yield f"cannot use PostgreSQL here: {error}"
        return
    cluster = None
    if url is None:
        bin_dir = find_pg_bin_dir()
        if bin_dir is None:
            yield "no PostgreSQL binaries (/usr/lib/postgresql/*/bin) and no --postgres-url"
            return
        cluster = TemporaryPostgres(bin_dir, max_connections=400, settings=DURABLE)
        try:
            cluster.start()
        except Exception as error:
            yield f"could not start a throwaway PostgreSQL from {bin_dir}: {error}"
            return

    def new(partitions: int) -> list[Store]:
        dbname = unique_name("pokdeng_scale_") if cluster is not None else f"pokdeng_scale_{uuid.uuid4().hex[:10]}"
        if cluster is not None:
            create_database(cluster.admin, dbname, cluster.info.user)
            base = cluster.info.with_dbname(dbname).url
        else:
            assert url is not None
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
            parts = url.rsplit("/", 1)
            base = parts[0] + "/" + dbname
        schemas = ["public"] + [f"pokdeng_p{k}" for k in range(1, partitions)]
        with psycopg.connect(base, autocommit=True) as conn:
            for schema in schemas[1:]:
                conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        return [Store.postgres(with_schema(base, schema)) for schema in schemas]

    try:
        yield new
    finally:
        if cluster is not None:
            cluster.stop()


# --- the run ------------------------------------------------------------------------------------


def render(results: list[ScaleResult]) -> str:
    lines = [
        "| store | partitions | replicas | servers | tables | rounds/s | x one partition | commits/s per partition "
        "| server CPU ms/round | errors |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        ratio = f"{r.ratio:.2f}" if r.ratio is not None else "1.00"
        commits = ", ".join(f"{c:,.0f}" for c in r.commits_per_s)
        cpu = f"{1000 * r.server_cpu / r.rounds:.1f}" if r.rounds else "-"
        lines.append(
            f"| {r.store} | {r.partitions} | {r.replicas} | {r.partitions * r.replicas} | {r.tables} "
            f"| {r.rounds_per_s:,.1f} | {ratio} | {commits} | {cpu} | {sum(r.errors.values())} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python bench/scale.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", default="1,2,4", help="comma-separated partition counts (default 1,2,4)")
    parser.add_argument("--store", default="sqlite,postgres", help="comma-separated: sqlite, postgres")
    parser.add_argument("--replicas", default="1,2", help="PostgreSQL servers per partition (default 1,2)")
    parser.add_argument("--clients", type=int, default=4, help="tables (client threads) per partition (default 4)")
    parser.add_argument("--seconds", type=float, default=6.0, help="measured seconds per configuration")
    parser.add_argument("--workers", type=int, default=8, help="each server's request threads (default 8)")
    parser.add_argument("--postgres-url", help="a PostgreSQL server (databases are created there); default: throwaway")
    parser.add_argument("--json", help="also write the results as JSON to this file")
    args = parser.parse_args(argv)
    counts = sorted({int(p) for p in args.partitions.split(",") if p})
    kinds = [k.strip() for k in args.store.split(",") if k.strip()]
    replica_counts = sorted({int(r) for r in args.replicas.split(",") if r})
    if not counts or min(counts) < 1 or any(k not in ("sqlite", "postgres") for k in kinds) or min(replica_counts) < 1:
        parser.error("partitions and replicas are positive; stores are sqlite and postgres")
    if 1 not in counts:
        counts.insert(0, 1)  # (the ratios are to one partition)
    load = os.getloadavg()[0]
    print(f"pokdeng scale: {os.cpu_count()} cores, load average {load:.1f}, python {sys.version.split()[0]}")
    results: list[ScaleResult] = []
    failed = False
    with tempfile.TemporaryDirectory(prefix="pokdeng-scale-") as tmp, contextlib.ExitStack() as stack:
        workdir = Path(tmp)
        for kind in kinds:
            plans: list[tuple[int, Callable[[int], list[Store]]]]
            if kind == "sqlite":
                plans = [(1, lambda p: sqlite_stores(workdir, f"sqlite-{p}", p))]
            else:
                factory = stack.enter_context(postgres_factory(args.postgres_url))
                if isinstance(factory, str):
                    print(f"postgres: SKIPPED ({factory})", flush=True)
                    continue
                plans = [(r, factory) for r in replica_counts]
            for replicas, new in plans:
                base = None
                for partitions in counts:
                    result = run_config(new(partitions), replicas, args.clients, args.seconds, workdir, args.workers)
                    if partitions == 1:
                        base = result
                    else:
                        result.base = base
                    results.append(result)
                    failed |= bool(result.errors or result.notes or not result.rounds)
                    ratio = result.ratio if result.ratio is not None else 1.0
                    print(
                        f"{kind:8} {partitions} partitions x {replicas} replicas: {result.rounds_per_s:7.1f} rounds/s, "
                        f"{ratio:.2f}x one partition (ideal {partitions}), commits/s per partition "
                        f"{statistics.median(result.commits_per_s):,.0f} (median), "
                        f"{sum(result.errors.values())} errors",
                        flush=True,
                    )
                    for note in result.notes[:5]:
                        print(f"  note: {note}")
    print()
    print(render(results))
    if args.json:
        Path(args.json).write_text(json.dumps([r.as_dict() for r in results], indent=2), encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
