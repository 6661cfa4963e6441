"""``pokdeng demo``: a real server on a free loopback port, rounds of every profile through the gRPC client.

It opens wallets, opens one table per profile (the room's banker wins a banker bid),
plays the rounds with seeded choices, prints what the players, the house and the
operator's commission made, checks that the money balances to the minor unit, signs a
tree head over the store's log, then replays and verifies one round through the Audit API
and checks its exported bundle offline, anchored with the demo's public key.

The store stays where the user can find it: ``--db``, else ``pokdeng-demo.sqlite`` in the
current folder (or the next free ``pokdeng-demo-N.sqlite``), with its vault key, its signing
key, its public key file and the chosen round's bundle beside it; the demo ends with the
commands to try next on them (``pokdeng replay … --html``, ``pokdeng verify …``).
"""

from __future__ import annotations

import random
import secrets
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from pokdeng_client import PokdengClient
from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_core.currencies import DEFAULT
from pokdeng_service import audit
from pokdeng_service.api.auth import TokenEntry, TokenStore, token_digest
from pokdeng_service.application.config import StoreConfig
from pokdeng_service.application.principal import Principal, Role
from pokdeng_service.cli.checkpoints import public_keys
from pokdeng_service.cli.console import Console
from pokdeng_service.compose import Deployment
from pokdeng_service.money import format_money
from pokdeng_service.store.signing import KeyRing

PLAYERS = ("alice", "bob", "carol", "dave", "erin")
BANKER = "frank"
FUNDS = 1_000_000  # minor units each (THB 10,000.00)
CURRENCY = DEFAULT  # the demo's wallets and tables are opened in the default currency

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


def _legal(answer: pb.GetLegalCommandsResponse) -> set[int]:
    return {command.kind for command in answer.commands}


DEFAULT_DB = "pokdeng-demo.sqlite"


def demo_db(db: str | None, folder: Path | None = None) -> Path:
    """Where the demo keeps its store: ``db``, else ``pokdeng-demo.sqlite`` in ``folder`` (the current one),
    or the next name no earlier demo took (``pokdeng-demo-2.sqlite``, ...): the demo never reuses a store."""
    if db:
        return Path(db)
    base = folder or Path.cwd()
    path, n = base / DEFAULT_DB, 1
    while any(path.with_name(path.name + suffix).exists() for suffix in ("", ".vault-key", ".signing-keys")):
        n += 1
        path = base / f"pokdeng-demo-{n}.sqlite"
    return path


@contextmanager
def _server(path: Path) -> Iterator[tuple[str, str, str, KeyRing]]:
    config = StoreConfig.from_args(db=str(path))
    key_file = config.signing_key_path()
    ring = KeyRing.from_file(key_file) if key_file.exists() else KeyRing()
    if ring.current is None:  # (what `pokdeng keys new` does: the key that signs the demo's tree heads)
        ring.rotate()
        ring.save(key_file, new=not key_file.exists())
    deployment = Deployment.open(config, clocks=False, read_models=False)
    operator, auditor = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    tokens = TokenStore(
        [
            TokenEntry(token_digest(operator), Principal(Role.OPERATOR, name="demo-operator")),
            TokenEntry(token_digest(auditor), Principal(Role.AUDITOR, name="demo-auditor")),
        ]
    )
    server, port = deployment.server("127.0.0.1:0", tokens=tokens, max_workers=8)
    server.start()
    try:
        yield f"127.0.0.1:{port}", operator, auditor, ring
    finally:
        server.stop(grace=2)
        deployment.close()


