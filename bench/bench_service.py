"""Whole 5-seat rounds per second through ``PokdengApp``, against raw eventsourcing appends (a script, not a test).

    python bench/bench_service.py [--rounds N] [--repeat R] [--profile NAME ...] [--store sqlite|postgres ...]
                                  [--wallet-events N] [--no-wallet] [--cprofile]

Each round goes through the application's public commands, each its own transaction as
the app does it: ``start_round``, five ``place_bet`` (one per seat, five players), ``deal``,
then the decisions until the round closes (kingmaker: every player takes the side bet when
the window opens, then ``close_side_bets``; players stay on 5 or more and draw below; the
banker, when it has a choice, draws below 5; a banker with no choice is moved on by the
operator's ``time_out_turn``). The bench follows the round from the events each command
returns (a client-side ``evolve``), so it issues no queries between commands; only the time
spent inside the application's commands is counted.

The baseline, measured in the same run on the same kind of store (its own SQLite file,
or its own PostgreSQL schema), replays the application's transactions with a minimal
``Aggregate``: for every command the application ran, one ``save`` of as many events
as that command wrote (all aggregates included: round, table, wallets, sealed seed,
command record), read back from the notification log. The baseline's "rounds/s" is
the same sequence of transactions per second; the ratio app/baseline has a target of
>= 50%. Application rounds and their baseline replays alternate round by round (the disk's fsync
times drift a lot); ``--repeat`` blocks, medians reported.

The wallet part writes wallets of 100 and ``--wallet-events`` events (plus 50 more, so
the loader must replay events after the latest snapshot) and times
``app.repository.get`` with the aggregate cache disabled, to show that snapshots
(every 100 events) keep the load flat. ``AGGREGATE_CACHE_MAXSIZE`` is set to the empty
string: in eventsourcing 9.5.6 the value ``0`` means an *unbounded* cache, not none.

PostgreSQL: ``POKDENG_BENCH_POSTGRES_URL`` if set (a fresh schema per run, dropped
afterwards), else a throwaway cluster from ``pokdeng_testkit/pgserver.py``; skipped (with the
reason) when neither is available.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import os
import platform
import pstats
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

from eventsourcing.application import Repository  # noqa: E402

from pokdeng_core import events as core_events  # noqa: E402
from pokdeng_core.hands import taem  # noqa: E402
from pokdeng_core.machine import legal_commands  # noqa: E402
from pokdeng_core.round_evolve import evolve  # noqa: E402
from pokdeng_core.round_state import BANKER, Phase, RoundState  # noqa: E402
from pokdeng_service.application import PokdengApp  # noqa: E402
from pokdeng_service.application.views import CommandResult  # noqa: E402
from pokdeng_service.store import aggregates as ag  # noqa: E402
from pokdeng_service.store.codec import from_data  # noqa: E402
from pokdeng_service.store.vault import SeedVault  # noqa: E402
from pokdeng_testkit.harness.baseline import Mini, RawApp  # noqa: E402
from pokdeng_testkit.keys import VAULT_KEY  # noqa: E402

TARGET = 0.50  # the application's rounds/s over the baseline's
SEATS = 5
STAKE = 100
FUNDS = 10**12
PROFILES = ("kingmaker", "classic")
NO_CACHE = {"AGGREGATE_CACHE_MAXSIZE": ""}  # "" disables the cache; "0" would be an unbounded one


# ---------------------------------------------------------------------------------------
# stores


@dataclass
class Store:
    """Where a benchmark's applications keep their events: ``env(name)`` gives a fresh, empty store."""

    kind: str
    make_env: Callable[[str], dict[str, str]]
    note: str = ""
    cleanups: list[Callable[[], None]] = field(default_factory=list)

    def env(self, name: str) -> dict[str, str]:
        return self.make_env(name)

    def close(self) -> None:
        for cleanup in reversed(self.cleanups):
            with contextlib.suppress(Exception):
                cleanup()
        self.cleanups.clear()


@contextlib.contextmanager
def sqlite_store() -> Iterator[Store]:
    folder = tempfile.mkdtemp(prefix="pokdeng-bench-")

    def make_env(name: str) -> dict[str, str]:
        return {
            "PERSISTENCE_MODULE": "eventsourcing.sqlite",
            "SQLITE_DBNAME": os.path.join(folder, f"{name}.sqlite"),
            "SQLITE_LOCK_TIMEOUT": "10",
            "POKDENG_SINGLE_WRITER": "y",  # as `pokdeng serve` runs a SQLite store (config.py)
        }

    store = Store("sqlite", make_env, f"SQLite files (WAL) in {folder}")
    store.cleanups.append(lambda: shutil.rmtree(folder, ignore_errors=True))
    try:
        yield store
    finally:
        store.close()


