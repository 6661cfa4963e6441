"""Play rounds at a table through the gRPC API, with request ids derived from what the round is.

A ``TableDriver`` owns (or, in shared mode, shares) one table. Between rounds it reads the table
(``GetTable``): a current round is resumed; a room without a banker holds a banker bid; now and
then it deposits to or withdraws from one of its wallets; then it starts the next round (a room
start refused ``BANKER_CANNOT_COVER`` ended the banker's role instead: a bid, then the same start). In a
round it reads the round (``GetRound``, then the state each command's answer carries) and issues
the next command, asking ``GetLegalCommands`` whose turn it is to choose.

Request ids are functions of the round and its state, never of the client's history:
``<round>:bet:<seat>:<player>``, ``<round>:deal``, ``<round>:side:<seat>``, ``<round>:turn:<seat>``,
``<round>:banker``, ``<round>@<version>:reveal`` / ``:timeout``, ``<table>#<n>:start``, and
choices (stakes, draw or stay) are hashes of the same. So a client that lost an answer and retries,
a client that read the round again after a restart, and a second client on another replica all
send the very same request for the same decision: the server's idempotency makes it happen once.

Every request that got an answer is remembered (``acked``), with wallet deposits and withdrawals in
``ledger`` (request id -> wallet, signed amount): the checks find each exactly once in the store.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import grpc

from pokdeng_client.v1 import pokdeng_pb2 as pb

from .client import GaveUp, HarnessClient, code_of, command_names, reason_of
from .tokens import Tokens

PROFILES = {
    "classic": pb.PROFILE_CLASSIC,
    "ante": pb.PROFILE_ANTE,
    "room": pb.PROFILE_ROOM,
    "kingmaker": pb.PROFILE_KINGMAKER,
}
ROTATION = ("classic", "kingmaker", "room", "ante")
FUNDS = 100_000_000
MAX_STEPS = 200  # commands (and reads) per round, far above any real round
MAX_UNEXPECTED = 25  # a driver stops after this many unexpected errors
CLOSED = pb.ROUND_PHASE_CLOSED


def frac(*parts: object) -> float:
    """A number in [0, 1) that depends only on ``parts``."""
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:6], "big") / 2**48


@dataclass(frozen=True)
class TableSpec:
    """A table, its players (seat n+1 is ``players[n]``; ante: the bettors) and an optional backer."""

    table_id: str
    profile: str
    players: tuple[str, ...]
    backer: str | None = None  # classic: also stakes on seat 1
    min_stake: int = 100
    max_stake: int = 1000
    turn_timeout: int = 3600  # seconds; the harness plays every turn itself; the clock is tested on its own

    @property
    def wallets(self) -> tuple[str, ...]:
        return self.players + ((self.backer,) if self.backer else ())

    def expected_bets(self, round_: pb.Round) -> list[tuple[int, str]]:
        """The stakes this table places in a round: (seat, player)."""
        if self.profile == "ante":
            p = self.players
            return [(1, p[0]), (2, p[1 % len(p)]), (2, p[2 % len(p)]), (5, p[0])]
        bets = [(s.seat, s.player) for s in round_.seats if s.player]
        if self.backer and bets:
            bets.append((bets[0][0], self.backer))
        return bets

    def stake(self, round_id: str, seat: int, player: str) -> int:
        low, high = self.min_stake, self.max_stake
        stake = low + int(frac(round_id, "stake", seat, player) * (high - low + 1))
        if self.profile == "ante":
            stake -= stake % 2
        return max(low, min(high, stake))


def make_tables(prefix: str, count: int, players_per_table: int = 3, backer: bool = True) -> list[TableSpec]:
    """``count`` tables named ``<prefix>-<i>``, profiles in rotation, each with its own players."""
    specs = []
    for i in range(count):
        profile = ROTATION[i % len(ROTATION)]
        players = tuple(f"{prefix}-{i}-p{j}" for j in range(players_per_table))
        specs.append(
            TableSpec(
                f"{prefix}-{i}",
                profile,
                players,
                backer=f"{prefix}-{i}-backer" if backer and profile == "classic" else None,
            )
        )
    return specs


class Refused(Exception):
    """The server refused a command because the state had moved on (another client, the turn clock);
    ``reason``: the refusal's ErrorInfo reason (``WRONG_PHASE``, ``BANKER_CANNOT_COVER`` ...)."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason


