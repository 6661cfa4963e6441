"""Several replicas: two ``pokdeng serve`` processes on one PostgreSQL store (pokdeng_testkit/harness/replicas.py).

Two clients per table, one through each replica, both taking every decision of the round with
request ids derived from its state; wallet hammers on both replicas depositing to and withdrawing
from wallets that are staked at several tables at once. Optimistic concurrency and idempotency must
resolve every conflict: nothing lost, nothing doubled, money balanced, every round verifies, and
both replicas tell the same story. Both replicas run their turn clock: on clock tables nobody
acts, and every wait must end in exactly one timeout.

The turn clocks once had a race: a clock could time out the next seat the moment another writer
moved the round. Timeouts are now conditional on the round's version
(``test_a_turn_clock_does_not_time_out_a_turn_that_has_just_begun`` proves it deterministically).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pokdeng_core.round_state import Phase
from pokdeng_service.application import PokdengApp
from pokdeng_service.application.turn_clock import TurnClock
from pokdeng_service.store.vault import SeedVault
from pokdeng_testkit.harness.replicas import ReplicaConfig, run_replicas
from pokdeng_testkit.harness.server import Store
from pokdeng_testkit.keys import VAULT_KEY

MIN_ROUNDS = 3  # rounds every shared table must close (however long a loaded machine takes: up to 60 s more)


@pytest.mark.reliability
def test_two_replicas_share_tables_and_wallets(postgres_store: Store, tmp_path: Path) -> None:
    config = ReplicaConfig(seconds=6.0, tables=5, clock_tables=8, clock_rounds=1, min_rounds=MIN_ROUNDS)
    report = run_replicas(postgres_store, tmp_path, config)
    print(report.render())
    assert not report.problems, report.render()
    assert not report.unexpected, report.unexpected
    assert not report.server_errors, report.server_errors
    # the only errors the clients met: stale decisions refused, conflicts aborted (and retried)
    assert set(report.client_errors) <= {"FAILED_PRECONDITION", "ABORTED"}, report.client_errors
    # every shared table played rounds; the two clients often sent the same request through different replicas
    assert len(report.rounds_per_table) == config.tables and min(report.rounds_per_table.values()) >= MIN_ROUNDS, (
        f"every one of the {config.tables} shared tables should close at least {MIN_ROUNDS} rounds "
        f"(in {config.seconds:g}s of contention, then up to {config.extra_seconds:g}s more): "
        f"{report.rounds_per_table}; "
        f"the whole run took {report.seconds:.1f}s"
    )
    assert sum(report.replayed.values()) > 0
    assert report.conflicted_rows is None or report.conflicted_rows > 0  # version conflicts happened, and resolved
    assert report.wallet_ops > 0
    # the turn clocks: every clock round closed, each wait ended by exactly one timeout
    assert not report.clock_problems, report.clock_problems
    assert report.clock_rounds == config.clock_tables * config.clock_rounds
    assert report.clock_timeouts >= report.clock_rounds
    assert not report.clock_early, f"a turn clock timed out a turn that had just begun: {report.clock_early}"


# --- the turn clock's race, deterministically ---------------------------------------------------

TIMEOUT = 1
PLAYERS = ("p1", "p2", "p3", "p4", "p5")


def _app(tmp_path: Path) -> PokdengApp:
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "clock.sqlite")}
    return PokdengApp(env, vault=SeedVault.from_hex(VAULT_KEY))


def _round_waiting_on_two_players(app: PokdengApp) -> str:
    """A classic round, dealt, at a player's turn with another player still to act after it."""
    for name in PLAYERS:
        app.open_wallet(f"open-{name}", name)
        app.deposit(f"fund-{name}", name, 1_000_000)
    app.open_table("open-t", "t", "classic", min_stake=100, max_stake=1000, seats=5, turn_timeout=TIMEOUT)
    for seat, name in enumerate(PLAYERS, start=1):
        app.take_seat(f"seat-{seat}", "t", name, seat)
    for k in range(1, 40):
        round_id = app.start_round(f"start-{k}", "t", "").id
        for seat, name in enumerate(PLAYERS, start=1):
            app.place_bet(f"bet-{k}-{seat}", round_id, seat, name, 100)
        app.deal(f"deal-{k}", round_id)
        view = app.get_round(round_id)
        waiting = [h for h in view.hands if h.seat and not h.done]
        if view.phase == Phase.PLAYER_TURNS and len(waiting) >= 2:
            return round_id
        if view.phase != Phase.CLOSED:
            app.void_round(f"void-{k}", round_id, "not a deal for this test")
    raise AssertionError("no deal left two players to act")  # pragma: no cover


def _other_clock_acts(app_a: PokdengApp, _app_b: PokdengApp, _round_id: str) -> Callable[[], None]:
    clock_a = TurnClock(app_a)

    def tick() -> None:  # replica A times the due seat out
        assert clock_a.tick()

    return tick


def _player_acts(app_a: PokdengApp, _app_b: PokdengApp, round_id: str) -> Callable[[], None]:
    def stay() -> None:  # the player stays at the last moment, through replica A
        view = app_a.get_round(round_id, with_events=False)
        assert view.turn is not None
        app_a.stay("stay-in-time", round_id, view.turn, PLAYERS[view.turn - 1])

    return stay


@pytest.mark.parametrize("writer", [_other_clock_acts, _player_acts], ids=["other-replica-clock", "player"])
def test_a_turn_clock_does_not_time_out_a_turn_that_has_just_begun(
    tmp_path: Path, writer: Callable[[PokdengApp, PokdengApp, str], Callable[[], None]]
) -> None:
    app_a, app_b = _app(tmp_path), _app(tmp_path)  # two replicas of one store
    try:
        round_id = _round_waiting_on_two_players(app_a)
        first = app_a.get_round(round_id, with_events=False).turn
        time.sleep(TIMEOUT + 0.2)  # the seat to act has waited its turn_timeout: it is due
        clock_b = TurnClock(app_b)
        read_log = clock_b.follow
        act = writer(app_a, app_b, round_id)

        def read_log_then_another_writer_moves_the_round() -> None:
            read_log()
            act()  # lands between replica B's read of the log and its read of the round

        clock_b.follow = read_log_then_another_writer_moves_the_round  # type: ignore[method-assign]
        clock_b.tick()
        timed_out = [e.data["seat"] for e in app_a.get_round(round_id).events if e.kind == "turn_timed_out"]
        moved_on = [] if writer is _player_acts else [first]
        # the next seat's turn has just begun: nobody may time it out before it has waited TIMEOUT seconds
        assert timed_out == moved_on, f"timed out: {timed_out}; the seat that was due: {first}"
    finally:
        app_a.close()
        app_b.close()
