"""Idempotent commands: a request id repeated returns the first result and writes nothing.

Every command type the application has is issued at least once in a real game, and each
is repeated at once (and once more at the end, from a fresh app instance on the same store):
the same ``CommandResult`` events, ``replayed=True``, no new notification. A request id used
again for a different command is ``DuplicateRequest`` and writes nothing.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from pokdeng_core.round_state import Phase
from pokdeng_service.application import PokdengApp
from pokdeng_service.application.errors import DuplicateRequest

from . import play
from .play import Call, Chooser, Driver

pytestmark = pytest.mark.each_store  # (the store is the subject: PostgreSQL too)

COMMANDS = {
    "open_wallet",
    "deposit",
    "withdraw",
    "open_wallet_session",
    "open_table",
    "take_seat",
    "leave_seat",
    "bid_for_banker",
    "close_banker_bid",
    "disconnect_banker",
    "reconnect_banker",
    "start_round",
    "place_bet",
    "contribute_seed",
    "deal",
    "place_side_bet",
    "close_side_bets",
    "draw",
    "stay",
    "banker_reveal",
    "banker_draw",
    "banker_stay",
    "time_out_turn",
    "void_round",
    "checkpoint_table",
    "sign_tree_head",
}


def test_the_list_covers_every_command_of_the_application() -> None:
    """Every public method taking a request id first is in COMMANDS (a new command needs a test)."""
    import inspect

    found = set()
    for name, member in inspect.getmembers(PokdengApp, inspect.isfunction):
        params = list(inspect.signature(member).parameters)
        if not name.startswith("_") and params[1:2] == ["request_id"]:
            found.add(name)
    assert found == COMMANDS


def _check_replay(app: PokdengApp, call: Call) -> None:
    assert call.result.replayed is False
    before = app.max_position
    again = call.repeat(app)
    assert again.replayed is True
    assert (again.request_id, again.stream, again.id) == (call.request_id, call.result.stream, call.result.id)
    assert again.events == call.result.events
    assert app.max_position == before, f"repeating {call.command} wrote events"


def _play_everything(driver: Driver) -> None:
    app = driver.app
    play.open_wallets(driver, ["a", "b", "c", "d"])
    driver.call("withdraw", "d", 1_000)
    driver.call("open_wallet_session", "a", "a's session token", "THB", "pokdeng")  # (its stream: "session")

    # classic, the house deals: draw, stay, time out, banker reveal / draw / stay
    play.open_table(driver, "cl", "classic", [(1, "a"), (2, "b"), (3, "c")])
    wanted = {"draw", "stay", "time_out_turn", "banker_reveal", "banker_draw", "banker_stay"}
    for _ in range(40):
        round_id = play.start_round(driver, "cl")
        play.seat_bets(driver, round_id, 100)
        play.drive_round(driver, round_id)
        if wanted <= driver.commands_used():
            break
    driver.call("leave_seat", "cl", "c")
    driver.call("checkpoint_table", "cl", "first")
    driver.call("sign_tree_head")

    # kingmaker: a side bet when the up card allows
    play.open_table(driver, "km", "kingmaker", [(1, "a"), (2, "b")])
    for _ in range(80):
        round_id = play.start_round(driver, "km")
        play.seat_bets(driver, round_id, 100)
        play.drive_round(driver, round_id)
        if "place_side_bet" in driver.commands_used():
            break

    # room: the banker bid, a disconnect, and a void
    play.open_table(driver, "rm", "room", [(1, "a"), (2, "b"), (3, "c")])
    play.hold_banker_bid(driver, "rm", [("a", 10), ("b", 0)])
    round_id = play.start_round(driver, "rm")
    play.seat_bets(driver, round_id, 100)
    driver.call("contribute_seed", round_id, "b", "b's seed")
    driver.call("contribute_seed", round_id, None, "the platform's")
    driver.call("disconnect_banker", "rm", "a")
    driver.call("reconnect_banker", "rm", "a")  # back within its 5 seconds
    driver.call("disconnect_banker", "rm", "a")
    driver.call("void_round", round_id, "banker gone")
    assert app.get_table("rm").banker is None


def test_every_command_repeated_returns_the_same_result_and_writes_nothing(make_app: Callable[..., PokdengApp]) -> None:
    app = make_app()
    driver = Driver(app, chooser=Chooser(random.Random(5), timeout=0.25, reveal=0.7))
    driver.after_call = lambda call: _check_replay(app, call)
    _play_everything(driver)
    assert driver.commands_used() == COMMANDS

    # later, from another instance on the same store (nothing cached): still the first results
    other = make_app()
    before = other.max_position
    assert before == app.max_position
    for call in driver.log:
        again = call.repeat(other)
        assert again.replayed and again.events == call.result.events, call.command
    assert other.max_position == before


def test_a_request_id_reused_for_another_command_is_refused(driver: Driver, app: PokdengApp) -> None:
    play.open_wallets(driver, ["a", "b"])
    play.open_table(driver, "t", "classic", [(1, "a")])
    deposit = driver.call("deposit", "a", 500)
    round_id = play.start_round(driver, "t")
    bet = driver.call("place_bet", round_id, 1, "a", 100)
    before = app.max_position
    reuses: list[tuple[Callable[..., object], tuple[object, ...]]] = [
        (app.deposit, (deposit.request_id, "a", 501)),  # same command, another amount
        (app.deposit, (deposit.request_id, "b", 500)),  # same command, another wallet
        (app.withdraw, (deposit.request_id, "a", 500)),  # another command
        (app.place_bet, (deposit.request_id, round_id, 1, "b", 100)),
        (app.place_bet, (bet.request_id, round_id, 1, "a", 200)),
        (app.open_wallet, (bet.request_id, "new")),
        (app.void_round, (bet.request_id, round_id, "reuse")),
    ]
    for call, args in reuses:
        with pytest.raises(DuplicateRequest) as caught:
            call(*args)
        assert caught.value.field == "request_id" and caught.value.code == "duplicate_request"
    assert app.max_position == before
    assert app.get_wallet("b").balance == play.FUNDS and app.round_state(round_id).phase is Phase.BETTING
    # the first results still stand
    assert app.deposit(deposit.request_id, "a", 500).events == deposit.events


def test_a_refused_command_leaves_its_request_id_free(driver: Driver, app: PokdengApp) -> None:
    """Nothing is recorded for a refusal: the same id may carry the command once it can succeed."""
    play.open_wallets(driver, ["a"], 100)
    with pytest.raises(Exception):  # noqa: B017 - InsufficientFunds, checked elsewhere
        app.withdraw("w-1", "a", 200)
    driver.call("deposit", "a", 100)
    result = app.withdraw("w-1", "a", 200)
    assert not result.replayed and app.get_wallet("a").balance == 0
    assert app.withdraw("w-1", "a", 200).replayed


@pytest.mark.parametrize("app_env", ["sqlite"], indirect=True)  # (it edits the SQLite file)
def test_an_edited_request_record_never_answers_with_another_requests_events(
    make_app: Callable[..., PokdengApp], app_env: dict[str, str]
) -> None:
    """Found from the outside: an insider pointed request ``dep-2``'s record at ``dep-1``'s deposit, and the
    retry of ``dep-2`` answered with ``dep-1``'s event. A retry's answer is checked against its request: its
    events must be there and be that request's (``pokdeng verify --all`` reports the record too)."""
    import json
    import sqlite3

    from pokdeng_service.application.errors import StreamForged
    from pokdeng_service.application.principal import SYSTEM
    from pokdeng_service.store.aggregates import command_uuid

    app = make_app()
    app.open_wallet("open-zed", "zed")
    app.deposit("dep-1", "zed", 100)
    answered = app.deposit("dep-2", "zed", 200)
    assert app.deposit("dep-2", "zed", 200).events == answered.events  # a retry: the first answer
    app.close()
    with sqlite3.connect(app_env["SQLITE_DBNAME"]) as conn:
        row = (command_uuid("dep-2", SYSTEM.scope).hex,)
        (state,) = conn.execute("SELECT state FROM stored_events WHERE originator_id = ?", row).fetchone()
        data = json.loads(state)
        data["result"].update({"from": 2, "to": 2})  # dep-1's deposit
        conn.execute("UPDATE stored_events SET state = ? WHERE originator_id = ?", (json.dumps(data).encode(), *row))
    restarted = make_app()
    with pytest.raises(StreamForged, match="another request's"):
        restarted.deposit("dep-2", "zed", 200)
    assert restarted.deposit("dep-1", "zed", 100).replayed  # (an untouched record answers as before)
