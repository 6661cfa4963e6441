"""Voiding a round in each phase releases every reservation and moves no money (docs/rules.md 14)."""

from __future__ import annotations

import random

import pytest

from pokdeng_core.errors import WrongPhase
from pokdeng_core.round_state import Phase
from pokdeng_service.application import PokdengApp

from . import play
from .play import Chooser, Driver, Ledger, events_of

WALLETS = ["dana", "p1", "p2", "p3", "k1", "k2"]


class _NeverMind(Chooser):
    """Stays, never times out, reveals what the test says, side-bets always."""

    def __init__(self, reveal_first: bool) -> None:
        super().__init__(random.Random(1), draw=0.0, side_bet=1.0, reveal=1.0 if reveal_first else 0.0)


def _void_and_check(driver: Driver, round_id: str, table_id: str, ledger: Ledger) -> None:
    app = driver.app
    state = app.round_state(round_id)
    reserved = dict(state.reserved)
    if state.banker_player is not None and state.banker_reserved:
        reserved[state.banker_player] = reserved.get(state.banker_player, 0) + state.banker_reserved
    for wallet, amount in reserved.items():
        assert app.get_wallet(wallet).reserved == amount
    result = driver.call("void_round", round_id, f"test void in {state.phase.value}")
    assert [e.kind for e in result.events] == ["round_voided", "seed_revealed", "round_closed"]
    assert dict(result.events[0].data["wallets"]) == reserved
    view = app.get_round(round_id)
    assert (view.phase, view.outcome) == ("closed", "voided")
    assert view.server_seed
    changes, house, commission = ledger.assert_balanced(app)  # nothing reserved any more
    assert set(changes.values()) == {0} and (house, commission) == (0, 0), "a void moved money"
    assert app.get_table(table_id).current_round is None
    with pytest.raises(WrongPhase):
        app.void_round(driver.next_id(), round_id, "twice")


@pytest.mark.parametrize("phase", ["betting", "side_bets", "player_turns", "banker_turn", "after_reveal"])
def test_void_in_each_phase_releases_every_reservation(app: PokdengApp, phase: str) -> None:
    driver = Driver(app, chooser=_NeverMind(reveal_first=phase == "after_reveal"))
    play.open_wallets(driver, WALLETS)
    # classic with a player dealer: the banker's reservation is released too; p3 backs p1's hand
    play.open_table(driver, "cd", "classic", [(1, "p1"), (2, "p2")], dealer="dana")
    play.open_table(driver, "km", "kingmaker", [(1, "k1"), (2, "k2")])
    table_id = "km" if phase == "side_bets" else "cd"
    target = {
        "betting": Phase.BETTING,
        "side_bets": Phase.SIDE_BETS,
        "player_turns": Phase.PLAYER_TURNS,
        "banker_turn": Phase.BANKER_TURN,
        "after_reveal": Phase.BANKER_TURN,
    }[phase]
    for _ in range(80):
        ledger = Ledger.take(app, WALLETS, ["cd", "km"])
        round_id = play.start_round(driver, table_id)
        play.seat_bets(driver, round_id, 300)
        if table_id == "cd":
            play.place_bets(driver, round_id, [(1, "p3", 200)])
        if phase == "side_bets":
            reached = play.drive_until(driver, round_id, Phase.SIDE_BETS)
            if reached:
                for seat, player in ((1, "k1"), (2, "k2")):
                    driver.call("place_side_bet", round_id, seat, player)
        elif phase == "after_reveal":
            reached = play.drive_until(driver, round_id, Phase.BANKER_TURN)
            if reached and len(app.round_state(round_id).in_play) >= 2:
                driver.call("banker_reveal", round_id, [1], "dana")  # p1's and p3's stakes settle on the record
                assert len(events_of(app.get_round(round_id), "bet_settled")) == 2
                reached = app.round_state(round_id).phase is Phase.BANKER_TURN
            else:
                reached = False
        else:
            reached = play.drive_until(driver, round_id, target)
        if reached:
            assert app.round_state(round_id).phase is target
            _void_and_check(driver, round_id, table_id, ledger)
            return
        if app.round_state(round_id).phase is not Phase.CLOSED:
            play.drive_round(driver, round_id)
        ledger.assert_balanced(app)
    pytest.fail(f"eighty rounds without reaching {phase}")
