"""RULES §5: a hand that does not act in time gets the automatic action, recorded like any decision."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pokdeng_core.machine import Phase
from pokdeng_service.application import PokdengApp
from pokdeng_service.turn_clock import TurnClock

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