def _next_steps(out: Console, path: Path, round_id: str, bundle: Path, keys: Path) -> None:
    """The commands to try next on what the demo left, copied as they are (quoted for a POSIX shell)."""

    def q(file: Path | str) -> str:  # a file under the current folder by its relative path, quoted
        if isinstance(file, Path) and file.is_relative_to(Path.cwd()):
            file = file.relative_to(Path.cwd())
        return shlex.quote(str(file))

    db, key, page = q(path), q(keys), q(path.with_name(f"{bundle.stem}.html"))
    lines = [
        ("the round's dispute page (open it in a browser: it checks the round there)",
         f"pokdeng replay {q(round_id)} --db {db} --html {page} --key {key}"),
        ("its bundle, checked offline", f"pokdeng verify {q(bundle)} --key {key}"),
        ("a page that checks any bundle file in the browser",
         f"pokdeng verifier-page {q(path.with_name(f'{path.stem}-verifier.html'))} --key {key}"),
        ("every stream of the store", f"pokdeng verify --all --quiet --db {db}"),
        ("the last rounds of a table", f"pokdeng recall --table demo-classic --limit 3 --db {db}"),
    ]  # fmt: skip
    out.print(f"\n[bold]the store is kept in {path}[/] (with its keys beside it); try next:")
    for what, command in lines:
        out.print(f"  [dim]# {what}[/]")
        out.print(f"  {command}", markup=False, highlight=False, soft_wrap=True)


def _setup(ops: PokdengClient) -> None:
    for name in (*PLAYERS, BANKER):
        ops.call("WalletService", "OpenWallet", wallet_id=name)
        ops.call("WalletService", "Deposit", wallet_id=name, amount=FUNDS if name != BANKER else 10 * FUNDS)
    for name, settings in PROFILES.items():
        ops.call("TableService", "OpenTable", table_id=f"demo-{name}", turn_timeout=timedelta(seconds=30), **settings)
        if name == "ante":
            continue
        players = PLAYERS[:4] if name == "room" else PLAYERS
        for number, player in enumerate(players, start=1):
            ops.call("TableService", "TakeSeat", table_id=f"demo-{name}", player=player, seat=number)


def _ensure_room_banker(ops: PokdengClient) -> None:
    table = ops.call("TableService", "GetTable", table_id="demo-room").table
    if table.banker:
        return
    ops.call("TableService", "TakeSeat", table_id="demo-room", player=BANKER, seat=5)
    ops.call("TableService", "BidForBanker", table_id="demo-room", player=BANKER, rounds=10)
    for seated in table.seated:
        ops.call("TableService", "BidForBanker", table_id="demo-room", player=seated.player, rounds=0)
    ops.call("TableService", "CloseBankerBid", table_id="demo-room")


def _stake(rng: random.Random, low: int, high: int) -> int:
    return rng.randrange(low, high + 1, 100)


def _play(ops: PokdengClient, name: str, rng: random.Random) -> tuple[str, int]:
    """One round at the profile's table, from its start to its close: the round's id and what was staked."""
    if name == "room":
        _ensure_room_banker(ops)
    round_id = ops.call(
        "RoundService", "StartRound", table_id=f"demo-{name}", client_seed=f"demo-{rng.random():.6f}"
    ).round.round_id
    staked = _place_bets(ops, name, round_id, rng)
    ops.call("RoundService", "Deal", round_id=round_id)
    for _ in range(100):
        current = ops.call("RoundService", "GetRound", round_id=round_id, view=pb.ROUND_VIEW_BASIC).round
        if current.phase == pb.ROUND_PHASE_CLOSED:
            return round_id, staked
        staked += _move(ops, round_id, current, rng)
    raise RuntimeError(f"round {round_id} did not finish")


def _place_bets(ops: PokdengClient, name: str, round_id: str, rng: random.Random) -> int:
    """A seeded stake for every player (at the ante table, on a seeded seat each; else the seated players'):
    what they staked."""
    settings = PROFILES[name]
    low, high = int(settings["min_stake"]), int(settings["max_stake"])
    staked = 0
    if name == "ante":
        for player in PLAYERS:
            stake = _stake(rng, low, high)
            ops.call("RoundService", "PlaceBet", round_id=round_id, seat=rng.randint(1, 5), player=player, stake=stake)
            staked += stake
    else:
        for seated in ops.call("RoundService", "GetRound", round_id=round_id).round.seats:
            stake = _stake(rng, low, high)
            ops.call("RoundService", "PlaceBet", round_id=round_id, seat=seated.seat, player=seated.player, stake=stake)
            staked += stake
    return staked


