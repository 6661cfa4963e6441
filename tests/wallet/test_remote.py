"""The platform's wallets through the application: debits before bets, credits at settlement, rollbacks.

Every scenario runs ``PokdengApp`` on an SQLite store with ``RemotePort`` talking gRPC to the
reference platform wallet (``platform_server``), then checks both books: the platform's ledger and
pokdeng's record agree to the minor unit, and the store verifies (``audit.verify_store``).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from pokdeng_core.errors import InsufficientFunds
from pokdeng_core.round_state import Phase
from pokdeng_service import audit
from pokdeng_service.application import PokdengApp
from pokdeng_service.application.errors import Conflict, NotFound, WalletUnavailable
from pokdeng_service.wallet.outbox import load_transactions
from pokdeng_service.wallet.remote import RemotePort
from pokdeng_service.wallet.v1 import wallet_pb2 as pb

from ..service import play
from .conftest import FUNDS, PLAYERS, Platform

App = Callable[..., PokdengApp]


def _driver(app: PokdengApp, seed: int = 3) -> play.Driver:
    return play.Driver(app, chooser=play.Chooser(random.Random(seed)))


def _table(d: play.Driver, table_id: str = "t1", profile: str = "classic", **options: Any) -> None:
    play.open_table(d, table_id, profile, [(i, p) for i, p in enumerate(PLAYERS, 1)], **options)


def _store_ok(app: PokdengApp) -> list[Any]:
    verdicts = audit.verify_store(app)
    bad = [v.render() for v in verdicts if not v.ok]
    assert not bad, "\n".join(bad)
    return verdicts


def _nets(app: PokdengApp, round_ids: list[str]) -> dict[str, int]:
    nets: dict[str, int] = {}
    for round_id in round_ids:
        for event in app.get_round(round_id).events:
            if event.kind == "round_settled":
                for player, _reserved, net in event.data["wallets"]:
                    nets[player] = nets.get(player, 0) + net
    return nets


def test_rounds_debit_stakes_and_credit_settlements(platform: Platform, remote_app: App) -> None:
    platform.fund(*PLAYERS)
    app = remote_app()
    d = _driver(app)
    _table(d)
    rounds = []
    for _ in range(6):
        round_id = play.start_round(d, "t1")
        play.seat_bets(d, round_id, 300)
        play.drive_round(d, round_id)
        rounds.append(round_id)
    nets = _nets(app, rounds)
    assert platform.ledger.balances() == {p: FUNDS + nets.get(p, 0) for p in PLAYERS}
    for round_id in rounds:
        txs = load_transactions(app, round_id)
        assert txs is not None and not txs.pending()
        assert {t.status for t in txs.txs.values()} == {"accepted", "applied"}
        assert audit.verify_round(app, round_id, check_wallets=True).ok
    with pytest.raises(NotFound):  # no wallet of the store was used
        app.get_wallet("alice")
    verdicts = _store_ok(app)
    assert any(v.subject == "platform transactions" for v in verdicts)


def test_a_refused_debit_places_no_bet_and_a_retry_gets_a_new_transaction(platform: Platform, remote_app: App) -> None:
    platform.fund("alice", "bob")
    platform.fund("carol", amount=250)  # a classic stake reserves 5x: 300 needs 1500
    app = remote_app()
    d = _driver(app)
    _table(d)
    round_id = play.start_round(d, "t1")
    with pytest.raises(InsufficientFunds) as refused:
        app.place_bet("carol-1", round_id, 3, "carol", 300)
    assert refused.value.required == 1500 and refused.value.available == 250
    assert app.round_state(round_id).bets == ()
    txs = load_transactions(app, round_id)
    assert txs is not None and [t.status for t in txs.txs.values()] == ["refused"]
    platform.ledger.db.execute("UPDATE players SET balance = 5000 WHERE player = 'carol'")
    app.place_bet("carol-1", round_id, 3, "carol", 300)  # the same request id, now covered: attempt 1
    txs = load_transactions(app, round_id)
    assert txs is not None and sorted(txs.txs) == [f"{round_id}:bet:3:carol:0", f"{round_id}:bet:3:carol:1"]
    again = app.place_bet("carol-1", round_id, 3, "carol", 300)
    assert again.replayed
    assert platform.ledger.balance_of("carol") == 3500
    with pytest.raises(NotFound):
        app.place_bet("dave-1", round_id, 1, "dave", 300)  # a backer the platform does not know
    play.drive_round(d, round_id)
    _store_ok(app)


def test_a_void_rolls_back_every_debit(platform: Platform, remote_app: App) -> None:
    platform.fund(*PLAYERS)
    app = remote_app()
    d = _driver(app)
    _table(d)
    round_id = play.start_round(d, "t1")
    play.seat_bets(d, round_id, 200)
    assert platform.ledger.balances() == {p: FUNDS - 1000 for p in PLAYERS}
    app.void_round("void-1", round_id, "the dealer's shoe was dropped")
    assert platform.ledger.balances() == {p: FUNDS for p in PLAYERS}
    txs = load_transactions(app, round_id)
    assert txs is not None and {(t.status, t.debited) for t in txs.txs.values()} == {("rolled_back", True)}
    _store_ok(app)


def test_an_unanswered_debit_is_rolled_back_and_its_late_delivery_moves_nothing(
    platform: Platform, remote_app: App
) -> None:
    platform.fund(*PLAYERS)
    app = remote_app()
    d = _driver(app)
    _table(d)
    round_id = play.start_round(d, "t1")
    platform.faults.force("Debit", "lost_reply", "timeout", "unavailable")  # every attempt of the debit
    with pytest.raises(WalletUnavailable):
        app.place_bet("alice-1", round_id, 1, "alice", 200)
    assert app.round_state(round_id).bets == ()
    assert platform.ledger.balance_of("alice") == FUNDS  # taken by the first attempt, given back
    txs = load_transactions(app, round_id)
    assert txs is not None
    (tx,) = txs.txs.values()
    assert (tx.status, tx.reason, tx.debited) == ("rolled_back", "debit_unanswered", True)
    late = platform.ledger.debit(
        pb.DebitRequest(tx_id=tx.tx_id, player="alice", round_id=round_id, amount=1000, currency="THB")
    )
    assert late.status == pb.TRANSACTION_STATUS_ROLLED_BACK
    assert platform.ledger.balance_of("alice") == FUNDS
    app.place_bet("alice-1", round_id, 1, "alice", 200)  # the retry: a new transaction
    play.drive_round(d, round_id)
    _store_ok(app)


def test_a_debit_left_open_by_a_crash_is_rolled_back_by_the_recovery(platform: Platform, remote_app: App) -> None:
    from pokdeng_service.application.attempt import Attempt
    from pokdeng_service.wallet.recovery import WalletRecovery
    from pokdeng_service.wallet.stakes import StakeStep

    platform.fund(*PLAYERS)
    app = remote_app()
    d = _driver(app)
    _table(d)
    round_id = play.start_round(d, "t1")
    port = app.wallet_port
    assert isinstance(port, RemotePort)
    # the crash: the debit is requested and applied by the platform; the process dies before it records the answer
    from pokdeng_service.application.principal import SYSTEM
    from pokdeng_service.application.round_commands import PlaceBet

    requested = StakeStep(port)(Attempt(app, SYSTEM, "alice-1"), PlaceBet(round_id, 1, "alice", 200))
    assert requested is not None
    app.save(*requested.saved)  # (what the pipeline saves before any call)
    (tx,) = requested.debits
    port.platform.debit(tx.tx_id, "alice", round_id, "t1", tx.amount, "THB", "bet")
    assert platform.ledger.balance_of("alice") == FUNDS - 1000
    later = remote_app()  # the process that starts after the crash
    with pytest.raises(Conflict):  # the client's retry, before the recovery: the debit is still open
        later.place_bet("alice-1", round_id, 1, "alice", 200)
    recovery = WalletRecovery(later, later.wallet_port)
    assert recovery.tick() == 1  # not yet abandoned (the grace)
    assert recovery.tick(abandoned_after=0) == 0
    assert platform.ledger.balance_of("alice") == FUNDS
    later.place_bet("alice-1", round_id, 1, "alice", 200)  # the retry goes through: attempt 1
    assert platform.ledger.balance_of("alice") == FUNDS - 1000
    play.drive_round(play.Driver(later, prefix="later"), round_id)
    _store_ok(later)


def test_a_credit_is_retried_until_the_platform_applies_it(platform: Platform, remote_app: App) -> None:
    platform.fund(*PLAYERS)
    app = remote_app()
    d = _driver(app)
    _table(d, "k1", "kingmaker")
    round_id = play.start_round(d, "k1")
    play.seat_bets(d, round_id, 500)
    platform.faults.force("Credit", *["unavailable"] * 30)
    play.drive_round(d, round_id)
    txs = load_transactions(app, round_id)
    assert txs is not None and {t.tx_id for t in txs.pending()} == {f"{round_id}:credit:{p}" for p in PLAYERS}
    platform.faults._forced.clear()
    port = app.wallet_port
    assert isinstance(port, RemotePort)
    assert port.finish(app, round_id) == 0
    nets = _nets(app, [round_id])
    assert platform.ledger.balances() == {p: FUNDS + nets[p] for p in PLAYERS}
    _store_ok(app)


def test_a_player_banker_covers_each_stake_with_its_own_debit(platform: Platform, remote_app: App) -> None:
    platform.fund(*PLAYERS, "dealer")
    app = remote_app()
    d = _driver(app, seed=11)
    _table(d, dealer="dealer")
    rounds = []
    for _ in range(4):
        round_id = play.start_round(d, "t1")
        play.seat_bets(d, round_id, 200)
        txs = load_transactions(app, round_id)
        assert txs is not None
        covers = [t for t in txs.txs.values() if t.purpose == "cover"]
        assert [(t.player, t.amount) for t in covers] == [("dealer", 1000)] * 3
        play.drive_round(d, round_id)
        rounds.append(round_id)
    nets = _nets(app, rounds)
    assert platform.ledger.balances() == {p: FUNDS + nets.get(p, 0) for p in (*PLAYERS, "dealer")}
    _store_ok(app)


def test_side_bets_are_debited_and_settled(platform: Platform, remote_app: App) -> None:
    platform.fund(*PLAYERS)
    app = remote_app()
    d = play.Driver(app, chooser=play.Chooser(random.Random(5), side_bet=1.0))
    _table(d, "k1", "kingmaker")
    rounds, sides = [], 0
    for _ in range(120):  # a window opens in about 1 round of 7 (the banker's up card an 8 or a 9)
        round_id = play.start_round(d, "k1")
        play.seat_bets(d, round_id, 400)
        play.drive_round(d, round_id)
        rounds.append(round_id)
        txs = load_transactions(app, round_id)
        assert txs is not None
        sides += sum(1 for t in txs.txs.values() if t.purpose == "side")
        if sides and len(rounds) >= 12:
            break
    nets = _nets(app, rounds)
    assert platform.ledger.balances() == {p: FUNDS + nets.get(p, 0) for p in PLAYERS}
    assert sides, f"no side bet window opened in {len(rounds)} rounds"
    _store_ok(app)


def test_the_json_over_http_form(platform: Platform, remote_app: App) -> None:
    from .platform_server import serve_http

    platform.fund(*PLAYERS)
    server, port = serve_http(platform.ledger)
    try:
        app = remote_app(url=f"http://127.0.0.1:{port}")
        d = _driver(app)
        _table(d)
        round_id = play.start_round(d, "t1")
        play.seat_bets(d, round_id, 100)
        play.drive_round(d, round_id)
        nets = _nets(app, [round_id])
        assert platform.ledger.balances() == {p: FUNDS + nets.get(p, 0) for p in PLAYERS}
    finally:
        server.shutdown()
        server.server_close()
    _store_ok(app)


def test_a_stake_placed_too_late_is_rolled_back(platform: Platform, remote_app: App) -> None:
    """The deal closed betting while the stake's debit was on its way: the debit is rolled back."""
    platform.fund(*PLAYERS)
    app = remote_app()
    d = _driver(app)
    _table(d)
    round_id = play.start_round(d, "t1")
    play.place_bets(d, round_id, [(1, "alice", 100)])
    port = app.wallet_port
    assert isinstance(port, RemotePort)
    debit = port.platform.debit

    def deal_meanwhile(*args: Any, **kwargs: Any) -> Any:
        answer = debit(*args, **kwargs)
        app.deal("deal-1", round_id)
        return answer

    vars(port.platform)["debit"] = deal_meanwhile
    from pokdeng_core.errors import WrongPhase

    with pytest.raises(WrongPhase):
        app.place_bet("bob-1", round_id, 2, "bob", 100)
    port.platform.debit = debit  # type: ignore[method-assign]
    assert platform.ledger.balance_of("bob") == FUNDS
    txs = load_transactions(app, round_id)
    assert txs is not None and txs.txs[f"{round_id}:bet:2:bob:0"].reason == "bet_not_placed"
    play.drive_round(d, round_id)
    assert app.round_state(round_id).phase is Phase.CLOSED
    _store_ok(app)


