"""Room (RULES, seed 002): a banker that disconnects and returns within 5 seconds plays on and keeps
the role; one that stays away has its turn played for it and loses the role at round end. The return
is a command (ReconnectBanker) or any banker call of its own."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from pokdeng_core.errors import WrongPhase
from pokdeng_core.round_state import Phase
from pokdeng_service.application import PokdengApp
from pokdeng_service.application.commands import ReconnectBanker
from pokdeng_service.application.principal import Principal, Role
from pokdeng_service.application.round_commands import BankerStay
from pokdeng_service.application.turn_clock import TurnClock

from . import play

BANKER = Principal(Role.PLAYER, "bk")


def _banker_to_choose(app: PokdengApp, driver: play.Driver) -> str:
    play.open_wallets(driver, ["bk", "x", "y"], 10_000_000)
    play.open_table(driver, "rc", "room", [(1, "bk"), (2, "x"), (3, "y")], max_stake=1000)
    for attempt in range(40):  # the cards decide whether the banker gets a choice
        if app.get_table("rc").banker is None:
            table = app.get_table("rc")
            if all(s.player != "bk" for s in table.seats):
                taken = {s.seat for s in table.seats}
                driver.call("take_seat", "rc", "bk", min(set(range(1, table.seat_count + 1)) - taken))
            play.hold_banker_bid(driver, "rc", [("bk", 10)])
        last_of_tenure = app.get_table("rc").banker_rounds_left == 1  # its role ends with it, whatever happens
        round_id = play.start_round(driver, "rc", f"rc-{attempt}")
        play.seat_bets(driver, round_id, 200)
        if play.drive_until(driver, round_id, Phase.BANKER_TURN) and not last_of_tenure:
            return round_id
        play.drive_round(driver, round_id)
    raise AssertionError("forty room rounds without the banker to choose")


def _disconnected_at(app: PokdengApp) -> datetime:
    return next(
        datetime.fromisoformat(n.timestamp)
        for n in reversed(app.read_notifications(0, 10_000))
        if n.stream == "table" and n.kind == "banker_disconnected"
    )


def test_a_banker_back_within_five_seconds_keeps_the_role(app: PokdengApp, driver: play.Driver) -> None:
    round_id = _banker_to_choose(app, driver)
    driver.call("disconnect_banker", "rc", "bk")
    gone = _disconnected_at(app)
    app.clock = lambda: gone + timedelta(seconds=4)
    back = app.handle(BANKER, "back-1", ReconnectBanker("rc", "bk"))
    assert [e.kind for e in back.events] == ["banker_reconnected"]
    moved = app.round_moved_at(round_id, app.get_round(round_id, with_events=False).version)
    assert moved is not None
    assert TurnClock(app, now=lambda: gone + timedelta(seconds=20)).tick() == []  # no 5 s window any more
    app.handle(BANKER, "stay-1", BankerStay(round_id, "bk"))  # its own choice
    play.drive_round(driver, round_id)
    assert app.get_table("rc").banker == "bk"  # the role goes on
    assert "turn_timed_out" not in [e.kind for e in app.round_events(round_id) if e.data.get("seat") == 0]


def test_a_banker_call_within_the_window_is_its_return(app: PokdengApp, driver: play.Driver) -> None:
    round_id = _banker_to_choose(app, driver)
    driver.call("disconnect_banker", "rc", "bk")
    gone = _disconnected_at(app)
    app.clock = lambda: gone + timedelta(milliseconds=4)
    app.handle(BANKER, "stay-1", BankerStay(round_id, "bk"))
    table_kinds = [n.kind for n in app.read_notifications(0, 10_000) if n.stream == "table"]
    assert table_kinds[-1] == "banker_reconnected" or "banker_reconnected" in table_kinds
    play.drive_round(driver, round_id)
    assert app.get_table("rc").banker == "bk"


def test_a_banker_away_past_the_window_is_played_for_and_loses_the_role(app: PokdengApp, driver: play.Driver) -> None:
    round_id = _banker_to_choose(app, driver)
    driver.call("disconnect_banker", "rc", "bk")
    gone = _disconnected_at(app)
    app.clock = lambda: gone + timedelta(seconds=6)
    with pytest.raises(WrongPhase, match="reconnection window"):
        app.handle(BANKER, "back-late", ReconnectBanker("rc", "bk"))
    assert TurnClock(app, now=lambda: gone + timedelta(seconds=6)).tick() == [round_id]  # the automatic play
    timed = [e for e in app.round_events(round_id) if e.kind == "turn_timed_out"]
    assert timed and timed[-1].data["seat"] == 0
    play.drive_round(driver, round_id)
    assert app.get_table("rc").banker is None  # the role ended with the round