def _move(ops: PokdengClient, round_id: str, current: pb.Round, rng: random.Random) -> int:
    """The next move of the round in its phase (a turn it has no move for timed out): what it staked."""
    if current.phase == pb.ROUND_PHASE_SIDE_BETS:
        return _side_bets(ops, round_id, current, rng)
    if current.phase == pb.ROUND_PHASE_PLAYER_TURNS:
        holder = {s.seat: s.player for s in current.seats}[current.turn]
        method = "Draw" if rng.random() < 0.5 else "Stay"
        ops.call("RoundService", method, round_id=round_id, seat=current.turn, player=holder)
    elif current.phase == pb.ROUND_PHASE_BANKER_TURN:
        _banker_turn(ops, round_id, current, rng)
    else:
        ops.call("RoundService", "TimeOutTurn", round_id=round_id)
    return 0


def _side_bets(ops: PokdengClient, round_id: str, current: pb.Round, rng: random.Random) -> int:
    """Each bettor allowed one takes the side bet half the time, then the side bets close: what they staked."""
    staked = 0
    for bet in current.bets:
        legal = _legal(ops.call("RoundService", "GetLegalCommands", round_id=round_id, seat=bet.seat))
        if pb.COMMAND_KIND_PLACE_SIDE_BET in legal and rng.random() < 0.5:
            ops.call("RoundService", "PlaceSideBet", round_id=round_id, seat=bet.seat, player=bet.player)
            staked += bet.stake
    ops.call("RoundService", "CloseSideBets", round_id=round_id)
    return staked


def _banker_turn(ops: PokdengClient, round_id: str, current: pb.Round, rng: random.Random) -> None:
    """The banker reveals a hand now and then, else draws or stays; with no move of its own, its turn times out."""
    legal = _legal(ops.call("RoundService", "GetLegalCommands", round_id=round_id, seat=0))
    banker = current.banker_player
    unrevealed = [h.seat for h in current.hands if h.seat and not h.revealed]
    if pb.COMMAND_KIND_BANKER_REVEAL in legal and unrevealed and rng.random() < 0.3:
        ops.call("RoundService", "BankerReveal", round_id=round_id, seats=unrevealed[:1], player=banker)
    elif pb.COMMAND_KIND_BANKER_DRAW in legal:
        ops.call(
            "RoundService",
            "BankerDraw" if rng.random() < 0.5 else "BankerStay",
            round_id=round_id,
            player=banker,
        )
    else:
        ops.call("RoundService", "TimeOutTurn", round_id=round_id)


def _money(amount: int, signed: bool = False) -> str:  # (the demo's wallets and tables are in THB)
    return format_money(amount, CURRENCY, signed=signed)


def _play_rounds(ops: PokdengClient, out: Console, rounds: int, rng: random.Random) -> dict[str, Tally]:
    """``rounds`` rounds of every profile in turn, with a progress bar: each profile's tally of them."""
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
    return tallies


def _count_results(ops: PokdengClient, tallies: dict[str, Tally]) -> None:
    """Each tally's house net and commission (its table's), and its rounds' nets of the players and the banker."""
    for name, tally in tallies.items():
        table = ops.call("TableService", "GetTable", table_id=f"demo-{name}").table
        tally.house_net, tally.commission = table.house_net, table.commission
        for round_id in tally.round_ids:
            for result in ops.call(
                "RoundService", "GetRound", round_id=round_id, view=pb.ROUND_VIEW_BASIC
            ).round.results:
                if result.player == BANKER:
                    tally.banker_net += result.net
                else:
                    tally.players_net += result.net


