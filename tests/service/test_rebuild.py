"""Rebuild from events equals live state; snapshots equal replay.

* A fresh app instance on the same store (empty cache) reads the same rounds, wallets,
  tables, statements and notifications, and carries on an unfinished round with the same
  cards and the same seat to act.
* A round's state folded from its recorded core events (``pokdeng_core.machine.replay``)
  equals the application's.
* Wallets (interval 100) and tables (interval 100) load from a snapshot plus later events to
  exactly what a replay of every event gives: ``Repository.get`` with snapshots, the library's
  ``project_aggregate`` over ``app.events`` alone, and an app with ``IS_SNAPSHOTTING_ENABLED=n``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any
from uuid import UUID

import pytest
from eventsourcing.application import project_aggregate

from pokdeng_core import events as core_events
from pokdeng_core.round_evolve import replay
from pokdeng_core.round_state import Phase
from pokdeng_service.application import PokdengApp
from pokdeng_service.store import aggregates as ag
from pokdeng_service.store.codec import from_data

from . import play
from .play import Chooser, Driver, Ledger

pytestmark = pytest.mark.each_store  # (the store is the subject: PostgreSQL too)

WALLETS = ["a", "b", "c", "d", "e"]
TABLES = ["cl", "an", "rm", "km"]


def _history(driver: Driver) -> tuple[list[str], str]:
    """Rounds of every profile; returns the round ids and one classic round left in players' turns."""
    app = driver.app
    play.open_wallets(driver, WALLETS)
    play.open_table(driver, "cl", "classic", [(1, "a"), (2, "b"), (3, "a")], dealer="e")
    play.open_table(driver, "an", "ante")
    play.open_table(driver, "rm", "room", [(1, "a"), (2, "b"), (3, "c")])
    play.open_table(driver, "km", "kingmaker", [(1, "c"), (2, "d")])
    play.hold_banker_bid(driver, "rm", [("a", 5), ("b", 0)])
    rounds = []
    for _ in range(2):
        for table_id in TABLES:
            round_id = play.start_round(driver, table_id, f"seed of {table_id}")
            if table_id == "an":
                play.place_bets(driver, round_id, [(1, "a", 200), (3, "b", 400), (3, "d", 100)])
            else:
                play.seat_bets(driver, round_id, 100)
            play.drive_round(driver, round_id)
            rounds.append(round_id)
    for _ in range(40):  # a classic round stopped where a player must choose
        round_id = play.start_round(driver, "cl")
        rounds.append(round_id)
        play.seat_bets(driver, round_id, 100)
        driver.call("place_bet", round_id, 2, "c", 300)  # a backer
        driver.call("deal", round_id)
        if app.round_state(round_id).phase is Phase.PLAYER_TURNS:
            return rounds, round_id
        play.drive_round(driver, round_id)
    raise AssertionError("forty classic rounds without a player's turn")


def _same_reads(one: PokdengApp, two: PokdengApp, rounds: list[str]) -> None:
    assert one.max_position == two.max_position
    for round_id in rounds:
        assert one.get_round(round_id) == two.get_round(round_id)
        assert one.round_state(round_id) == two.round_state(round_id)
        for seat in (None, 0, 1, 2, 3):
            assert one.legal_commands(round_id, seat) == two.legal_commands(round_id, seat)
    for wallet in WALLETS:
        assert one.get_wallet(wallet) == two.get_wallet(wallet)
        assert one.wallet_statement(wallet, limit=1000) == two.wallet_statement(wallet, limit=1000)
    for table_id in TABLES:
        assert one.get_table(table_id) == two.get_table(table_id)
    assert one.read_notifications(0, 10_000) == two.read_notifications(0, 10_000)


def test_a_fresh_instance_reads_the_same_state_and_resumes(make_app: Callable[..., PokdengApp]) -> None:
    app = make_app()
    driver = Driver(app, chooser=Chooser(random.Random(21)))
    rounds, open_round = _history(driver)
    fresh = make_app()
    _same_reads(app, fresh, rounds)
    no_snapshots = make_app(IS_SNAPSHOTTING_ENABLED="n")
    _same_reads(app, no_snapshots, rounds)

    # the unfinished round carries on from the fresh instance: same seat to act, same shoe
    before = fresh.round_state(open_round)
    assert before.turn is not None and before.turn == app.round_state(open_round).turn
    ledger = Ledger.take(fresh, WALLETS, TABLES)
    other = Driver(fresh, prefix="fresh", chooser=Chooser(random.Random(4)))
    first = play.step(other, open_round)
    assert first.events[0].data["seat"] == before.turn
    view = play.drive_round(other, open_round)
    ledger.assert_balanced(fresh)
    assert view.hands[0].cards[:2] == tuple(str(c) for c in before.cards(view.hands[0].seat))
    for round_id in rounds:
        closed = fresh.get_round(round_id)
        play.assert_cards_from_shoe(closed)
        play.assert_round_books(closed)
    _same_reads(fresh, app, rounds)  # and the first instance sees what the second did


