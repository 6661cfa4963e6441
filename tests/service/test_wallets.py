"""Wallets and input checking, end to end through the application on SQLite and PostgreSQL.

Open, deposit, withdraw (never into reserved funds), statement lines with a running balance;
bad amounts and unknown ids are clear errors (``InvalidCommand`` naming the field,
``NotFound``) and write nothing (``app.max_position`` does not move).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pokdeng_core.errors import DomainError, InsufficientFunds, InvalidCommand
from pokdeng_service.application import PokdengApp
from pokdeng_service.application.errors import AlreadyExists, NotFound

from . import play
from .play import Driver, Ledger

MAX_INT64 = 2**63 - 1
MAX_AMOUNT = 2**53 - 1
BAD_IDS = ["", "   ", "x" * 129, "a\nb", "tab\t", 42, None]
BAD_AMOUNTS = [0, -1, -(2**63), True, False, 1.5, 100.0, MAX_INT64 + 1, 10**30, "100", None]


def refused(app: PokdengApp, error: type[Exception], call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    before = app.max_position
    with pytest.raises(error) as caught:
        call(*args, **kwargs)
    assert app.max_position == before, "a refused command wrote events"
    return caught.value


def test_open_deposit_withdraw_and_statement(driver: Driver, app: PokdengApp) -> None:
    opened = driver.call("open_wallet", "ann")
    assert opened.stream == "wallet" and opened.id == "ann" and not opened.replayed
    assert [e.kind for e in opened.events] == ["Opened"]
    view = app.get_wallet("ann")
    assert (view.balance, view.reserved, view.available, view.reservations) == (0, 0, 0, ())
    refused(app, AlreadyExists, app.open_wallet, "again", "ann")

    moves = [("deposit", 10_000), ("deposit", 2_500), ("withdraw", 4_000), ("deposit", 1), ("withdraw", 8_501)]
    ids = []
    for command, amount in moves:
        result = driver.call(command, "ann", amount)
        ids.append(result.request_id)
        assert [e.kind for e in result.events] == ["Deposited" if command == "deposit" else "Withdrawn"]
        assert result.events[0].data["amount"] == amount
    assert app.get_wallet("ann").balance == 0
    refused(app, InsufficientFunds, app.withdraw, "too-much", "ann", 1)

    lines = app.wallet_statement("ann")
    assert [line.kind for line in lines] == ["Opened", "Deposited", "Deposited", "Withdrawn", "Deposited", "Withdrawn"]
    assert [line.position for line in lines] == list(range(1, 7))
    signed = [a if c == "deposit" else -a for c, a in moves]
    assert [line.amount for line in lines[1:]] == signed
    running = 0
    for line, amount in zip(lines[1:], signed, strict=True):
        running += amount
        assert line.balance_after == running
    assert [line.reference for line in lines[1:]] == ids
    # paging: lines after a position carry on the running balance
    page = app.wallet_statement("ann", after=3, limit=2)
    assert page == lines[3:5]
    refused(app, InvalidCommand, app.wallet_statement, "ann", limit=0)
    refused(app, InvalidCommand, app.wallet_statement, "ann", after=-1)


def test_withdraw_never_touches_reserved_funds(driver: Driver, app: PokdengApp) -> None:
    play.open_wallets(driver, ["pat"], 3_000)
    play.open_table(driver, "t", "classic", [(1, "pat")])
    round_id = play.start_round(driver, "t")
    driver.call("place_bet", round_id, 1, "pat", 400)  # reserves 2000
    view = app.get_wallet("pat")
    assert (view.balance, view.reserved, view.available) == (3_000, 2_000, 1_000)
    assert [(r.round_id, r.amount) for r in view.reservations] == [(round_id, 2_000)]
    error = refused(app, InsufficientFunds, app.withdraw, "w-big", "pat", 1_001)
    assert (error.required, error.available, error.wallet) == (1_001, 1_000, "pat")
    refused(app, InsufficientFunds, app.withdraw, "w-all", "pat", 3_000)
    driver.call("withdraw", "pat", 1_000)
    assert app.get_wallet("pat").available == 0
    refused(app, InsufficientFunds, app.withdraw, "w-one", "pat", 1)
    ledger = Ledger.take(app, ["pat"], ["t"])
    play.drive_round(driver, round_id)
    ledger.assert_balanced(app)
    after = app.get_wallet("pat")
    assert after.balance >= 0 and after.reserved == 0
    total, lines = play.statement_total(app, "pat")
    assert total == after.balance == lines[-1].balance_after
    assert sum(line.reserved_change for line in lines) == 0


def test_reserved_funds_cannot_back_a_second_stake(driver: Driver, app: PokdengApp) -> None:
    play.open_wallets(driver, ["sam"], 2_999)
    play.open_wallets(driver, ["tom"])
    play.open_table(driver, "t", "classic", [(1, "sam"), (2, "tom")])
    round_id = play.start_round(driver, "t")
    driver.call("place_bet", round_id, 1, "sam", 500)  # 2500 reserved, 499 left
    error = refused(app, InsufficientFunds, app.place_bet, "second", round_id, 2, "sam", 100)
    assert (error.required, error.available) == (500, 499)
    assert app.get_wallet("sam").reserved == 2_500


def test_bad_amounts_are_refused_and_write_nothing(driver: Driver, app: PokdengApp) -> None:
    play.open_wallets(driver, ["amy", "bo"], 10_000)
    play.open_table(driver, "t", "classic", [(1, "amy")])
    round_id = play.start_round(driver, "t")
    for amount in BAD_AMOUNTS:
        for call, field in ((app.deposit, "amount"), (app.withdraw, "amount")):
            error = refused(app, InvalidCommand, call, "bad", "amy", amount)
            assert error.field == field and error.message, amount
        error = refused(app, InvalidCommand, app.place_bet, "bad-bet", round_id, 1, "amy", amount)
        assert error.field == "stake", amount
    assert app.get_wallet("amy").balance == 10_000 and app.get_wallet("amy").reserved == 0
    assert app.round_state(round_id).bets == ()


def test_balance_overflow_is_refused(driver: Driver, app: PokdengApp) -> None:
    play.open_wallets(driver, ["rich"], MAX_AMOUNT)  # the cap (2**53 - 1: exact in JSON)
    error = refused(app, InvalidCommand, app.deposit, "one-more", "rich", 1)
    assert error.field == "amount"
    assert app.get_wallet("rich").balance == MAX_AMOUNT


def test_unknown_ids_are_not_found_and_write_nothing(driver: Driver, app: PokdengApp) -> None:
    play.open_wallets(driver, ["kim"])
    play.open_table(driver, "t", "classic", [(1, "kim")])
    round_id = play.start_round(driver, "t")
    cases: list[tuple[Callable[..., Any], tuple[Any, ...]]] = [
        (app.deposit, ("r", "ghost", 100)),
        (app.withdraw, ("r", "ghost", 100)),
        (app.get_wallet, ("ghost",)),
        (app.wallet_statement, ("ghost",)),
        (app.take_seat, ("r", "no-table", "kim", 2)),
        (app.start_round, ("r", "no-table")),
        (app.get_table, ("no-table",)),
        (app.bid_for_banker, ("r", "no-table", "kim", 10)),
        (app.place_bet, ("r", "no-round", 1, "kim", 100)),
        (app.place_bet, ("r", round_id, 1, "ghost", 100)),  # a player without a wallet
        (app.deal, ("r", "no-round")),
        (app.draw, ("r", "no-round", 1, "kim")),
        (app.void_round, ("r", "no-round", "why")),
        (app.get_round, ("no-round",)),
        (app.round_events, ("no-round",)),
        (app.round_state, ("no-round",)),
        # ids of the wrong kind: a table id is not a round id, a round id is not a wallet id
        (app.get_round, ("t",)),
        (app.get_wallet, (round_id,)),
    ]
    for call, args in cases:
        error = refused(app, NotFound, call, *args)
        assert error.code == "not_found" and error.message, (call, args)


def test_bad_ids_are_invalid_and_write_nothing(driver: Driver, app: PokdengApp) -> None:
    play.open_wallets(driver, ["lee"])
    for bad in BAD_IDS:
        assert refused(app, InvalidCommand, app.deposit, bad, "lee", 100).field == "request_id"
        assert refused(app, InvalidCommand, app.deposit, "ok-id", bad, 100).field == "wallet_id"
        assert refused(app, InvalidCommand, app.open_wallet, "ok-id", bad).field == "wallet_id"
        assert refused(app, InvalidCommand, app.open_table, "ok-id", bad, "classic", min_stake=1, max_stake=2).field
        assert refused(app, InvalidCommand, app.get_round, bad).field == "round_id"


def test_bad_table_settings_are_refused(driver: Driver, app: PokdengApp) -> None:
    cases: list[dict[str, Any]] = [
        {"profile": "baccarat"},
        {"profile": "classic", "profile_version": 99},
        {"profile": "room", "options": {"straights": True}},
        {"min_stake": 0},
        {"min_stake": -5},
        {"min_stake": 500, "max_stake": 100},
        {"profile": "ante", "min_stake": 101},
        {"seats": 0},
        {"seats": 18},
        {"profile": "room", "seats": 6},
        {"profile": "kingmaker", "dealer": "dan"},
        {"turn_timeout": 0},
    ]
    for case in cases:
        args = {"profile": "classic", "min_stake": 100, "max_stake": 1000, **case}
        profile = args.pop("profile")
        options = args.pop("options", None)
        refused(app, InvalidCommand, app.open_table, "bad-table", "t", profile, options, **args)


@pytest.mark.parametrize("limit", [True, 1.5, 100.0], ids=repr)
def test_table_stake_limits_must_be_whole_numbers(app: PokdengApp, limit: Any) -> None:
    refused(app, InvalidCommand, app.open_table, "bad-table", "t", "classic", min_stake=limit, max_stake=1000)


@pytest.mark.parametrize("seat", [True, 2.0], ids=repr)
def test_seat_numbers_must_be_whole_numbers(driver: Driver, app: PokdengApp, seat: Any) -> None:
    play.open_wallets(driver, ["ida"])
    play.open_table(driver, "t", "classic")
    refused(app, DomainError, app.take_seat, "bad-seat", "t", "ida", seat)


@pytest.mark.parametrize("seat", [True, 1.0], ids=repr)
def test_bet_seat_must_be_a_whole_number(driver: Driver, app: PokdengApp, seat: Any) -> None:
    play.open_wallets(driver, ["ida"])
    play.open_table(driver, "t", "ante")
    round_id = play.start_round(driver, "t")
    refused(app, DomainError, app.place_bet, "bad-seat", round_id, seat, "ida", 100)


def test_banker_bid_rounds_must_be_a_whole_number(driver: Driver, app: PokdengApp) -> None:
    play.open_wallets(driver, ["ida"])
    play.open_table(driver, "t", "room", [(1, "ida")])
    refused(app, InvalidCommand, app.bid_for_banker, "bad-bid", "t", "ida", 10.0)


def test_refused_round_commands_write_nothing(driver: Driver, app: PokdengApp) -> None:
    play.open_wallets(driver, ["eve", "fay"])
    play.open_table(driver, "t", "classic", [(1, "eve"), (2, "fay")], min_stake=100, max_stake=1000)
    round_id = play.start_round(driver, "t")
    refused(app, DomainError, app.deal, "deal-empty", round_id)  # no stakes yet
    refused(app, InvalidCommand, app.place_bet, "low", round_id, 1, "eve", 99)
    refused(app, InvalidCommand, app.place_bet, "high", round_id, 1, "eve", 1001)
    refused(app, DomainError, app.place_bet, "seat9", round_id, 9, "eve", 100)
    refused(app, DomainError, app.draw, "early", round_id, 1, "eve")
    refused(app, DomainError, app.start_round, "again", "t")  # the table's round is in play
    refused(app, DomainError, app.leave_seat, "leave", "t", "eve")
    driver.call("place_bet", round_id, 1, "eve", 100)
    refused(app, DomainError, app.place_bet, "twice", round_id, 1, "eve", 100)
    refused(app, InvalidCommand, app.void_round, "void", round_id, "  ")
    play.drive_round(driver, round_id)
    refused(app, DomainError, app.void_round, "void-closed", round_id, "too late")
    refused(app, DomainError, app.place_bet, "late", round_id, 2, "fay", 100)
