"""The crash test's worker: plays a fixed plan of rounds, and may be SIGKILLed at any moment.

Run as ``python -m tests.service.crash_worker`` from the repository root with:

``POKDENG_CRASH_ENV``     the store's eventsourcing settings, as JSON;
``POKDENG_CRASH_ROUNDS``  how many rounds the plan has;
``POKDENG_CRASH_IN_TXN``  optional: kill this process inside its N-th event-store transaction,
                          after the rows were written and before the commit;
``POKDENG_CRASH_AFTER``   optional, ``<k>:<n>``: kill this process as soon as the n-th request of
                          round k returns (or as the round ends, if it has fewer).

Every request id is fixed by the plan (``setup-*``, ``k<round>-start``, ``k<round>-bet-<seat>-<player>``,
``k<round>-deal``, ``k<round>-s<step>``), so a restarted worker resumes by retrying the same ids:
what was saved replays, what was not is done now. A round's step ``j`` is decided from the
round's state as of the events the worker's own previous request left (``Repository.get``
at that version), so a retried step is the very same command whatever came after it.
The worker prints ``ready`` once set up, ``round <k>`` as each round closes, ``done`` at the end.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
from collections.abc import Callable
from typing import Any

from pokdeng_core.machine import legal_commands
from pokdeng_core.round_state import BANKER, Phase, RoundState
from pokdeng_service.application import PokdengApp
from pokdeng_service.application.views import CommandResult
from pokdeng_service.store import aggregates as ag

from .play import vault

WALLETS = ("w1", "w2", "w3", "w4", "w5")
FUNDS = 10_000_000
# table id, profile, seats (seat, player), dealer
TABLES: tuple[tuple[str, str, tuple[tuple[int, str], ...], str | None], ...] = (
    ("cl", "classic", ((1, "w1"), (2, "w2"), (3, "w1")), None),
    ("cd", "classic", ((1, "w2"), (2, "w3")), "w4"),
    ("km", "kingmaker", ((1, "w1"), (2, "w3"), (3, "w5")), None),
    ("an", "ante", (), None),
    ("rm", "room", ((1, "w1"), (2, "w2"), (3, "w5"), (4, "w4")), None),
)
ROOM_BANKER = "w4"


class CrashApp(PokdengApp):
    """The application with frequent snapshots, so that kills also fall between an event and its snapshot."""

    name = "pokdeng"  # the same store (tables, settings) as PokdengApp
    snapshotting_intervals = {ag.Wallet: 7, ag.TableRecord: 5}  # noqa: RUF012 - eventsourcing's class setting


ROOM_TENURE = 10


def plan_table(k: int) -> str:
    """Round ``k`` of the plan is played at this table (the room only during its banker's tenure)."""
    tables = [t[0] for t in TABLES]
    table = tables[k % len(tables)]
    if table == "rm" and k // len(tables) >= ROOM_TENURE:
        return "cl"
    return table


def plan_bets(k: int, table_id: str, seats: tuple[tuple[int, str | None], ...]) -> list[tuple[int, str, int]]:
    rng = random.Random(f"bets-{k}")
    if table_id == "an":
        return [(p, w, 2 * rng.randint(50, 500)) for p, w in ((1, "w1"), (2, "w2"), (2, "w3"), (5, "w5"))]
    bets = [(seat, holder, rng.randint(100, 1000)) for seat, holder in seats if holder is not None]
    if table_id == "cl":
        bets.append((2, "w5", rng.randint(100, 1000)))  # a backer on w2's hand
    return bets


def calls_through_deal(k: int) -> int | None:
    """How many requests round ``k`` issues up to and including its deal (None: it has no turns to crash in)."""
    table_id = plan_table(k)
    if table_id == "an" or plan_void(k) is not None:
        return None
    (seats,) = [t[2] for t in TABLES if t[0] == table_id]
    if table_id == "rm":
        seats = tuple((seat, player) for seat, player in seats if player != ROOM_BANKER)
    return 1 + len(plan_bets(k, table_id, seats)) + 1


def plan_void(k: int) -> tuple[str, int] | None:
    """Some rounds are voided by the plan: (phase, step) where the void comes."""
    if k % 9 == 4:
        return ("betting", 0)
    if k % 9 == 7:
        return ("turns", 1)
    return None


def decide(k: int, j: int, state: RoundState) -> tuple[str, tuple[Any, ...]]:
    """Step ``j`` of round ``k``: a pure function of the plan and the round's state."""
    rng = random.Random(f"step-{k}-{j}")
    void = plan_void(k)
    if void is not None and void[0] == "turns" and j == void[1]:
        return "void_round", ("voided by the crash plan",)
    phase = state.phase
    if phase is Phase.SIDE_BETS:
        for seat, holder in state.seats:
            if holder is not None and "place_side_bet" in legal_commands(state, seat) and rng.random() < 0.6:
                return "place_side_bet", (seat, holder)
        return "close_side_bets", ()
    if phase is Phase.PLAYER_TURNS:
        if rng.random() < 0.15:
            return "time_out_turn", ()
        turn = state.turn
        assert turn is not None
        return ("draw" if rng.random() < 0.5 else "stay"), (turn, state.holder(turn))
    if phase is Phase.BANKER_TURN:
        choices = legal_commands(state, BANKER)
        if not choices or rng.random() < 0.1:
            return "time_out_turn", ()
        banker = state.banker_player
        waiting = [s for s in state.in_play if s not in state.revealed]
        if "banker_reveal" in choices and len(waiting) >= 2 and rng.random() < 0.4:
            return "banker_reveal", ([waiting[0]], banker)
        return ("banker_draw" if rng.random() < 0.5 else "banker_stay"), (banker,)
    raise AssertionError(f"round {state.round_id}: no step in phase {phase.value}")


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class Worker:
    def __init__(self, app: PokdengApp, crash_after: str = "") -> None:
        self.app = app
        self.crash_round, self.crash_call = map(int, crash_after.split(":")) if crash_after else (-1, 0)
        self.round_calls = 0

    def call(self, command: str, request_id: str, *args: Any, **kwargs: Any) -> CommandResult:
        method: Callable[..., CommandResult] = getattr(self.app, command)
        result = method(request_id, *args, **kwargs)
        if request_id.startswith(f"k{self.crash_round}-"):
            self.round_calls += 1
            if self.round_calls >= self.crash_call:
                _die()
        return result

    def setup(self) -> None:
        for wallet in WALLETS:
            self.call("open_wallet", f"setup-open-{wallet}", wallet)
            self.call("deposit", f"setup-fund-{wallet}", wallet, FUNDS)
        for table_id, profile, seats, dealer in TABLES:
            self.call("open_table", f"setup-table-{table_id}", table_id, profile, min_stake=100, max_stake=1000,
                      dealer=dealer)  # fmt: skip
            for seat, player in seats:
                self.call("take_seat", f"setup-seat-{table_id}-{seat}", table_id, player, seat)
        self.call("bid_for_banker", "setup-bid-rm", "rm", ROOM_BANKER, ROOM_TENURE)
        self.call("close_banker_bid", "setup-close-bid-rm", "rm")

    def closed(self, round_id: str) -> bool:
        return self.app.round_state(round_id).phase is Phase.CLOSED

    def state_at(self, round_id: str, version: int) -> RoundState:
        record: Any = self.app.repository.get(ag.round_uuid(round_id), version=version)
        state: RoundState = record.state
        return state

    def play_round(self, k: int) -> None:
        self._play_round(k)
        if k == self.crash_round:
            _die()

    def _play_round(self, k: int) -> None:
        table_id = plan_table(k)
        started = self.call("start_round", f"k{k}-start", table_id, f"crash-{k}")
        round_id = started.id
        if self.closed(round_id):
            return  # done before a crash (or voided by the operator since): nothing left to retry
        version = started.events[-1].position
        opened = self.state_at(round_id, version)
        for seat, player, stake in plan_bets(k, table_id, opened.seats):
            version = (
                self.call("place_bet", f"k{k}-bet-{seat}-{player}", round_id, seat, player, stake).events[-1].position
            )
        void = plan_void(k)
        if void is not None and void[0] == "betting":
            self.call("void_round", f"k{k}-void", round_id, "voided by the crash plan")
            return
        version = self.call("deal", f"k{k}-deal", round_id).events[-1].position
        for j in range(200):
            state = self.state_at(round_id, version)
            if state.phase is Phase.CLOSED or self.closed(round_id):
                return
            command, args = decide(k, j, state)
            version = self.call(command, f"k{k}-s{j}", round_id, *args).events[-1].position
        raise AssertionError(f"round {round_id} did not close")


def _kill_inside_transaction(app: PokdengApp, nth: int) -> None:
    """SIGKILL this process inside its ``nth`` write transaction, after the rows went in, before the commit."""
    recorder: Any = app.recorder
    name = "_fetch_ids_after_insert_events" if hasattr(recorder, "_fetch_ids_after_insert_events") else "_insert_events"
    original = getattr(recorder, name)
    count = [0]

    def hooked(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        count[0] += 1
        if count[0] >= nth:
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    setattr(recorder, name, hooked)


def main() -> int:
    env = json.loads(os.environ["POKDENG_CRASH_ENV"])
    rounds = int(os.environ["POKDENG_CRASH_ROUNDS"])
    app = CrashApp(env, vault=vault())
    in_txn = int(os.environ.get("POKDENG_CRASH_IN_TXN", "0"))
    if in_txn:
        _kill_inside_transaction(app, in_txn)
    worker = Worker(app, os.environ.get("POKDENG_CRASH_AFTER", ""))
    worker.setup()
    print("ready", flush=True)
    for k in range(rounds):
        worker.play_round(k)
        print(f"round {k}", flush=True)
    app.close()
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