@contextlib.contextmanager
def postgres_store() -> Iterator[Store | str]:
    """A PostgreSQL store, or the reason there is none."""
    try:
        from pokdeng_testkit.pgserver import (
            PostgresServerInfo,
            PostgresStartError,
            TemporaryPostgres,
            create_schema,
            drop_schema,
            find_pg_bin_dir,
            wait_until_ready,
        )
    except ImportError as error:  # psycopg missing
        yield f"cannot import pokdeng_testkit/pgserver.py: {error}"
        return
    url = os.environ.get("POKDENG_BENCH_POSTGRES_URL", "").strip()
    server = None
    if url:
        info = PostgresServerInfo.from_url(url)
        try:
            wait_until_ready(info, timeout=30.0)
        except PostgresStartError as error:
            yield f"POKDENG_BENCH_POSTGRES_URL is not reachable: {error}"
            return
        note = f"PostgreSQL at {info.host}:{info.port}/{info.dbname} (POKDENG_BENCH_POSTGRES_URL)"
    else:
        bin_dir = find_pg_bin_dir()
        if bin_dir is None:
            yield "no PostgreSQL binaries (/usr/lib/postgresql/*/bin, pg_ctl) and no POKDENG_BENCH_POSTGRES_URL"
            return
        server = TemporaryPostgres(bin_dir)
        try:
            info = server.start()
        except PostgresStartError as error:
            yield f"could not start a throwaway PostgreSQL from {bin_dir}: {error}"
            return
        note = f"throwaway PostgreSQL from {bin_dir} on 127.0.0.1:{info.port}"
    with info.connect() as conn:
        version = conn.execute("SHOW server_version").fetchone()
    note += f", server {version[0] if version else '?'}"
    store = Store("postgres", lambda name: {}, note)

    def make_env(name: str) -> dict[str, str]:
        schema = f"bench_{name}_{uuid.uuid4().hex[:8]}".lower()
        create_schema(info, schema)
        store.cleanups.append(lambda: drop_schema(info, schema))
        return {**info.eventsourcing_env(), "POSTGRES_SCHEMA": schema, "POSTGRES_POOL_SIZE": "8"}

    store.make_env = make_env
    try:
        yield store
    finally:
        store.close()
        if server is not None:
            server.stop()


# ---------------------------------------------------------------------------------------
# playing rounds through the application


def make_app(env: dict[str, str]) -> PokdengApp:
    return PokdengApp(env, vault=SeedVault.from_hex(VAULT_KEY))


class Player:
    """Plays whole rounds at one table through the application's commands, following each round's events."""

    def __init__(self, app: PokdengApp, table_id: str, profile: str, prefix: str = "b") -> None:
        self.app = app
        self.table_id = table_id
        self.profile = profile
        self.prefix = prefix
        self.counter = 0
        self.commands = 0
        self.elapsed = self.cpu = 0.0
        self.players = [f"{table_id}-p{n}" for n in range(1, SEATS + 1)]
        for name in self.players:
            self.call(app.open_wallet, name)
            self.call(app.deposit, name, FUNDS)
        self.call(app.open_table, table_id, profile, None, min_stake=STAKE, max_stake=10 * STAKE, seats=SEATS)
        for seat, name in enumerate(self.players, 1):
            self.call(app.take_seat, table_id, name, seat)
        self.round_ids: list[str] = []

    def call(self, command: Callable[..., CommandResult], *args: Any, **kwargs: Any) -> CommandResult:
        """One command; the time spent inside the application (wall and CPU) is added up."""
        self.counter += 1
        self.commands += 1
        request_id = f"{self.prefix}-{self.counter}"
        start, cpu = time.perf_counter(), time.process_time()
        result = command(request_id, *args, **kwargs)
        self.cpu += time.process_time() - cpu
        self.elapsed += time.perf_counter() - start
        return result

    def play_round(self) -> str:
        app = self.app
        state = RoundState()

        def run(command: Callable[..., CommandResult], *args: Any) -> None:
            nonlocal state
            result = self.call(command, *args)
            for item in result.events:
                cls = core_events.EVENT_BY_KIND.get(item.kind)
                if cls is not None:
                    state = evolve(state, from_data(cls, item.data))

        run(app.start_round, self.table_id, "bench")
        round_id = state.round_id
        self.round_ids.append(round_id)
        for seat, holder in state.seats:
            assert holder is not None
            run(app.place_bet, round_id, seat, holder, STAKE)
        run(app.deal, round_id)
        for _ in range(100):
            phase = state.phase
            if phase is Phase.CLOSED:
                return round_id
            if phase is Phase.SIDE_BETS:
                for seat, holder in state.seats:
                    if holder is not None and "place_side_bet" in legal_commands(state, seat):
                        run(app.place_side_bet, round_id, seat, holder)
                        break
                else:
                    run(app.close_side_bets, round_id)
            elif phase is Phase.PLAYER_TURNS:
                turn = state.turn
                assert turn is not None
                holder = state.holder(turn)
                draw = taem(state.cards(turn)) < 5
                run(app.draw if draw else app.stay, round_id, turn, holder)
            elif phase is Phase.BANKER_TURN:
                if not legal_commands(state, BANKER):
                    run(app.time_out_turn, round_id)
                else:
                    draw = taem(state.banker_cards) < 5
                    run(app.banker_draw if draw else app.banker_stay, round_id, state.banker_player)
            else:
                raise AssertionError(f"round {round_id} stuck in {phase}")
        raise AssertionError(f"round {round_id} did not close")