@dataclass
class TableDriver:
    spec: TableSpec
    client: HarnessClient
    tokens: Tokens
    name: str = ""
    shared: bool = False  # other drivers play the same table: refusals of stale commands are expected
    reverse: bool = False  # shared mode: take the table's decisions in the other order
    wallet_every: int = 3  # a deposit or withdrawal every this many rounds (0: never)
    wallet_pool: Sequence[str] = ()  # wallets for deposits/withdrawals (default: the table's)
    acked: set[str] = field(default_factory=set)
    ledger: dict[str, tuple[str, int]] = field(default_factory=dict)
    closed: list[str] = field(default_factory=list)
    refused: Counter[str] = field(default_factory=Counter)
    unexpected: list[str] = field(default_factory=list)
    resumed: int = 0  # rounds found open (and resumed) when a new one was due
    interrupted: set[str] = field(default_factory=set)  # rounds in which a command had to be retried
    wallet_ops: int = 0

    def __post_init__(self) -> None:
        self.name = self.name or self.spec.table_id
        self.ops = self.client.as_token(self.tokens.operator)
        self.as_player = {p: self.client.as_token(self.tokens.players[p]) for p in self.spec.wallets}
        self._refused_at: set[tuple[str, int]] = set()

    @property
    def stats(self) -> Any:
        return self.client.stats

    # -- calls ------------------------------------------------------------------------------

    def command(self, api: HarnessClient, service: str, method: str, request_id: str, **fields: Any) -> Any:
        """A command with a fixed request id; a refusal (FAILED_PRECONDITION) raises ``Refused``."""
        try:
            response = api.send(service, method, request_id=request_id, **fields)
        except grpc.RpcError as error:
            if isinstance(error, grpc.Call) and error.code() == grpc.StatusCode.FAILED_PRECONDITION:
                self.refused[method] += 1
                raise Refused(f"{method} {request_id}: {error.details()}", reason_of(error)) from None
            raise
        self.acked.add(request_id)
        return response

    def table(self) -> pb.Table:
        table: pb.Table = self.ops.send("TableService", "GetTable", table_id=self.spec.table_id).table
        return table

    def round(self, round_id: str) -> pb.Round:
        round_: pb.Round = self.ops.send("RoundService", "GetRound", round_id=round_id).round
        return round_

    def legal(self, api: HarnessClient, round_id: str, seat: int) -> list[str]:
        """GetLegalCommands for a seat's holder (0: the banker), by the engine's names ("draw", ...)."""
        return command_names(api.send("RoundService", "GetLegalCommands", round_id=round_id, seat=seat).commands)

    def act(self, api: HarnessClient, method: str, request_id: str, **fields: Any) -> pb.Round:
        """A round command (RoundService); the round as its answer shows it."""
        round_: pb.Round = self.command(api, "RoundService", method, request_id, **fields).round
        return round_

    # -- set-up -----------------------------------------------------------------------------

    def setup(self, funds: int = FUNDS) -> None:
        """Wallets (opened and funded), the table, the seats. Idempotent: safe to run twice, or from two drivers."""
        for wallet in self.spec.wallets:
            try:
                self.command(self.ops, "WalletService", "OpenWallet", f"setup:{wallet}:open", wallet_id=wallet)
            except grpc.RpcError as error:
                if not (isinstance(error, grpc.Call) and error.code() == grpc.StatusCode.ALREADY_EXISTS):
                    raise
            rid = f"setup:{wallet}:fund"
            self.command(self.ops, "WalletService", "Deposit", rid, wallet_id=wallet, amount=funds)
            self.ledger[rid] = (wallet, funds)
        spec = self.spec
        self.command(
            self.ops,
            "TableService",
            "OpenTable",
            f"setup:{spec.table_id}:open",
            table_id=spec.table_id,
            profile=PROFILES[spec.profile],
            min_stake=spec.min_stake,
            max_stake=spec.max_stake,
            seats=0 if spec.profile == "ante" else max(5, len(spec.players)),
            turn_timeout=timedelta(seconds=spec.turn_timeout),
        )
        if spec.profile != "ante":
            for number, player in enumerate(spec.players, start=1):
                self.command(
                    self.as_player[player],
                    "TableService",
                    "TakeSeat",
                    f"setup:{spec.table_id}:seat:{number}",
                    table_id=spec.table_id,
                    player=player,
                    seat=number,
                )

    # -- between rounds ---------------------------------------------------------------------

    def next_round(self) -> str | None:
        """The round to play: the table's current one (resumed) or a new one; None if not possible yet."""
        table = self.table()
        if table.current_round_id:
            self.resumed += 1
            return table.current_round_id
        if self.wallet_every and (table.round_no + (1 if self.reverse else 0)) % self.wallet_every == 0:
            self.wallet_op()
        if self.spec.profile == "room" and not table.banker:
            self.hold_banker_bid(table)
            table = self.table()
            if table.current_round_id:
                return table.current_round_id
            if not table.banker:
                return None
        round_id = f"{self.spec.table_id}#{table.round_no + 1}"
        try:
            answer = self.command(
                self.ops,
                "RoundService",
                "StartRound",
                f"{round_id}:start",
                table_id=self.spec.table_id,
                client_seed=f"harness {round_id}",
            )
        except Refused as refusal:
            if refusal.reason != "BANKER_CANNOT_COVER":
                raise
            return None  # the room's banker lost its role instead: the next turn holds the bid, then this start
        return str(answer.round.round_id)

    def wallet_op(self) -> None:
        """A deposit or a withdrawal on one of the wallets, with this driver's own request id."""
        self.wallet_ops += 1
        k = self.wallet_ops
        pool = self.wallet_pool or self.spec.wallets
        wallet = pool[k % len(pool)]
        rid = f"{self.name}:wallet:{k}"
        amount = 100 + int(frac(rid, "amount") * 50_000)
        method = "Deposit" if k % 2 else "Withdraw"
        try:
            self.command(self.ops, "WalletService", method, rid, wallet_id=wallet, amount=amount)
        except Refused:
            return  # not enough available: nothing happened
        self.ledger[rid] = (wallet, amount if method == "Deposit" else -amount)

    def hold_banker_bid(self, table: pb.Table) -> None:
        """Room without a banker: reseat the players, the first in this epoch's rotation bids, the others skip."""
        spec, epoch = self.spec, table.round_no
        seated = {s.player for s in table.seated}
        bid = {b.player for b in table.bids}
        try:
            for number, player in enumerate(spec.players, start=1):
                if player not in seated:
                    self.command(
                        self.as_player[player],
                        "TableService",
                        "TakeSeat",
                        f"{spec.table_id}@{epoch}:seat:{player}",
                        table_id=spec.table_id,
                        player=player,
                        seat=number,
                    )
            order = spec.players[epoch % len(spec.players) :] + spec.players[: epoch % len(spec.players)]
            for j, player in enumerate(order):
                if player not in bid:
                    self.command(
                        self.as_player[player],
                        "TableService",
                        "BidForBanker",
                        f"{spec.table_id}@{epoch}:bid:{player}",
                        table_id=spec.table_id,
                        player=player,
                        rounds=5 if j == 0 else 0,
                    )
            self.command(
                self.ops, "TableService", "CloseBankerBid", f"{spec.table_id}@{epoch}:close-bid", table_id=spec.table_id
            )
        except Refused:
            if not self.shared:
                raise

    # -- a round ----------------------------------------------------------------------------

    def play(self, stop: threading.Event, max_rounds: int = 10**9, deadline: float | None = None) -> None:
        """Play rounds until ``stop`` is set (then it leaves the round where it stands), ``max_rounds`` or
        ``deadline`` (monotonic; then it finishes the round in play). Never raises: what went wrong is
        in ``unexpected``."""
        try:
            self._play(stop, max_rounds, deadline)
        except Exception as error:  # a thread's target: report, never die silently
            self.unexpected.append(f"{type(error).__name__}: {error}")

    def _play(self, stop: threading.Event, max_rounds: int, deadline: float | None) -> None:
        for _ in range(min(max_rounds, 10**6) * 4 + 10):
            if stop.is_set() or len(self.closed) >= max_rounds or (deadline and time.monotonic() > deadline):
                return
            try:
                round_id = self.next_round()
                if round_id is not None:
                    self.play_round(round_id, stop)
            except (Refused, grpc.RpcError, GaveUp) as error:
                if not self.note(error):
                    return

    def note(self, error: BaseException) -> bool:
        """Count an error; False when the driver should stop."""
        if isinstance(error, Refused):
            if not self.shared:
                self.unexpected.append(f"refused: {error}")
        else:
            detail = error.details() if isinstance(error, grpc.Call) else str(error)
            self.unexpected.append(f"{code_of(error)}: {detail}")
        return len(self.unexpected) < MAX_UNEXPECTED

    def play_round(self, round_id: str, stop: threading.Event | None = None) -> pb.Round | None:
        """Play ``round_id`` to its close (None: ``stop`` was set first)."""
        current = self.round(round_id)
        for _ in range(MAX_STEPS):
            if current.phase == CLOSED:
                if round_id not in self.closed:
                    self.closed.append(round_id)
                return current
            if stop is not None and stop.is_set():
                return None
            retried = self.stats.retried_calls
            try:
                current = self.step(current)
                if self.stats.retried_calls != retried:  # the server went away meanwhile: read the round again
                    self.interrupted.add(round_id)
                    current = self.round(round_id)
            except Refused as error:
                self.note(error)
                self._refused_at.add((round_id, current.version))
                current = self.round(round_id)
        raise AssertionError(f"{self.name}: round {round_id} did not close in {MAX_STEPS} steps")

    def step(self, r: pb.Round) -> pb.Round:
        """Issue the round's next command; the round as the answer shows it."""
        rid, phase = r.round_id, r.phase
        fallback = (rid, r.version) in self._refused_at  # a decision was refused here: the plainest one now
        if phase == pb.ROUND_PHASE_BETTING:
            return self._betting(r)
        if phase == pb.ROUND_PHASE_SIDE_BETS:
            if not fallback:
                holders = {s.seat: s.player for s in r.seats}
                taken = {b.seat for b in r.side_bets}
                mains = [b for b in r.bets if holders.get(b.seat) == b.player and b.seat not in taken]
                for bet in reversed(mains) if self.reverse else mains:
                    if frac(rid, "side", bet.seat) < 0.5:
                        return self.act(
                            self.as_player[bet.player],
                            "PlaceSideBet",
                            f"{rid}:side:{bet.seat}",
                            round_id=rid,
                            seat=bet.seat,
                            player=bet.player,
                        )
            return self.act(self.ops, "CloseSideBets", f"{rid}:close-side", round_id=rid)
        if phase == pb.ROUND_PHASE_PLAYER_TURNS:
            seat = r.turn
            holder = {s.seat: s.player for s in r.seats}.get(seat, "")
            api = self.as_player.get(holder)
            if api is not None and not fallback and "draw" in self.legal(api, rid, seat):
                method = "Draw" if frac(rid, "draw", seat) < 0.5 else "Stay"
                return self.act(api, method, f"{rid}:turn:{seat}", round_id=rid, seat=seat, player=holder)
            return self._time_out(r)
        if phase == pb.ROUND_PHASE_BANKER_TURN:
            banker = r.banker_player
            api = self.as_player.get(banker) if banker else self.ops
            if api is not None and not fallback:
                legal = self.legal(api, rid, 0)
                waiting = [h.seat for h in r.hands if h.seat != 0 and not h.revealed]
                if "banker_reveal" in legal and len(waiting) >= 2 and frac(rid, "reveal", r.version) < 0.4:
                    return self.act(
                        api,
                        "BankerReveal",
                        f"{rid}@{r.version}:reveal",
                        round_id=rid,
                        seats=[waiting[0]],
                        player=banker,
                    )
                if "banker_draw" in legal:
                    method = "BankerDraw" if frac(rid, "banker") < 0.5 else "BankerStay"
                    return self.act(api, method, f"{rid}:banker", round_id=rid, player=banker)
            return self._time_out(r)
        raise AssertionError(f"{self.name}: round {rid} in phase {pb.RoundPhase.Name(phase)} between commands")

    def _betting(self, r: pb.Round) -> pb.Round:
        rid = r.round_id
        placed = {(b.seat, b.player) for b in r.bets}
        expected = self.spec.expected_bets(r)
        for seat, player in reversed(expected) if self.reverse else expected:
            if (seat, player) not in placed:
                return self.act(
                    self.as_player[player],
                    "PlaceBet",
                    f"{rid}:bet:{seat}:{player}",
                    round_id=rid,
                    seat=seat,
                    player=player,
                    stake=self.spec.stake(rid, seat, player),
                )
        return self.act(self.ops, "Deal", f"{rid}:deal", round_id=rid)

    def _time_out(self, r: pb.Round) -> pb.Round:
        """The operator times the turn out, unless the round has moved since ``r`` was read (then: the round)."""
        rid = r.round_id
        fresh = self.round(rid)
        if fresh.version != r.version:
            return fresh
        return self.act(self.ops, "TimeOutTurn", f"{rid}@{r.version}:timeout", round_id=rid)


def merged_ledger(drivers: Sequence[TableDriver]) -> dict[str, tuple[str, int]]:
    ledger: dict[str, tuple[str, int]] = {}
    for driver in drivers:
        ledger.update(driver.ledger)
    return ledger


def all_acked(drivers: Sequence[TableDriver]) -> set[str]:
    return set().union(*(d.acked for d in drivers)) if drivers else set()


def play_for(drivers: Sequence[TableDriver], seconds: float) -> tuple[float, int]:
    """Every driver plays rounds in a thread of its own for ``seconds``, then stops where it stands (its
    thread is waited for up to 60 s): the seconds played, and how many drivers had not stopped by then."""
    stop = threading.Event()
    threads = [threading.Thread(target=d.play, args=(stop,), daemon=True) for d in drivers]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    elapsed = time.monotonic() - started
    for thread in threads:
        thread.join(timeout=60)
    return elapsed, sum(1 for thread in threads if thread.is_alive())
