"""Hundreds of rounds through a real ``pokdeng serve`` on the platform's wallets, with faults between them.

``run_soak(folder, SoakConfig(...))``:

1. the reference platform wallet (``platform_server.Ledger``, its own SQLite file) serves gRPC on
   127.0.0.1 behind the fault interceptor (``faults.Faults``: timeouts, lost requests and replies,
   UNAVAILABLE, duplicated and delayed (reordered) requests, replies of other calls);
2. ``pokdeng serve --wallet remote`` runs as a child process on its own SQLite store;
3. one client thread per table plays rounds over the gRPC API (request ids from the round and
   the step, so that a retry after a crash is the same request): bets (some refused: a poor
   player, a dealer's cover), a void now and then, the deal, side bets, then the automatic
   actions (``TimeOutTurn``) to the close;
4. ``kills`` times, the interceptor SIGKILLs pokdeng inside a wallet call: after the platform
   applied a debit and before pokdeng heard of it, or while a settlement's credit is applied;
   pokdeng is restarted on the same store and port, and its recovery finishes what was pending;
5. at the end the faults stop, pokdeng finishes every pending transaction, stops, and the checks
   run: ``reconcile`` (both books, every transaction, 0 differences), the ledger's balances against
   pokdeng's record to the minor unit, no credit twice, every void rolled back, no debit without a
   record, and ``pokdeng verify --all``.

The report (``SoakReport.render``) gives the figures: rounds, bets, faults by kind, kills,
differences, seconds.
"""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from google.protobuf.duration_pb2 import Duration

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_testkit.harness.server import ServerProcess, Store, child_env
from pokdeng_testkit.harness.tokens import Tokens

from .faults import FaultPlan, Faults
from .platform_server import Guard, Ledger, ServerTls, serve_grpc
from .soak_client import ROUNDS, TABLES, Client, Refused, Table, tables

FUNDS = 10_000_000
DEFAULT_RATES = {
    "drop": 0.02,
    "timeout": 0.02,
    "unavailable": 0.03,
    "lost_reply": 0.03,
    "duplicate": 0.03,
    "delayed": 0.02,
    "stale_reply": 0.02,
}


@dataclass
class SoakConfig:
    rounds: int = 200
    tables: int = 4
    kills: int = 4
    rates: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_RATES))
    seed: int = 7
    wallet_timeout: float = 0.25
    void_every: int = 12  # about one round in this many is voided after its bets
    max_seconds: float = 900.0  # a hang guard: what is checked is the rounds, however long a loaded machine takes
    secure: bool = False  # gRPC over mutual TLS, every request signed and checked, the answers signed and verified
    protocol: int = 1  # pokdeng.wallet.v1 or v2
    wallet: str = "remote"  # or "hub88": the reference Hub88 over HTTPS, signed both ways, with sessions (soak_hub88)


@dataclass
class SoakReport:
    config: SoakConfig
    seconds: float = 0.0
    settled: int = 0
    voided: int = 0
    bets: int = 0
    side_bets: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    kills: int = 0
    starts: int = 0
    retries: int = 0
    platform_calls: dict[str, int] = field(default_factory=dict)
    transactions: Counter[str] = field(default_factory=Counter)
    differences: list[str] = field(default_factory=list)
    rollbacks: Counter[str] = field(default_factory=Counter)  # by reason
    compared: int = 0
    pending: int = 0
    problems: list[str] = field(default_factory=list)
    verify_output: str = ""

    @property
    def rounds(self) -> int:
        return self.settled + self.voided

    def render(self) -> str:
        faults = ", ".join(f"{k} {v}" for k, v in sorted(self.faults.items())) or "none"
        refused = ", ".join(f"{k} {v}" for k, v in sorted(self.refused.items())) or "none"
        txs = ", ".join(f"{k} {v}" for k, v in sorted(self.transactions.items()))
        lines = [
            f"platform wallet soak ({self.config.wallet}): {self.rounds} rounds ({self.settled} settled, "
            f"{self.voided} voided) on {self.config.tables} tables in {self.seconds:.1f} s",
            f"  bets placed {self.bets} (side bets {self.side_bets}); refused: {refused}",
            f"  faults injected ({sum(self.faults.values())}): {faults}",
            f"  pokdeng SIGKILLed {self.kills} times inside a wallet call, started {self.starts} times; "
            f"client retries {self.retries}",
            f"  platform calls: {self.platform_calls}",
            f"  pokdeng's transactions: {txs}",
            f"  rollbacks by reason: {', '.join(f'{k} {v}' for k, v in sorted(self.rollbacks.items()))}",
            f"  reconciliation: {self.compared} transactions compared, {len(self.differences)} differences, "
            f"{self.pending} pending",
            f"  pokdeng verify --all: {self.verify_output.strip().splitlines()[-2:] if self.verify_output else '-'}",
        ]
        lines += [f"  DIFF {d}" for d in self.differences[:20]]
        lines += [f"  PROBLEM {p}" for p in self.problems[:20]]
        return "\n".join(lines)


