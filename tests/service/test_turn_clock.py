"""RULES §5: a hand that does not act in time gets the automatic action, recorded like any decision."""

from __future__ import annotations

import logging
import sqlite3
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from pokdeng_core.round_state import Phase
from pokdeng_service.application import PokdengApp
from pokdeng_service.application.turn_clock import TurnClock

from . import play


def test_the_clock_times_out_a_waiting_turn_once(app: PokdengApp, driver: play.Driver) -> None:
    play.open_wallets(driver, ["a", "b"])
    play.open_table(driver, "clock", "classic", [(1, "a"), (2, "b")])
    for _ in range(30):  # the cards are random: a banker's pok ends a round at the deal
        round_id = play.start_round(driver, "clock")
        play.seat_bets(driver, round_id, 200)
        driver.call("deal", round_id)
        if app.round_state(round_id).phase is Phase.PLAYER_TURNS:
            break
        play.drive_round(driver, round_id)
    else:
        raise AssertionError("no round of 30 waited on a player")
    later = datetime.now(tz=UTC) + timedelta(hours=1)
    clock = TurnClock(app, now=lambda: datetime.now(tz=UTC))
    assert clock.tick() == []  # nobody has waited 30 s yet
    state = app.round_state(round_id)
    replica = TurnClock(app, now=lambda: later)
    rounds_timed_out = 0
    while state.phase in (Phase.PLAYER_TURNS, Phase.BANKER_TURN):
        version = app.get_round(round_id, with_events=False).version
        fired = replica.tick()
        assert fired == [round_id]
        # a second replica firing for the same version repeats the same request: nothing new is written
        again = app.time_out_turn(f"timeout:{round_id}:{version}", round_id, version)
        assert again.replayed
        rounds_timed_out += 1
        state = app.round_state(round_id)
    kinds = [e.kind for e in app.round_events(round_id)]
    assert kinds.count("turn_timed_out") == rounds_timed_out >= 1
    assert kinds[-1] == "round_closed"
    assert replica.tick() == [] and round_id not in replica.open_rounds


def test_a_disconnected_room_banker_is_waited_for_five_seconds_not_the_table_timeout(
    app: PokdengApp, driver: play.Driver
) -> None:
    """RULES (room): a banker that disconnects mid-round has 5 seconds to return, then its
    turn is played automatically. The table's turn timeout (30 s) still applies to everyone
    else, and to a banker that is connected."""
    play.open_wallets(driver, ["bk", "x", "y"], 10_000_000)
    play.open_table(driver, "rc", "room", [(1, "bk"), (2, "x"), (3, "y")], max_stake=1000)
    for attempt in range(40):  # the cards decide whether the banker gets a choice
        if app.get_table("rc").banker is None:
            table = app.get_table("rc")
            if all(s.player != "bk" for s in table.seats):
                taken = {s.seat for s in table.seats}
                driver.call("take_seat", "rc", "bk", min(set(range(1, table.seat_count + 1)) - taken))
            play.hold_banker_bid(driver, "rc", [("bk", 10)])
        round_id = play.start_round(driver, "rc", f"rc-{attempt}")
        play.seat_bets(driver, round_id, 200)
        if play.drive_until(driver, round_id, Phase.BANKER_TURN):
            break
    else:
        raise AssertionError("forty room rounds without the banker to choose")
    version = app.get_round(round_id, with_events=False).version
    moved = app.round_moved_at(round_id, version)
    assert moved is not None

    def clock_at(seconds: float) -> TurnClock:
        return TurnClock(app, now=lambda: moved + timedelta(seconds=seconds))

    assert clock_at(6).tick() == []  # connected: the table's 30 s apply
    driver.call("disconnect_banker", "rc", "bk")
    gone = next(
        datetime.fromisoformat(n.timestamp)
        for n in reversed(app.read_notifications(0, 10_000))
        if n.stream == "table" and n.kind == "banker_disconnected"
    )
    since = (gone - moved).total_seconds()
    assert clock_at(since + 4.5).tick() == []  # disconnected 4.5 s ago: it may still return
    assert clock_at(since + 5.5).tick() == [round_id]  # 5 s passed: the automatic action
    events = app.round_events(round_id)
    timed = [e for e in events if e.kind == "turn_timed_out"]
    assert timed and timed[-1].data["seat"] == 0
    play.drive_round(driver, round_id)
    assert app.get_table("rc").banker is None  # the role ended with the round


def test_a_store_outage_is_one_warning_not_a_traceback_per_tick(
    app: PokdengApp, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """While the store is down (a failover), every tick fails: the clock says so once, then once when it
    works again."""
    clock = TurnClock(app, now=lambda: datetime.now(tz=UTC))
    calls = {"n": 0}
    working = app.log_activity

    def down(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] <= 5:
            raise sqlite3.OperationalError("disk I/O error\ndetail on a second line")
        return working(*args, **kwargs)

    monkeypatch.setattr(app, "log_activity", down)
    with caplog.at_level(logging.DEBUG, logger="pokdeng_service.application.turn_clock"):
        for _ in range(8):
            clock.tick_logged()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and warnings[0].exc_info is None
    assert warnings[0].getMessage().endswith("OperationalError: disk I/O error")
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.INFO] == [
        "turn clock: its ticks work again (after OperationalError: disk I/O error)"
    ]
    assert not any(r.levelno >= logging.ERROR for r in caplog.records)
    assert clock.failing is None and calls["n"] >= 8
