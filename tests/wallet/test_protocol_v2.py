"""Protocol version 2 (``pokdeng.wallet.v2``, ``--wallet-protocol 2``): what it adds, against the reference platform.

A request id per call apart from the tx id (a retry: the same tx id, a new request id); rollbacks as
their own transactions (``<debit>:rollback``) naming the original with its amount and currency;
``round_closed`` on the round's last transaction, sent only once every other transaction of the round
has its answer; the game code and provider id in every money call; DUPLICATE and BET_NOT_FOUND as
definite answers that applied nothing; the currency in every answer (another is no answer); the
reconciliation over version 2's record. Version 1 keeps working (the rest of tests/wallet).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from pokdeng_service.application import PokdengApp
from pokdeng_service.application.errors import WalletUnavailable
from pokdeng_service.wallet.outbox import closing_tx, credit_tx_id, load_transactions
from pokdeng_service.wallet.platform import PlatformWallet, Unanswered
from pokdeng_service.wallet.reconcile import reconcile
from pokdeng_service.wallet.v1 import wallet_pb2 as pb
from pokdeng_service.wallet.v2 import wallet_pb2 as pb2

from ..service import play
from .conftest import FUNDS, PLAYERS, Platform
from .platform_server import V2, serve_http, v2_of

App = Callable[..., PokdengApp]


def _driver(app: PokdengApp, seed: int = 6) -> play.Driver:
    d = play.Driver(app, chooser=play.Chooser(random.Random(seed)))
    play.open_table(d, "t1", "classic", [(i, p) for i, p in enumerate(PLAYERS, 1)])
    return d


def _rounds(d: play.Driver, count: int, void: int = -1) -> list[str]:
    ids = []
    for n in range(count):
        round_id = play.start_round(d, "t1")
        play.seat_bets(d, round_id, 200)
        if n == void:
            d.call("void_round", round_id, "a void")
        else:
            play.drive_round(d, round_id)
        ids.append(round_id)
    return ids


def _money(v2: V2) -> list[tuple[str, Any]]:
    return [(m, r) for m, r in v2.requests if m in ("Debit", "Credit", "Rollback")]


@pytest.fixture
def v2_app(platform: Platform, remote_app: App) -> PokdengApp:
    platform.fund(*PLAYERS)
    return remote_app(protocol=2, game_code="pokdeng-classic", provider_id="acme")


def test_rounds_on_version_2(platform: Platform, v2_app: PokdengApp) -> None:
    rounds = _rounds(_driver(v2_app), 3, void=1)
    v2 = v2_of(platform.ledger)
    money = _money(v2)
    assert money and all(r.game_code == "pokdeng-classic" and r.provider_id == "acme" for _m, r in money)
    assert len({r.request_id for _m, r in v2.requests}) == len(v2.requests)  # (a request id per call)
    # the void's rollbacks: their own transactions, naming the debit, its amount and currency
    rollbacks = [r for m, r in money if m == "Rollback"]
    debits = {r.tx_id: r for m, r in money if m == "Debit"}
    assert len(rollbacks) == 3
    for rollback in rollbacks:
        assert rollback.tx_id == f"{rollback.original_tx_id}:rollback" and rollback.reason == "round_voided"
        assert (rollback.amount, rollback.currency) == (debits[rollback.original_tx_id].amount, "THB")
    # round_closed: on each round's last transaction only, and nothing of a round came after it
    for round_id in rounds:
        txs = load_transactions(v2_app, round_id)
        assert txs is not None and not txs.pending()
        flagged = [r.tx_id for _m, r in money if r.round_id == round_id and r.round_closed]
        closing = closing_tx(txs.txs)
        assert closing is not None
        assert flagged == [closing if round_id != rounds[1] else f"{closing}:rollback"]
    assert v2.late == []
    # the platform's balances are the rounds' nets; the reconciliation of version 2's record finds nothing
    nets: dict[str, int] = {}
    for round_id in rounds:
        for event in v2_app.get_round(round_id).events:
            if event.kind == "round_settled":
                for player, _held, net in event.data["wallets"]:
                    nets[player] = nets.get(player, 0) + net
    assert platform.ledger.balances() == {p: FUNDS + nets.get(p, 0) for p in PLAYERS}
    wallet = PlatformWallet.connect(platform.url, protocol=2)
    try:
        now = datetime.now(tz=UTC)
        report = reconcile([v2_app], wallet, now - timedelta(minutes=5), now + timedelta(minutes=5))
    finally:
        wallet.close()
    assert report.ok and not report.pending and report.compared == 9 + 6, report.render()
    assert report.platform_totals == report.pokdeng_totals


def test_duplicate_and_bet_not_found_apply_nothing(platform: Platform, v2_app: PokdengApp) -> None:
    d = _driver(v2_app)
    round_id = play.start_round(d, "t1")
    v2 = v2_of(platform.ledger)
    # the debit applied and its answer lost: the retry (same tx id, a new request id) is a DUPLICATE of it
    platform.faults.force("Debit", "lost_reply")
    play.place_bets(d, round_id, [(1, "alice", 200)])
    calls = [r for m, r in _money(v2) if m == "Debit"]
    assert len(calls) == 2 and calls[0].tx_id == calls[1].tx_id and calls[0].request_id != calls[1].request_id
    assert platform.ledger.balance_of("alice") == FUNDS - 1000  # (once)
    # a debit the platform never got: its rollback is BET_NOT_FOUND, a tombstone (nothing was debited)
    platform.faults.force("Debit", "unavailable", "unavailable", "unavailable")
    with pytest.raises(WalletUnavailable):
        play.place_bets(d, round_id, [(2, "bob", 200)])
    txs = load_transactions(v2_app, round_id)
    assert txs is not None
    lost = txs.txs[f"{round_id}:bet:2:bob:0"]
    assert (lost.status, lost.debited, lost.reason) == ("rolled_back", False, "debit_unanswered")
    assert platform.ledger.balance_of("bob") == FUNDS
    # a credit naming a debit the platform lost: BET_NOT_FOUND, a refusal: the player is owed it
    play.place_bets(d, round_id, [(3, "carol", 200)])
    platform.ledger.db.execute("DELETE FROM txs WHERE kind = ? AND player = ?", (pb.TRANSACTION_KIND_DEBIT, "carol"))
    play.drive_round(d, round_id)
    txs = load_transactions(v2_app, round_id)
    assert txs is not None
    credit = txs.txs[credit_tx_id(round_id, "carol")]
    assert credit.status == "refused" and credit.reason.startswith("bet_not_found") and txs.owed() == [credit]


def test_the_round_closing_transaction_waits_for_the_others(platform: Platform, v2_app: PokdengApp) -> None:
    d = _driver(v2_app)
    round_id = play.start_round(d, "t1")
    play.seat_bets(d, round_id, 200)
    platform.faults.force("Credit", "unavailable", "unavailable", "unavailable")  # (the first credit sent: no answer)
    play.drive_round(d, round_id)
    txs = load_transactions(v2_app, round_id)
    assert txs is not None
    closing = closing_tx(txs.txs)
    assert {t.tx_id for t in txs.pending()} == {credit_tx_id(round_id, p) for p in PLAYERS[:1]} | {closing}
    v2 = v2_of(platform.ledger)
    assert not any(r.round_closed for _m, r in _money(v2))  # (not sent while another is unanswered)
    assert v2_app.wallet_port.finish(v2_app, round_id) == 0  # type: ignore[attr-defined]
    credits = [r for m, r in _money(v2) if m == "Credit"]
    assert credits[-1].tx_id == closing and credits[-1].round_closed and v2.late == []


def test_over_http_and_what_is_no_answer(platform: Platform, remote_app: App) -> None:
    platform.fund(*PLAYERS)
    server, port = serve_http(platform.ledger)
    try:
        app = remote_app(f"http://127.0.0.1:{port}", protocol=2)
        (round_id,) = _rounds(_driver(app), 1)
        txs = load_transactions(app, round_id)
        assert txs is not None and not txs.pending() and len(txs.txs) == 6
    finally:
        server.shutdown()
        server.server_close()

    class Fake:
        """Answers every call in another currency, or for another request id."""

        def __init__(self, currency: str, same_request: bool) -> None:
            self.currency, self.same_request = currency, same_request

        def call(self, method: str, request: Any, response_type: Any, timeout: float, token: str = "") -> Any:
            request_id = request.request_id if self.same_request else "another"
            return pb2.DebitResponse(
                request_id=request_id, tx_id=request.tx_id, status=pb2.STATUS_APPLIED, currency=self.currency
            )

        def close(self) -> None:
            pass

    assert PlatformWallet(Fake("THB", True), protocol=2).debit("x:bet:1:a:0", "a", "x", "t", 5, "THB", "bet").applied
    for fake in (Fake("USD", True), Fake("", True), Fake("THB", False)):
        with pytest.raises(Unanswered):
            PlatformWallet(fake, protocol=2, backoff=0).debit("x:bet:1:a:0", "a", "x", "t", 5, "THB", "bet")
