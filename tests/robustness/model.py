"""What the model-based tests share: the world as the application shows it, and the invariants.

``ModelBase`` is a hypothesis ``RuleBasedStateMachine`` without rules. A subclass owns an
application (``self.app``), issues commands (directly or through gRPC) and keeps the model's
own record: ``flows`` (each opened wallet's accepted deposits minus withdrawals), ``tables``
(the tables opened) and ``rounds`` (the rounds started, in order). After every step:

* money balances to zero: sum over wallets of (balance - deposits + withdrawals) plus every
  table's house_net and commission is 0; balances, house nets and commissions stay in int64;
* no reservation leaks: each wallet's reservations are exactly what the open rounds hold for
  it (its stakes, and the player-banker's cover); nothing for a closed round;
* every round that closes verifies (``verify_round(round_id, check_wallets=False).ok``), no
  wallet lost more than the round had reserved in it, and a closed round stays closed;
* every round not yet closed is its table's current round, and no round exists that the
  model did not start.

``world()`` is read once and reused until a command is accepted, so that a refused command is
compared with the world as it was just before it.
"""

from __future__ import annotations

import hashlib
import itertools
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis.stateful import RuleBasedStateMachine, invariant

from pokdeng_core.round_state import Phase, RoundState
from pokdeng_service import audit
from pokdeng_service.application import PokdengApp
from pokdeng_service.application.errors import NotFound
from pokdeng_service.store import merkle

INT64_MAX, INT64_MIN = 2**63 - 1, -(2**63)


class Seeds:
    """Server seeds from a counter, reset with each model: hypothesis replays a sequence exactly
    (the same cards, hence the same phases and preconditions) when it shrinks. Installed over
    ``pokdeng_service.application.fresh_seed`` by the ``deterministic_seeds`` fixture."""

    counter = itertools.count()
    issued: list[bytes] = []  # noqa: RUF012 - every seed handed out since the last reset

    @classmethod
    def reset(cls) -> None:
        cls.counter = itertools.count()
        cls.issued = []

    @classmethod
    def next(cls) -> bytes:
        seed = hashlib.sha256(f"model seed {next(cls.counter)}".encode()).digest()
        cls.issued.append(seed)
        return seed


def view_or_none(get: Callable[[str], Any], ident: str) -> Any:
    try:
        return get(ident)
    except NotFound:
        return None


@dataclass(frozen=True)
class World:
    """Everything a command could change, as the application shows it: the log's head, every wallet
    and table of the pools (None: not there), every round not yet closed and each table's next round."""

    position: int
    wallets: tuple[tuple[str, Any], ...]
    tables: tuple[tuple[str, Any], ...]
    rounds: tuple[tuple[str, Any], ...]

    def wallet(self, wallet_id: str) -> Any:
        return dict(self.wallets).get(wallet_id)

    def table(self, table_id: str) -> Any:
        return dict(self.tables).get(table_id)