def test_round_state_is_the_fold_of_its_recorded_events(make_app: Callable[..., PokdengApp]) -> None:
    app = make_app()
    rounds, _open = _history(Driver(app, chooser=Chooser(random.Random(8))))
    for round_id in rounds:
        recorded = app.round_events(round_id)
        facts = [from_data(core_events.EVENT_BY_KIND[e.kind], e.data) for e in recorded if e.kind != "Started"]
        assert replay(facts) == app.round_state(round_id)
        assert [e.position for e in recorded] == list(range(1, len(recorded) + 1))


def _replayed(app: PokdengApp, aggregate_id: UUID, version: int | None = None) -> object:
    """The aggregate from its events alone, ignoring any snapshot."""
    return project_aggregate(None, app.events.get(aggregate_id, lte=version))


def test_wallet_snapshots_equal_replay(make_app: Callable[..., PokdengApp]) -> None:
    app = make_app()
    driver = Driver(app)
    play.open_wallets(driver, ["w", "o"], 0)
    play.open_table(driver, "t", "classic", [(1, "w"), (2, "o")])
    driver.call("deposit", "o", 100_000)
    for i in range(1, 121):
        driver.call("deposit", "w", i)
    round_id = play.start_round(driver, "t")
    play.seat_bets(driver, round_id, 100)  # a reservation lives across the snapshot at version 200
    for i in range(1, 121):
        driver.call("deposit", "w", 1_000 + i)
    play.drive_round(driver, round_id)
    wallet_id = ag.wallet_uuid("w")
    assert app.snapshots is not None
    snapshots: list[Any] = list(app.snapshots.get(wallet_id))  # (Snapshot events: state, mutate)
    assert [s.originator_version for s in snapshots] == [100, 200]
    assert snapshots[1].state["reservations"] == {round_id: 500}
    # every snapshot is the state its version replays to
    for snapshot in snapshots:
        assert snapshot.mutate(None) == _replayed(app, wallet_id, snapshot.originator_version)

    fresh, plain = make_app(), make_app(IS_SNAPSHOTTING_ENABLED="n")
    assert plain.snapshots is None
    loaded: Any = fresh.repository.get(wallet_id)
    assert loaded == _replayed(app, wallet_id) == plain.repository.get(wallet_id) == app.repository.get(wallet_id)
    assert loaded.version == 243 and loaded.reservations == {}
    for version in (99, 100, 101, 150, 200, 201, 242):
        assert fresh.repository.get(wallet_id, version=version) == _replayed(app, wallet_id, version)
    assert fresh.get_wallet("w") == plain.get_wallet("w")
    lines = plain.wallet_statement("w", limit=1000)
    assert fresh.wallet_statement("w", limit=1000) == lines
    assert fresh.wallet_statement("w", after=150, limit=20) == lines[150:170]
    assert fresh.wallet_statement("w", after=200, limit=1000) == lines[200:]
    total, _ = play.statement_total(fresh, "w")
    assert total == fresh.get_wallet("w").balance


def test_table_snapshots_equal_replay(make_app: Callable[..., PokdengApp]) -> None:
    app = make_app()
    driver = Driver(app, chooser=Chooser(random.Random(2)))
    play.open_wallets(driver, ["a", "b", "c"])
    play.open_table(driver, "an", "ante")
    ledger = Ledger.take(app, ["a", "b", "c"], ["an"])
    for _ in range(50):  # two table events a round: 102 events
        round_id = play.start_round(driver, "an")
        play.place_bets(driver, round_id, [(1, "a", 200), (2, "b", 400)])
        driver.call("deal", round_id)
    ledger.assert_balanced(app)
    table_id = ag.table_uuid("an")
    assert app.snapshots is not None
    assert [s.originator_version for s in app.snapshots.get(table_id)] == [100]

    # a room table with a banker, a tenure and seats, snapshotted explicitly mid-tenure
    play.open_table(driver, "rm", "room", [(1, "a"), (2, "b"), (3, "c")])
    driver.call("bid_for_banker", "rm", "a", 10)
    driver.call("bid_for_banker", "rm", "b", 5)
    app.take_snapshot(ag.table_uuid("rm"))  # with bids pending
    play.hold_banker_bid(driver, "rm", [("c", 0)])
    round_id = play.start_round(driver, "rm")
    play.seat_bets(driver, round_id, 100)
    play.drive_round(driver, round_id)
    app.take_snapshot(ag.table_uuid("rm"))

    fresh, plain = make_app(), make_app(IS_SNAPSHOTTING_ENABLED="n")
    for name in ("an", "rm"):
        uuid = ag.table_uuid(name)
        loaded: Any = fresh.repository.get(uuid)
        assert loaded == _replayed(app, uuid) == plain.repository.get(uuid)
        assert loaded.state == plain.repository.get(uuid).state
        assert fresh.get_table(name) == plain.get_table(name) == app.get_table(name)
    for version in (3, 4, 5, 6):  # before and after the first room snapshot
        uuid = ag.table_uuid("rm")
        assert fresh.repository.get(uuid, version=version) == _replayed(app, uuid, version)

    # the table loaded from its snapshot plays on
    other = Driver(fresh, prefix="fresh", chooser=Chooser(random.Random(3)))
    round_id = play.start_round(other, "rm")
    play.seat_bets(other, round_id, 100)
    play.drive_round(other, round_id)
    assert fresh.get_table("rm") == plain.get_table("rm")
    assert fresh.get_table("rm").banker_rounds_left == 8
