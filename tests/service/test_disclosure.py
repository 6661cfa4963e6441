"""Least disclosure: a player sees its own money only. A refused bet does not tell the bettor how much
the player-banker has; a table shows a player its own banker bid's capital, not other bidders'."""

from __future__ import annotations

import pytest

from pokdeng_core.errors import InsufficientFunds
from pokdeng_service.application import PokdengApp, access
from pokdeng_service.application.errors import FundsWithheld
from pokdeng_service.application.principal import Principal, Role
from pokdeng_service.application.round_commands import PlaceBet

from . import play

ALICE = Principal(Role.PLAYER, "alice")


def test_a_refused_bet_does_not_show_the_bankers_funds(app: PokdengApp, driver: play.Driver) -> None:
    play.open_wallets(driver, ["alice"])
    play.open_wallets(driver, ["dave"], 1_234)  # the backer covers little
    play.open_table(driver, "t", "classic", [(1, "alice")], dealer="dave", max_stake=1000)
    round_id = play.start_round(driver, "t")
    with pytest.raises(FundsWithheld) as refused:
        app.handle(ALICE, "bet-1", PlaceBet(round_id, 1, "alice", 1000))
    assert "1234" not in refused.value.message and "1,234" not in refused.value.message
    assert "available" not in refused.value.details and refused.value.details["wallet"] == "dave"
    with pytest.raises(InsufficientFunds) as shown:  # the operator sees everything
        app.place_bet("bet-2", round_id, 1, "alice", 1000)
    assert shown.value.available == 1_234
    assert app.get_wallet("alice").reserved == 0


def test_a_player_sees_only_its_own_banker_bid_capital(app: PokdengApp, driver: play.Driver) -> None:
    play.open_wallets(driver, ["alice", "bob", "carol"], 10_000_000)
    play.open_table(driver, "r", "room", [(1, "alice"), (2, "bob"), (3, "carol")], max_stake=1000)
    driver.call("bid_for_banker", "r", "alice", 10)
    driver.call("bid_for_banker", "r", "bob", 5)
    view = app.get_table("r")
    assert {p: c for p, _r, c in view.bids} == {"alice": 10_000_000, "bob": 10_000_000}
    seen = access.table_for(ALICE, view)
    assert {p: c for p, _r, c in seen.bids} == {"alice": 10_000_000, "bob": 0}
    assert access.table_for(Principal(Role.AUDITOR, name="a"), view) == view