class ModelBase(RuleBasedStateMachine):
    """The model's record, the world and the invariants; subclasses add the rules."""

    wallet_pool: Sequence[str] = ()
    table_pool: Sequence[str] = ()
    stats: Counter[str] = Counter()  # noqa: RUF012 - each test module hands its own in

    app: PokdengApp

    def __init__(self) -> None:
        super().__init__()
        Seeds.reset()
        self.flows: dict[str, int] = {}  # wallet -> accepted deposits - withdrawals
        self.tables: set[str] = set()
        self.rounds: list[str] = []
        self.closed: set[str] = set()  # closed rounds (verified when they closed)
        self._world: World | None = None  # what the application shows now (None: read it again)

    def final_audit(self) -> None:
        """At the end: every closed round verifies again, the wallets' side included; a round a
        checkpoint covers has an inclusion proof that checks against the checkpoint's root; every
        wallet's statement adds up to its balance and its reservations."""
        for round_id in self.rounds:
            if not self.app.round_state(round_id).is_closed:
                continue
            verdict = audit.verify_round(self.app, round_id, check_wallets=True)
            assert verdict.ok, (round_id, verdict)
            proof = self.app.inclusion_proof(round_id)
            if proof is not None:
                leaf = merkle.leaf_hash(round_id, self.app.round_events(round_id)[-1].digest)
                assert proof["leaf"] == leaf.hex(), (round_id, proof)
                path = [bytes.fromhex(h) for h in proof["path"]]
                root = bytes.fromhex(proof["root"])
                assert merkle.verify_inclusion(leaf, proof["index"], proof["size"], path, root), proof
                self.stats["inclusion proofs checked"] += 1
        for wallet in self.flows:
            view = self.app.get_wallet(wallet)
            lines: list[Any] = []
            while page := self.app.wallet_statement(wallet, after=lines[-1].position if lines else 0, limit=1000):
                lines.extend(page)
            assert sum(line.amount for line in lines) == view.balance, (wallet, view)
            assert sum(line.reserved_change for line in lines) == view.reserved, (wallet, view)
            assert not lines or lines[-1].balance_after == view.balance, (wallet, lines[-1], view)

    # -- the world -----------------------------------------------------------------------------

    def read_world(self) -> World:
        app = self.app
        tables = tuple((t, view_or_none(app.get_table, t)) for t in self.table_pool)
        rounds = [r for r in self.rounds if r not in self.closed]
        rounds.extend(f"{t}#{view.round_no + 1}" for t, view in tables if view is not None)
        return World(
            position=app.max_position,
            wallets=tuple((w, view_or_none(app.get_wallet, w)) for w in self.wallet_pool),
            tables=tables,
            rounds=tuple((r, view_or_none(lambda r: app.get_round(r, with_events=False), r)) for r in rounds),
        )

    def world(self) -> World:
        if self._world is None:
            self._world = self.read_world()
        return self._world

    def changed(self) -> None:
        """A command was accepted: read the world again next time."""
        self._world = None

    def check_start_refused(self, before: World, table_id: str, banker_ended: bool, retry: Callable[[], None]) -> None:
        """The refusals that record (a room's start: its banker cannot cover the round, or every player was
        short of funds): no round opened, the role ended or nobody is seated, and ``retry`` (the same request
        again, which must be refused) writes nothing."""
        self.changed()
        after = self.world()
        table, earlier = after.table(table_id), before.table(table_id)
        assert table is not None and earlier is not None and table.round_no == earlier.round_no
        assert table.current_round is None
        if banker_ended:
            assert table.banker is None and len(table.seats) <= len(earlier.seats)
        else:
            assert table.seats == () and table.banker == earlier.banker, table
        retry()
        assert self.read_world() == after, "a retried start changed something"

    def open_rounds(self, *phases: Phase) -> list[tuple[str, RoundState]]:
        out = []
        for round_id, view in self.world().rounds:
            if view is None or view.phase == "closed":
                continue
            if not phases or view.phase in phases:
                out.append((round_id, self.app.round_state(round_id)))
        return out

    def has_round(self, *phases: Phase) -> bool:
        return any(
            view is not None and view.phase != "closed" and (not phases or view.phase in phases)
            for _r, view in self.world().rounds
        )

    def idle_tables(self) -> list[str]:
        return [t for t, view in self.world().tables if view is not None and view.current_round is None]

    def bet_choices(self, state: RoundState) -> list[tuple[int, str]]:
        """(seat, player) pairs a valid bet may name: the holders' own seats (ante: any player, any position)."""
        taken = {(b.seat, b.player) for b in state.bets}
        players = [p for p in self.flows if p != state.banker_player]
        if state.rules.fixed_positions is not None:
            pairs = [(seat, p) for seat, _h in state.seats for p in players]
        else:
            pairs = [(seat, h) for seat, h in state.seats if h is not None]
        return [pair for pair in pairs if pair not in taken]

    # -- invariants ------------------------------------------------------------------------------

    @invariant()
    def money_balances(self) -> None:
        world = self.world()
        wallets = dict(world.wallets)
        total = sum(wallets[w].balance - flow for w, flow in self.flows.items())
        total += sum(view.house_net + view.commission for _t, view in world.tables if view is not None)
        assert total == 0, f"money does not balance: off by {total}"
        for wallet, view in world.wallets:  # the API's money is int64
            assert view is None or 0 <= view.balance <= INT64_MAX, (wallet, view)
        for table, view in world.tables:
            assert view is None or INT64_MIN <= view.house_net <= INT64_MAX, (table, view)
            assert view is None or 0 <= view.commission <= INT64_MAX, (table, view)
        assert {w for w, view in world.wallets if view is not None} == set(self.flows)
        assert {t for t, view in world.tables if view is not None} == self.tables

    @invariant()
    def no_reservation_leaks(self) -> None:
        expected: dict[str, dict[str, int]] = defaultdict(dict)
        for round_id, state in self.open_rounds():
            for player, amount in state.reserved:
                expected[player][round_id] = expected[player].get(round_id, 0) + amount
            if state.banker_player is not None and state.banker_reserved:
                banker = expected[state.banker_player]
                banker[round_id] = banker.get(round_id, 0) + state.banker_reserved
        assert set(expected) <= set(self.flows), f"reservations in wallets never opened: {sorted(expected)}"
        for wallet, view in self.world().wallets:
            if view is None:
                continue
            held = {r.round_id: r.amount for r in view.reservations}
            want = {k: v for k, v in expected.get(wallet, {}).items() if v}
            assert held == want, f"wallet {wallet}: reserved {held}, the open rounds hold {want}"
            assert view.reserved == sum(held.values())
            assert view.available == view.balance - view.reserved >= 0, view

    @invariant()
    def closed_rounds_verify(self) -> None:
        """A round that has just closed verifies, and no wallet lost more than it had reserved."""
        newly = [r for r, view in self.world().rounds if view is not None and view.phase == "closed"]
        for round_id in newly:
            verdict = audit.verify_round(self.app, round_id, check_wallets=False)
            assert verdict.ok, (round_id, verdict)
            for event in self.app.round_events(round_id):
                if event.kind == "round_settled":
                    for player, reserved, net in event.data["wallets"]:
                        assert net >= -reserved, f"{round_id}: {player} lost {-net} with {reserved} reserved"
            self.closed.add(round_id)
            self.stats["closed rounds verified"] += 1
        if newly:
            self.changed()
        assert self.closed <= set(self.rounds)

    @invariant()
    def open_rounds_are_current(self) -> None:
        world = self.world()
        current = {view.current_round for _t, view in world.tables if view is not None}
        known = set(self.rounds)
        for round_id, view in world.rounds:
            if view is not None and view.phase != "closed":
                assert round_id in known, f"round {round_id} is open but was never started"
                assert round_id in current, f"round {round_id} is open but no table plays it"
            elif round_id not in known:
                assert view is None, f"round {round_id} exists but was never started"