def transactions(app: PokdengApp, after: int, upto: int) -> list[int]:
    """Events per command transaction in the log positions (after, upto]: each ends with its CommandRecord."""
    sizes: list[int] = []
    current = 0
    position = after
    while position < upto:
        page = app.recorder.select_notifications(start=position + 1, limit=1000, stop=upto)
        if not page:
            break
        for item in page:
            current += 1
            if item.topic.endswith(":CommandRecord.Accepted"):
                sizes.append(current)
                current = 0
        position = page[-1].id
    assert current == 0, "a transaction without its command record"
    return sizes


# ---------------------------------------------------------------------------------------
# the baseline: raw appends with a minimal aggregate (``Mini`` and ``RawApp``: pokdeng_testkit.harness.baseline)


def baseline_block(app: RawApp, sizes: Sequence[int], per_round: Sequence[int]) -> float:
    """Replay the application's transactions (``sizes``, grouped into rounds by ``per_round``); seconds taken."""
    start = time.perf_counter()
    index = 0
    for count in per_round:
        mini = None
        for size in sizes[index : index + count]:
            if mini is None:
                mini = Mini()
                size -= 1
            for _ in range(size):
                mini.ping()
            app.save(mini)
        index += count
    return time.perf_counter() - start


# ---------------------------------------------------------------------------------------
# measurements


@dataclass
class RoundFigures:
    profile: str
    store: str
    rounds: int
    commands_per_round: float
    events_per_round: float
    app_rate: float  # rounds/s
    raw_rate: float  # the baseline's rounds/s
    raw_txn_rate: float  # the baseline's transactions/s
    app_cpu_ms: float  # this process's CPU time per round
    raw_cpu_ms: float

    @property
    def ratio(self) -> float:
        return self.app_rate / self.raw_rate