def test_a_room_banker_bids_with_its_balance_on_the_platform(platform: Platform, remote_app: App) -> None:
    platform.fund(*PLAYERS)
    platform.fund("rich", amount=50 * FUNDS)
    app = remote_app()
    d = _driver(app, seed=4)
    play.open_table(d, "r1", "room", [(1, "alice"), (2, "bob"), (3, "carol"), (4, "rich")])
    banker = play.hold_banker_bid(d, "r1", [("alice", 0), ("bob", 0), ("carol", 0), ("rich", 5)])
    assert banker == "rich"
    assert platform.ledger.calls.get("Balance", 0) >= 1  # the bid's capital is the platform's balance
    rounds = []
    for _ in range(3):
        round_id = play.start_round(d, "r1")
        play.place_bets(d, round_id, [(1, "alice", 200), (2, "bob", 300)])
        play.drive_round(d, round_id)
        rounds.append(round_id)
    nets = _nets(app, rounds)
    assert platform.ledger.balances() == {
        p: (50 * FUNDS if p == "rich" else FUNDS) + nets.get(p, 0) for p in (*PLAYERS, "rich")
    }
    _store_ok(app)


def test_replies_of_other_calls_duplicates_and_late_deliveries_move_money_once(
    platform: Platform, remote_app: App
) -> None:
    platform.fund(*PLAYERS, "dave")
    app = remote_app()
    d = _driver(app)
    _table(d)
    round_id = play.start_round(d, "t1")
    app.place_bet("alice-1", round_id, 1, "alice", 100)
    platform.faults.force("Debit", "stale_reply")  # bob's call is answered with alice's reply: not its own
    app.place_bet("bob-1", round_id, 2, "bob", 100)
    platform.faults.force("Debit", "duplicate")
    app.place_bet("carol-1", round_id, 3, "carol", 100)
    platform.faults.force("Debit", "delayed", "delayed", "delayed")  # every attempt arrives after the rollback
    with pytest.raises(WalletUnavailable):
        app.place_bet("dave-1", round_id, 1, "dave", 100)
    platform.faults.wait_delayed()
    assert platform.ledger.balances() == {"alice": FUNDS - 500, "bob": FUNDS - 500, "carol": FUNDS - 500, "dave": FUNDS}
    assert platform.faults.mismatched == 0
    play.drive_round(d, round_id)
    _store_ok(app)


@pytest.mark.postgres
def test_the_platform_s_wallets_on_postgresql(platform: Platform, postgres_env: dict[str, str]) -> None:
    from pokdeng_service.wallet.config import WalletConfig
    from pokdeng_service.wallet.recovery import WalletRecovery
    from pokdeng_service.wallet.remote import attach, close_platform

    platform.fund(*PLAYERS)
    app = play.make_app(postgres_env)
    try:
        attach([app], WalletConfig("remote", platform.url, timeout=0.3), recovery=False)
        d = _driver(app)
        _table(d, "k1", "kingmaker")
        rounds = []
        for n in range(4):
            round_id = play.start_round(d, "k1")
            play.seat_bets(d, round_id, 300)
            if n == 2:
                d.call("void_round", round_id, "a void")
            else:
                play.drive_round(d, round_id)
            rounds.append(round_id)
        nets = _nets(app, rounds)
        assert platform.ledger.balances() == {p: FUNDS + nets.get(p, 0) for p in PLAYERS}
        assert WalletRecovery(app, app.wallet_port).tick() == 0
        _store_ok(app)
    finally:
        close_platform([app])
        app.close()