def _check_money(ops: PokdengClient, out: Console, rounds: int, tallies: dict[str, Tally]) -> bool:
    """The table of the profiles' tallies, and the money check: what the wallets gained, the house's net and the
    commission sum to zero (printed): whether they do."""
    wallets = sum(ops.call("WalletService", "GetWallet", wallet_id=w).wallet.balance for w in (*PLAYERS, BANKER))
    funded = FUNDS * len(PLAYERS) + 10 * FUNDS
    summary = Table(title=f"{rounds} rounds per profile (money in {CURRENCY})")
    for column in ("profile", "rounds", "staked", "players' net", "player-banker", "house", "commission"):
        summary.add_column(column, justify="left" if column == "profile" else "right")
    for name, t in tallies.items():
        summary.add_row(
            name,
            str(t.rounds),
            _money(t.staked),
            _money(t.players_net, True),
            _money(t.banker_net, True),
            _money(t.house_net, True),
            _money(t.commission),
        )
    out.print(summary)
    house = sum(t.house_net for t in tallies.values())
    commission = sum(t.commission for t in tallies.values())
    balance = (wallets - funded) + house + commission
    out.print(
        f"money check: wallets {_money(wallets - funded, True)} + house {_money(house, True)} + commission "
        f"{_money(commission)} = {_money(balance)} {'[green]balanced[/]' if balance == 0 else '[red]NOT BALANCED[/]'}"
    )
    return bool(balance == 0)


def _audit(
    ops: PokdengClient, auditors: PokdengClient, out: Console, path: Path, ring: KeyRing, chosen: str
) -> tuple[bool, Path, Path]:
    """A signed tree head; the chosen round replayed and verified by the Audit API, its bundle exported beside
    the store with the public keys and verified offline, anchored (each printed): whether both passed, the
    bundle's file and the keys' file."""
    head = ops.call("AuditService", "SignTreeHead").head  # the log of closed rounds, signed
    out.print(f"signed tree head: {head.tree_size} rounds, key {head.key_id}")
    verdict = auditors.call("AuditService", "VerifyRound", round_id=chosen)
    out.print(f"\n[bold]replay and verify {chosen}[/] (as the auditor): {'PASS' if verdict.ok else 'FAIL'}")
    for check in verdict.checks:
        out.print(f"  {'ok ' if check.passed else 'BAD'} {check.name}: {check.detail}")
    bundle = auditors.call("AuditService", "ExportRound", round_id=chosen)
    keys = path.with_name(path.name + ".public-keys")
    keys.write_text("# pokdeng signing keys (public): KEY_ID PUBLIC_KEY\n" + "\n".join(ring.describe()) + "\n")
    saved = path.with_name(f"{path.stem}-{chosen.replace('#', '-')}.json")
    saved.write_text(bundle.bundle_json, encoding="utf-8")
    offline = audit.verify_bundle(bundle.bundle_json.encode(), keys=public_keys([str(keys)]))
    out.print(
        f"exported bundle ({len(bundle.bundle_json):,} bytes, {saved.name}) verified offline: "
        f"{'PASS' if offline.ok else 'FAIL ' + offline.first_difference}"
        + (" (anchored: the signed head verifies with the demo's key)" if offline.ok else "")
    )
    return bool(verdict.ok and offline.ok), saved, keys


def run_demo(rounds: int = 5, db: str | None = None, seed: int = 7, console: Console | None = None) -> int:
    out = console or Console(soft_wrap=True)  # (a path or seed is never broken over lines, on a terminal or not)
    rng = random.Random(seed)
    path = demo_db(db).resolve()
    with _server(path) as (target, operator, auditor, ring):
        out.print(f"[bold]pokdeng demo[/]: server on {target}, SQLite store {path}")
        with PokdengClient(target, operator) as ops, PokdengClient(target, auditor) as auditors:
            _setup(ops)
            tallies = _play_rounds(ops, out, rounds, rng)
            _count_results(ops, tallies)
            balanced = _check_money(ops, out, rounds, tallies)
            chosen = tallies["kingmaker"].round_ids[-1]
            verified, saved, keys = _audit(ops, auditors, out, path, ring, chosen)
            ok = balanced and verified
            out.print(
                "[green]demo finished: every round settled and verified[/]" if ok else "[red]demo found a problem[/]"
            )
            _next_steps(out, path, chosen, saved, keys)
            return 0 if ok else 1