class WalletServer(ServerProcess):
    """``pokdeng serve`` on the platform's wallets."""

    wallet_kind: str = "remote"
    wallet_url: str = ""
    wallet_timeout: float = 0.25
    wallet_options: tuple[str, ...] = ()  # (the TLS and signature files of a secure run)

    def command(self) -> list[str]:
        return [
            *super().command(),
            "--wallet", self.wallet_kind, "--wallet-url", self.wallet_url, "--wallet-timeout", str(self.wallet_timeout),
            "--wallet-attempts", "3", "--log-format", "text", "--no-access-log", *self.wallet_options,
        ]  # fmt: skip


class Soak:
    def __init__(self, folder: Path, config: SoakConfig) -> None:
        self.folder, self.config = folder, config
        self.report = SoakReport(config)
        self.lock = threading.Lock()
        self.rng = random.Random(config.seed)
        self.tables = tables(config.tables)
        self.ledger: Any = self.make_ledger()
        plan = FaultPlan(rates=config.rates, seed=config.seed, hold=config.wallet_timeout + 0.1)
        self.faults = Faults(plan, self.kill)
        self.initial: dict[str, int] = {}  # the players' balances on the platform at the start
        self.restart = threading.Event()
        self.stop = threading.Event()
        self.closed = 0  # rounds closed, over every table
        self.kill_at = [int(config.rounds * (k + 1) / (config.kills + 1)) for k in range(config.kills)]
        self.tokens = Tokens()
        self.wallet_options: dict[str, str] = {}
        self.guard: Guard | None = None

    # -- pokdeng's process -------------------------------------------------------------------

    def kill(self) -> None:
        """Called by the interceptor inside a wallet call: SIGKILL pokdeng now; the supervisor restarts it."""
        with self.lock:
            self.report.kills += 1
        self.server.kill()
        self.restart.set()

    def supervise(self) -> None:
        while not self.stop.is_set():
            if self.restart.wait(0.1):
                self.restart.clear()
                for attempt in range(3):
                    try:
                        self.server.start(timeout=60)
                        break
                    except Exception as error:  # (reported; the run's checks then fail)
                        with self.lock:
                            self.report.problems.append(f"restart {attempt + 1} failed: {error}")

    def arm_kills(self) -> None:
        """Once enough rounds closed, the next wallet call of a kind SIGKILLs pokdeng (debits and credits in turn)."""
        with self.lock:
            due = [k for k in self.kill_at if self.closed >= k]
            self.kill_at = [k for k in self.kill_at if self.closed < k]
            armed = (
                self.report.kills
                + len(self.faults._forced.get("Debit", []))
                + len(self.faults._forced.get("Credit", []))
            )
        for _ in due:
            self.faults.force("Debit" if armed % 2 == 0 else "Credit", "kill")
            armed += 1

    # -- the run -----------------------------------------------------------------------------

    def run(self) -> SoakReport:
        started = time.monotonic()
        since = datetime.now(tz=UTC) - timedelta(seconds=1)
        for table in self.tables:  # one poor player a table (its stakes are refused now and then)
            for player in table.players:
                self.initial[player] = 2_500 if player.endswith("-p2") else FUNDS
            if table.dealer:
                self.initial[table.dealer] = 20_000  # (a dealer's covers are refused now and then)
        for player, balance in self.initial.items():
            self.ledger.open_player(player, balance)
        url, stop_platform = self.start_platform()
        store = Store.sqlite(self.folder / "pokdeng.sqlite")
        tokens_file = self.tokens.write(self.folder / "tokens.json")
        self.server = WalletServer(store, tokens_file, self.folder / "pokdeng.log")
        self.server.wallet_kind = self.config.wallet
        self.server.wallet_url, self.server.wallet_timeout = url, self.config.wallet_timeout
        self.server.wallet_options = tuple(
            f"--wallet-{k.replace('_', '-')}={v}" for k, v in self.wallet_options.items()
        )
        supervisor = threading.Thread(target=self.supervise, name="soak-supervisor", daemon=True)
        try:
            self.server.start(timeout=60)
            supervisor.start()
            self.open_tables()
            self.open_sessions()
            drivers = [threading.Thread(target=self.play, args=(t,), name=t.table_id, daemon=True) for t in self.tables]
            for driver in drivers:
                driver.start()
            for driver in drivers:
                driver.join(timeout=self.config.max_seconds)
            self.faults.enabled = False
            self.faults._forced.clear()
            self.faults.wait_delayed()
            self.stop.set()
            supervisor.join(timeout=70)
            if not self.server.running:
                self.server.start(timeout=60)
            self.report.pending = self.await_finished()
            self.server.stop()
            self.check(platform_url=url, since=since)
        finally:
            self.stop.set()
            self.server.close()
            stop_platform()
            self.report.faults = Counter(self.faults.counts)
            self.report.platform_calls = dict(self.ledger.calls)
            self.report.starts = self.server.starts
            self.ledger.close()
            self.report.seconds = time.monotonic() - started
        return self.report

    # -- the platform (``soak_hub88.Hub88Soak`` has Hub88's) ---------------------------------------

    def make_ledger(self) -> Any:
        return Ledger(self.folder / "platform-ledger.sqlite")

    def start_platform(self) -> tuple[str, Callable[[], None]]:
        """The platform served (its URL), and how to stop it; ``wallet_options`` set (``WalletConfig`` fields)."""
        tls, guard, self.wallet_options = self.security()
        platform, port = serve_grpc(self.ledger, [self.faults], workers=24, tls=tls, guard=guard)
        if self.config.protocol != 1:
            self.wallet_options["protocol"] = str(self.config.protocol)
        self.guard = guard

        def stop() -> None:
            platform.stop(0).wait(5)

        return f"{'grpcs://' if tls else ''}127.0.0.1:{port}", stop

    def open_sessions(self) -> None:
        """(pokdeng's protocol takes no wallet session)"""

    def platform_record(self, url: str) -> Any:
        """What the reconciliation reads of the platform (``transactions``), and closes."""
        from pokdeng_service.wallet.config import WalletConfig
        from pokdeng_service.wallet.platform import PlatformWallet

        options: dict[str, Any] = {k: v for k, v in self.wallet_options.items() if k != "protocol"}
        security = WalletConfig("remote", url, **options).security()
        return PlatformWallet.connect(url, timeout=5.0, security=security, protocol=self.config.protocol)

    def platform_problems(self, ours: dict[str, Any]) -> list[str]:
        """What the platform's own record says is wrong: a credit twice, a transaction without pokdeng's record, a
        signature refused, a transaction after its round's round_closed."""
        problems = []
        credits = Counter((r["round_id"], r["player"]) for r in self.ledger.rows() if r["kind"] == 2)
        problems += [f"credited twice: {key}" for key, count in credits.items() if count > 1]
        unknown = [r["tx_id"] for r in self.ledger.rows() if r["tx_id"] not in ours]
        problems += [f"a platform transaction without pokdeng's record: {tx}" for tx in unknown]
        if self.guard is not None and (self.guard.refused or not self.guard.key_ids):
            problems.append(f"the platform refused signatures: {dict(self.guard.refused)}")
        late = getattr(self.ledger, "v2", None)
        if late is not None and late.late:
            problems.append(f"transactions after their round's round_closed: {late.late[:5]}")
        if self.config.protocol == 2 and (late is None or not any(r.round_closed for _m, r in late.requests)):
            problems.append("protocol 2: no round_closed transaction reached the platform")
        return problems

    def security(self) -> tuple[ServerTls | None, Guard | None, dict[str, str]]:
        """A secure run's platform side (its certificate, requiring pokdeng's client certificate; pokdeng's key
        accepted, replays refused; its answers signed) and pokdeng's wallet settings (``WalletConfig`` fields)."""
        if not self.config.secure:
            return None, None, {}
        from pokdeng_service.wallet.signing import KeyFile, Verifier

        from .pki import make_pki, public_pem, signing_key, write_private

        pki = make_pki(self.folder / "pki")
        pokdeng_key, platform_key = signing_key("ed25519"), signing_key("ed25519")
        sign_key = write_private(self.folder / "pokdeng-sign.key", pokdeng_key)
        (self.folder / "platform-public.pem").write_bytes(public_pem(platform_key.public_key()))
        guard = Guard(Verifier(KeyFile(keys=[pokdeng_key.public_key()]), window=30, replays=True), platform_key)
        options = {
            "tls_ca": str(pki.ca), "tls_cert": str(pki.client_cert), "tls_key": str(pki.client_key),
            "sign_key": str(sign_key), "platform_keys": str(self.folder / "platform-public.pem"),
        }  # fmt: skip
        return ServerTls(pki.server_cert, pki.server_key, pki.ca), guard, options

    def client(self) -> Client:
        return Client(self.server.target, self.tokens.operator, self.retried)

    def retried(self) -> None:
        with self.lock:
            self.report.retries += 1

    def open_tables(self) -> None:
        client = self.client()
        try:
            for table in self.tables:
                profile = pb.PROFILE_CLASSIC if table.profile == "classic" else pb.PROFILE_KINGMAKER
                dealer: dict[str, Any] = {"dealer": table.dealer} if table.dealer else {}
                client.call(
                    TABLES, "OpenTable", request_id=f"open:{table.table_id}", table_id=table.table_id,
                    profile=profile, min_stake=100, max_stake=500, seats=5, turn_timeout=Duration(seconds=3600),
                    **dealer,
                )  # fmt: skip
                for seat, player in enumerate(table.players, 1):
                    client.call(
                        TABLES, "TakeSeat", request_id=f"seat:{table.table_id}:{seat}", table_id=table.table_id,
                        player=player, seat=seat,
                    )  # fmt: skip
        finally:
            client.close()

    def play(self, table: Table) -> None:
        client = self.client()
        rng = random.Random(f"{self.config.seed}:{table.table_id}")
        deadline = time.monotonic() + self.config.max_seconds
        n = 0
        try:
            while time.monotonic() < deadline:
                with self.lock:
                    if self.closed >= self.config.rounds:
                        return
                n += 1
                outcome = self.play_round(client, table, n, rng)
                with self.lock:
                    self.closed += 1
                    if outcome == "voided":
                        self.report.voided += 1
                    else:
                        self.report.settled += 1
                self.arm_kills()
        except Exception as error:
            with self.lock:
                self.report.problems.append(f"{table.table_id} round {n}: {type(error).__name__}: {error}")
        finally:
            client.close()

    def play_round(self, client: Client, table: Table, n: int, rng: random.Random) -> str:
        current = client.call(TABLES, "GetTable", table_id=table.table_id).table.current_round_id
        if current:
            round_id = current  # (a round left open: play it on)
        else:
            reply = client.call(ROUNDS, "StartRound", request_id=f"{table.table_id}:start:{n}", table_id=table.table_id)
            round_id = reply.round.round_id
        round_ = client.call(ROUNDS, "GetRound", round_id=round_id).round
        if round_.phase == pb.ROUND_PHASE_BETTING:
            placed = sum(self.bet(client, round_id, seat, player, rng) for seat, player in enumerate(table.players, 1))
            if not placed or rng.randrange(self.config.void_every) == 0:
                client.call(ROUNDS, "VoidRound", request_id=f"{round_id}:void", round_id=round_id, reason="soak void")
            else:
                self.command(client, "Deal", f"{round_id}:deal", round_id=round_id)
        for _step in range(200):
            round_ = client.call(ROUNDS, "GetRound", round_id=round_id).round
            if round_.phase == pb.ROUND_PHASE_CLOSED:
                return "voided" if round_.outcome == pb.ROUND_OUTCOME_VOIDED else "settled"
            if round_.phase == pb.ROUND_PHASE_SIDE_BETS:
                for seat, player in enumerate(table.players, 1):
                    if rng.random() < 0.5 and self.side_bet(client, round_id, seat, player):
                        break
            request = f"{round_id}:auto:{round_.version}"
            self.command(client, "TimeOutTurn", request, round_id=round_id, expected_version=round_.version)
        raise AssertionError(f"round {round_id} did not close")

    def command(self, client: Client, method: str, request_id: str, **fields: Any) -> bool:
        try:
            client.call(ROUNDS, method, request_id=request_id, **fields)
        except Refused:  # the round moved on (a retry after a restart found it done)
            return False
        return True

    def bet(self, client: Client, round_id: str, seat: int, player: str, rng: random.Random) -> bool:
        stake = rng.choice((100, 200, 300, 500))
        for attempt in range(3):  # a bet the platform did not answer is rolled back: try it again
            try:
                client.call(ROUNDS, "PlaceBet", request_id=f"{round_id}:bet:{seat}:{player}", round_id=round_id,
                            seat=seat, player=player, stake=stake)  # fmt: skip
            except Refused as refused:
                with self.lock:
                    self.report.refused[refused.reason] += 1
                if refused.reason == "WALLET_UNAVAILABLE" and attempt < 2:
                    continue
                return False
            with self.lock:
                self.report.bets += 1
            return True
        return False

    def side_bet(self, client: Client, round_id: str, seat: int, player: str) -> bool:
        try:
            client.call(ROUNDS, "PlaceSideBet", request_id=f"{round_id}:side:{seat}", round_id=round_id, seat=seat,
                        player=player)  # fmt: skip
        except Refused as refused:
            with self.lock:
                self.report.refused[f"side {refused.reason}"] += 1
            return False
        with self.lock:
            self.report.side_bets += 1
        return True

    # -- the end -----------------------------------------------------------------------------

    def open_store(self) -> Any:
        from pokdeng_service.application.partitions import PartitionedPokdeng

        return PartitionedPokdeng.open_read_only(self.server.store.config())

    def await_finished(self, patience: float = 30.0) -> int:
        """Wait until pokdeng's recovery has finished every pending transaction; how many are left."""
        from pokdeng_service.wallet.reconcile import recorded_transactions

        deadline = time.monotonic() + patience
        while True:
            service = self.open_store()
            try:
                left = sum(1 for e in recorded_transactions(service.apps).values() if e.tx.pending)
            finally:
                service.close()
            if not left or time.monotonic() > deadline:
                return left
            time.sleep(0.3)

    def check(self, platform_url: str, since: datetime) -> None:
        from pokdeng_service.wallet.reconcile import reconcile, recorded_transactions

        service = self.open_store()
        wallet = self.platform_record(platform_url)
        report = self.report
        try:
            result = reconcile(service.apps, wallet, since, datetime.now(tz=UTC) + timedelta(seconds=1))
            ours = recorded_transactions(service.apps)
        finally:
            wallet.close()
            service.close()
        report.differences = [d.render() for d in result.differences]
        report.pending += len(result.pending) + len(result.held)  # (every round closed: no debit may be held)
        report.transactions = Counter(f"{e.tx.kind} {e.tx.status}" for e in ours.values())
        report.rollbacks = Counter(e.tx.reason for e in ours.values() if e.tx.status == "rolled_back")
        report.compared = result.compared
        for player, balance in self.ledger.balances().items():
            expected = self.initial[player] + result.pokdeng_totals.get(player, 0)
            if balance != expected:
                report.problems.append(f"{player}: the platform holds {balance}, pokdeng's record says {expected}")
        report.problems += self.platform_problems(ours)
        for entry in ours.values():
            if entry.tx.kind == "debit" and entry.tx.reason == "round_voided" and entry.tx.status != "rolled_back":
                report.problems.append(f"a void's debit not rolled back: {entry.tx.tx_id}")
        if self.faults.mismatched:
            report.problems.append(f"{self.faults.mismatched} duplicated requests answered differently")
        command = ["verify", "--all", "--quiet", *self.server.store.serve_args()]
        verify = subprocess.run(
            [sys.executable, "-m", "pokdeng_service.cli", *command],
            capture_output=True, text=True, timeout=120, env=child_env(), cwd=str(self.folder),
        )  # fmt: skip
        report.verify_output = verify.stdout + verify.stderr
        if verify.returncode != 0:
            report.problems.append(f"pokdeng verify --all exited {verify.returncode}: {report.verify_output[-2000:]}")
        errors = [line for line in self.server.log_errors() if "Traceback" in line]
        report.problems += [f"server log: {line}" for line in errors[:5]]


def run_soak(folder: Path, config: SoakConfig) -> SoakReport:
    if config.wallet == "hub88":
        from .soak_hub88 import Hub88Soak

        return Hub88Soak(folder, config).run()
    return Soak(folder, config).run()
