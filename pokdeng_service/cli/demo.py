"""``pokdeng demo``: a real server on a free loopback port, rounds of every profile through the gRPC client.

It opens wallets, opens one table per profile (the room's banker wins a banker bid),
plays the rounds with seeded choices, prints what the players, the house and the
operator's commission made, checks that the money balances to the minor unit, then
replays and verifies one round through the Audit API and checks its exported bundle
offline.
"""

from __future__ import annotations

import random
import secrets
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from pokdeng_service import audit
from pokdeng_service.api.auth import TokenStore
from pokdeng_service.api.client import PokdengClient
from pokdeng_service.api.v1 import pokdeng_pb2 as pb
from pokdeng_service.application.config import StoreConfig
from pokdeng_service.compose import Deployment

PLAYERS = ("alice", "bob", "carol", "dave", "erin")
BANKER = "frank"
FUNDS = 1_000_000  # minor units each

PROFILES = {
    "classic": dict(profile=pb.PROFILE_CLASSIC, min_stake=100, max_stake=2_000, seats=5),
    "ante": dict(profile=pb.PROFILE_ANTE, min_stake=100, max_stake=2_000, seats=5),
    "room": dict(profile=pb.PROFILE_ROOM, min_stake=100, max_stake=1_000, seats=5),
    "kingmaker": dict(profile=pb.PROFILE_KINGMAKER, min_stake=100, max_stake=2_000, seats=5),
}


@dataclass
class Tally:
    rounds: int = 0
    staked: int = 0
    players_net: int = 0
    banker_net: int = 0
    house_net: int = 0
    commission: int = 0
    round_ids: list[str] = field(default_factory=list)


@contextmanager
def _server(db: str | None) -> Iterator[tuple[str, str, str, Any]]:
    with tempfile.TemporaryDirectory(prefix="pokdeng-demo-") as folder:
        path = db or str(Path(folder) / "pokdeng.sqlite")
        deployment = Deployment.open(StoreConfig.from_args(db=path), clocks=False, read_models=False)
        operator, auditor = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        tokens = TokenStore.from_tokens([(operator, "operator", None), (auditor, "auditor", None)])
        server, port = deployment.server("127.0.0.1:0", tokens=tokens, max_workers=8)
        server.start()
        try:
            yield f"127.0.0.1:{port}", operator, auditor, path
        finally:
            server.stop(grace=2)
            deployment.close()


def _setup(ops: PokdengClient) -> None:
    for name in (*PLAYERS, BANKER):
        ops.call("Wallets", "OpenWallet", wallet_id=name)
        ops.call("Wallets", "Deposit", wallet_id=name, amount=FUNDS if name != BANKER else 10 * FUNDS)
    for name, settings in PROFILES.items():
        ops.call("Tables", "OpenTable", table_id=f"demo-{name}", turn_timeout=30, **settings)
        if name == "ante":
            continue
        players = PLAYERS[:4] if name == "room" else PLAYERS
        for number, player in enumerate(players, start=1):
            ops.call("Tables", "TakeSeat", table_id=f"demo-{name}", player=player, seat=number)


def _ensure_room_banker(ops: PokdengClient) -> None:
    table = ops.call("Queries", "GetTable", table_id="demo-room")
    if table.banker:
        return
    ops.call("Tables", "TakeSeat", table_id="demo-room", player=BANKER, seat=5)
    ops.call("Tables", "BidForBanker", table_id="demo-room", player=BANKER, rounds=10)
    for seated in table.seated:
        ops.call("Tables", "BidForBanker", table_id="demo-room", player=seated.player, rounds=0)
    ops.call("Tables", "CloseBankerBid", table_id="demo-room")


def _stake(rng: random.Random, low: int, high: int) -> int:
    return rng.randrange(low, high + 1, 100)