def bench_rounds(
    store: Store, profile: str, rounds: int, repeat: int, warmup: int, cprofile: bool
) -> tuple[RoundFigures, pstats.Stats | None]:
    app = make_app(store.env(f"app_{profile}"))
    raw = RawApp(store.env(f"raw_{profile}"))
    stats = None
    try:
        player = Player(app, f"t-{profile}", profile)
        for _ in range(warmup):
            player.play_round()
        # warm the baseline's store too
        baseline_block(raw, [3] * 20, [10, 10])
        app_times: list[float] = []
        raw_times: list[float] = []
        app_cpus: list[float] = []
        raw_cpus: list[float] = []
        all_sizes: list[int] = []
        profiler = cProfile.Profile() if cprofile else None
        for _ in range(repeat):
            app_time = raw_time = app_cpu = raw_cpu = 0.0
            for _ in range(rounds):
                # one application round, then the baseline's replay of its transactions: interleaved
                # round by round, so that both see the same disk (fsync times drift a lot)
                before, commands = app.max_position, player.commands
                if profiler:
                    profiler.enable()
                elapsed, cpu = player.elapsed, player.cpu
                player.play_round()
                app_time += player.elapsed - elapsed
                app_cpu += player.cpu - cpu
                if profiler:
                    profiler.disable()
                sizes = transactions(app, before, app.max_position)
                assert len(sizes) == player.commands - commands, (len(sizes), player.commands - commands)
                cpu = time.process_time()
                raw_time += baseline_block(raw, sizes, [len(sizes)])
                raw_cpu += time.process_time() - cpu
                all_sizes.extend(sizes)
            app_times.append(app_time)
            raw_times.append(raw_time)
            app_cpus.append(app_cpu)
            raw_cpus.append(raw_cpu)
        if profiler:
            stats = pstats.Stats(profiler)
        total_rounds = rounds * repeat
        figures = RoundFigures(
            profile=profile,
            store=store.kind,
            rounds=total_rounds,
            commands_per_round=len(all_sizes) / total_rounds,
            events_per_round=sum(all_sizes) / total_rounds,
            app_rate=rounds / statistics.median(app_times),
            raw_rate=rounds / statistics.median(raw_times),
            raw_txn_rate=len(all_sizes) / repeat / statistics.median(raw_times),
            app_cpu_ms=statistics.median(app_cpus) / rounds * 1e3,
            raw_cpu_ms=statistics.median(raw_cpus) / rounds * 1e3,
        )
        # sanity: every round closed, money balanced on the table's books
        last = app.get_round(player.round_ids[-1], with_events=False)
        assert last.phase == "closed", last.phase
        return figures, stats
    finally:
        app.close()
        raw.close()


def write_wallet(app: PokdengApp, wallet: ag.Wallet | None, wallet_id: str, events: int, batch: int = 1000) -> Any:
    """Open a wallet (``wallet`` None) or carry one on, until it has ``events`` events (deposits), saved in
    batches through ``app.save`` so that the application's snapshotting (every 100 events) runs as in service."""
    if wallet is None:
        wallet = ag.Wallet(wallet_id)
    while wallet.version < events:
        for _ in range(min(batch, events - wallet.version)):
            wallet.deposit(1, "bench")
        app.save(wallet)
    if wallet.pending_events:
        app.save(wallet)
    return wallet


def time_load(repository: Repository[uuid.UUID], wallet_id: str, repeat: int, version: int) -> float:
    """Median seconds of one ``repository.get`` of the wallet (which must come back at ``version``)."""
    uid = ag.wallet_uuid(wallet_id)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        wallet: Any = repository.get(uid)
        times.append(time.perf_counter() - start)
    assert isinstance(wallet, ag.Wallet) and wallet.version == version, (wallet.version, version)
    return statistics.median(times)


def bench_wallet(store: Store, big: int, repeat: int) -> list[tuple[str, int, float]]:
    env = {**store.env("wallets"), **NO_CACHE}
    app = make_app(env)
    try:
        assert app.repository.cache is None, "the aggregate cache must be off for this measurement"
        out = []
        start = time.perf_counter()
        for size in (100, big):
            # the wallet at a snapshot, then 50 events past it (the most a load replays is 99)
            wallet = write_wallet(app, None, f"w{size}", size)
            out.append(("snapshots", size, time_load(app.repository, f"w{size}", repeat, size)))
            write_wallet(app, wallet, f"w{size}", size + 50)
            out.append(("snapshots", size + 50, time_load(app.repository, f"w{size}", repeat, size + 50)))
        print(f"  (wrote {2 * 50 + 100 + big:,} wallet events in {time.perf_counter() - start:.1f} s)", flush=True)
        plain = Repository(app.events)  # no snapshot store: every event is replayed
        for size in (100, big):
            out.append(("no snapshots", size + 50, time_load(plain, f"w{size}", 3 if size < 1000 else 1, size + 50)))
        return out
    finally:
        app.close()


# ---------------------------------------------------------------------------------------


def machine_line() -> str:
    return (
        f"machine: {os.cpu_count()} cores ({platform.machine()}, {platform.system()} {platform.release()}); "
        f"python {platform.python_version()}; eventsourcing {_dist('eventsourcing')}; "
        f"sqlite {__import__('sqlite3').sqlite_version}; psycopg {_dist('psycopg')}; pydantic {_dist('pydantic')}"
    )