def _play(ops: PokdengClient, name: str, rng: random.Random) -> tuple[str, int]:
    table_id = f"demo-{name}"
    if name == "room":
        _ensure_room_banker(ops)
    settings = PROFILES[name]
    low, high = int(settings["min_stake"]), int(settings["max_stake"])
    round_id = ops.call(
        "Tables", "StartRound", table_id=table_id, client_seed=f"demo-{rng.random():.6f}"
    ).round.round_id
    staked = 0
    if name == "ante":
        for player in PLAYERS:
            stake = _stake(rng, low, high)
            ops.call("Tables", "PlaceBet", round_id=round_id, seat=rng.randint(1, 5), player=player, stake=stake)
            staked += stake
    else:
        for seated in ops.call("Queries", "GetRound", round_id=round_id).seats:
            stake = _stake(rng, low, high)
            ops.call("Tables", "PlaceBet", round_id=round_id, seat=seated.seat, player=seated.player, stake=stake)
            staked += stake
    ops.call("Tables", "Deal", round_id=round_id)
    for _ in range(100):
        current = ops.call("Queries", "GetRound", round_id=round_id)
        if current.phase == pb.ROUND_PHASE_CLOSED:
            return round_id, staked
        if current.phase == pb.ROUND_PHASE_SIDE_BETS:
            for bet in current.bets:
                legal = ops.call("Queries", "GetLegalCommands", round_id=round_id, seat=bet.seat).commands
                if "place_side_bet" in legal and rng.random() < 0.5:
                    ops.call("Tables", "PlaceSideBet", round_id=round_id, seat=bet.seat, player=bet.player)
                    staked += bet.stake
            ops.call("Tables", "CloseSideBets", round_id=round_id)
        elif current.phase == pb.ROUND_PHASE_PLAYER_TURNS:
            holder = {s.seat: s.player for s in current.seats}[current.turn]
            method = "Draw" if rng.random() < 0.5 else "Stay"
            ops.call("Tables", method, round_id=round_id, seat=current.turn, player=holder)
        elif current.phase == pb.ROUND_PHASE_BANKER_TURN:
            legal = ops.call("Queries", "GetLegalCommands", round_id=round_id, seat=0).commands
            banker = current.banker_player
            unrevealed = [h.seat for h in current.hands if h.seat and not h.revealed]
            if "banker_reveal" in legal and unrevealed and rng.random() < 0.3:
                ops.call("Tables", "BankerReveal", round_id=round_id, seats=unrevealed[:1], player=banker)
            elif "banker_draw" in legal:
                ops.call(
                    "Tables", "BankerDraw" if rng.random() < 0.5 else "BankerStay", round_id=round_id, player=banker
                )
            else:
                ops.call("Tables", "TimeOutTurn", round_id=round_id)
        else:
            ops.call("Tables", "TimeOutTurn", round_id=round_id)
    raise RuntimeError(f"round {round_id} did not finish")


def run_demo(rounds: int = 5, db: str | None = None, seed: int = 7, console: Console | None = None) -> int:
    out = console or Console()
    rng = random.Random(seed)
    with _server(db) as (target, operator, auditor, path):
        out.print(f"[bold]pokdeng demo[/]: server on {target}, SQLite store {path}")
        with PokdengClient(target, operator) as ops, PokdengClient(target, auditor) as auditors:
            _setup(ops)
            tallies = {name: Tally() for name in PROFILES}
            columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
            with Progress(*columns, console=out, transient=False) as progress:
                task = progress.add_task("playing rounds", total=rounds * len(PROFILES))
                for _ in range(rounds):
                    for name in PROFILES:
                        round_id, staked = _play(ops, name, rng)
                        tally = tallies[name]
                        tally.rounds += 1
                        tally.staked += staked
                        tally.round_ids.append(round_id)
                        progress.advance(task)
            for name, tally in tallies.items():
                table = ops.call("Queries", "GetTable", table_id=f"demo-{name}")
                tally.house_net, tally.commission = table.house_net, table.commission
                for round_id in tally.round_ids:
                    for result in ops.call("Queries", "GetRound", round_id=round_id).results:
                        if result.player == BANKER:
                            tally.banker_net += result.net
                        else:
                            tally.players_net += result.net
            wallets = sum(ops.call("Wallets", "GetWallet", wallet_id=w).balance for w in (*PLAYERS, BANKER))
            funded = FUNDS * len(PLAYERS) + 10 * FUNDS
            summary = Table(title=f"{rounds} rounds per profile (money in minor units)")
            for column in ("profile", "rounds", "staked", "players' net", "player-banker", "house", "commission"):
                summary.add_column(column, justify="left" if column == "profile" else "right")
            for name, t in tallies.items():
                summary.add_row(
                    name,
                    str(t.rounds),
                    f"{t.staked:,}",
                    f"{t.players_net:+,}",
                    f"{t.banker_net:+,}",
                    f"{t.house_net:+,}",
                    f"{t.commission:,}",
                )
            out.print(summary)
            house = sum(t.house_net for t in tallies.values())
            commission = sum(t.commission for t in tallies.values())
            balance = (wallets - funded) + house + commission
            out.print(
                f"money check: wallets {wallets - funded:+,} + house {house:+,} + commission {commission:,} "
                f"= {balance} {'[green]balanced[/]' if balance == 0 else '[red]NOT BALANCED[/]'}"
            )

            chosen = tallies["kingmaker"].round_ids[-1]
            verdict = auditors.call("Audit", "VerifyRound", round_id=chosen)
            out.print(f"\n[bold]replay and verify {chosen}[/] (as the auditor): {'PASS' if verdict.ok else 'FAIL'}")
            for check in verdict.checks:
                out.print(f"  {'ok ' if check.passed else 'BAD'} {check.name}: {check.detail}")
            bundle = auditors.call("Audit", "ExportRound", round_id=chosen)
            offline = audit.verify_bundle(bundle.bundle_json.encode())
            out.print(
                f"exported bundle ({len(bundle.bundle_json):,} bytes) verified offline: "
                f"{'PASS' if offline.ok else 'FAIL ' + offline.first_difference}"
            )
            ok = balance == 0 and verdict.ok and offline.ok
            out.print(
                "[green]demo finished: every round settled and verified[/]" if ok else "[red]demo found a problem[/]"
            )
            return 0 if ok else 1