def _dist(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30, help="rounds per timed block (default 30)")
    parser.add_argument("--repeat", type=int, default=3, help="timed blocks; medians (default 3)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed rounds first (default 3)")
    parser.add_argument("--profile", action="append", help=f"profiles (default: {', '.join(PROFILES)})")
    parser.add_argument("--store", action="append", choices=("sqlite", "postgres"), help="stores (default: both)")
    parser.add_argument("--wallet-events", type=int, default=100_000, help="the long wallet (default 100000)")
    parser.add_argument("--wallet-repeat", type=int, default=20, help="loads timed per wallet (default 20)")
    parser.add_argument("--no-wallet", action="store_true", help="skip the wallet load part")
    parser.add_argument("--cprofile", action="store_true", help="profile the application blocks (cProfile)")
    args = parser.parse_args(argv)
    profiles = args.profile or list(PROFILES)
    stores = args.store or ["sqlite", "postgres"]
    began = time.perf_counter()

    print(machine_line())
    print(
        f"{SEATS}-seat rounds, {args.rounds} rounds x {args.repeat} blocks per profile and store "
        f"(+{args.warmup} warm-up; app and baseline interleaved round by round), medians; "
        f"target: app >= {TARGET:.0%} of the baseline"
    )
    results: list[RoundFigures] = []
    wallets: dict[str, list[tuple[str, int, float]]] = {}
    profiles_out: list[tuple[str, pstats.Stats]] = []
    for kind in stores:
        context = sqlite_store() if kind == "sqlite" else postgres_store()
        with context as store:
            if isinstance(store, str):
                print(f"\n[{kind}] SKIPPED: {store}")
                continue
            print(f"\n[{kind}] {store.note}")
            header = (
                f"{'profile':<10} {'cmds/rnd':>8} {'evts/rnd':>8} {'rounds/s':>9} {'events/s':>9} "
                f"{'base rnd/s':>10} {'base txn/s':>10} {'ratio':>6} {'cpu ms/rnd app':>14} {'base':>5}  verdict"
            )
            print(header)
            print("-" * len(header))
            for profile in profiles:
                figures, stats = bench_rounds(store, profile, args.rounds, args.repeat, args.warmup, args.cprofile)
                results.append(figures)
                if stats is not None:
                    profiles_out.append((f"{kind}/{profile}", stats))
                print(
                    f"{profile:<10} {figures.commands_per_round:>8.1f} {figures.events_per_round:>8.1f} "
                    f"{figures.app_rate:>9.1f} {figures.app_rate * figures.events_per_round:>9.0f} "
                    f"{figures.raw_rate:>10.1f} {figures.raw_txn_rate:>10.0f} {figures.ratio:>6.1%} "
                    f"{figures.app_cpu_ms:>14.1f} {figures.raw_cpu_ms:>5.1f}  "
                    f"{'meets' if figures.ratio >= TARGET else 'MISSES'}",
                    flush=True,
                )
            if not args.no_wallet:
                rows = bench_wallet(store, args.wallet_events, args.wallet_repeat)
                wallets[kind] = rows
                flat = {size: t for how, size, t in rows if how == "snapshots"}
                print(f"wallet load, repository.get, no aggregate cache (median of {args.wallet_repeat}):")
                for how, size, seconds in rows:
                    print(f"  {how:<12} {size:>8,} events: {seconds * 1e3:8.3f} ms")
                small = max(flat[100], flat[150])
                large = max(flat[args.wallet_events], flat[args.wallet_events + 50])
                print(
                    f"  with snapshots every 100: {args.wallet_events:,} events load in {large / small:.2f}x "
                    f"the time of 100 ({'flat' if large / small < 2 else 'NOT flat'})"
                )
    if results:
        print("\nsummary (app rounds/s as a share of the raw-append baseline, same store, same run):")
        for f in results:
            print(
                f"  {f.store:<8} {f.profile:<10} {f.app_rate:7.1f} rounds/s vs {f.raw_rate:7.1f}: {f.ratio:6.1%} "
                f"({'meets' if f.ratio >= TARGET else 'MISSES'} >= {TARGET:.0%})"
            )
    for name, stats in profiles_out:
        print(f"\n== cProfile of the application blocks: {name}")
        order, lines = os.environ.get("POKDENG_BENCH_SORT", "cumulative"), os.environ.get("POKDENG_BENCH_LINES", "35")
        stats.sort_stats(order).print_stats(int(lines))
    print(f"\ntotal time {time.perf_counter() - began:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
