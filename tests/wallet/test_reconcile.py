"""Reconciliation lists every difference between the platform's record and pokdeng's; verification checks the outbox.

``pokdeng wallet reconcile`` compares a period's transactions by tx id: after clean rounds it
finds none; a debit the platform holds and pokdeng never recorded, a credit of another amount on
the platform's side, and a credit the platform refused are each listed (exit 1).
``pokdeng verify --all`` checks every outbox stream (its chain, its facts, its round's record):
an edited row fails it; ``pokdeng verify ROUND`` checks the round's transactions.
"""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pokdeng_service import audit
from pokdeng_service.application import PokdengApp
from pokdeng_service.audit.outbox import check_round
from pokdeng_service.cli.main import main
from pokdeng_service.wallet.outbox import Tx, credit_tx_id
from pokdeng_service.wallet.platform import PlatformWallet
from pokdeng_service.wallet.reconcile import reconcile
from pokdeng_service.wallet.v1 import wallet_pb2 as pb
from pokdeng_testkit.ports import free_port

from ..service import play
from .conftest import FUNDS, PLAYERS, Platform

App = Callable[..., PokdengApp]


def _played(platform: Platform, remote_app: App, rounds: int = 4) -> tuple[PokdengApp, list[str]]:
    platform.fund(*PLAYERS)
    app = remote_app()
    d = play.Driver(app, chooser=play.Chooser(random.Random(9)))
    play.open_table(d, "t1", "classic", [(i, p) for i, p in enumerate(PLAYERS, 1)])
    ids = []
    for n in range(rounds):
        round_id = play.start_round(d, "t1")
        play.seat_bets(d, round_id, 200)
        if n == 1:
            d.call("void_round", round_id, "a void")
        else:
            play.drive_round(d, round_id)
        ids.append(round_id)
    return app, ids


def _period() -> tuple[datetime, datetime]:
    now = datetime.now(tz=UTC)
    return now - timedelta(minutes=5), now + timedelta(minutes=5)


def test_clean_rounds_reconcile_with_no_difference(platform: Platform, remote_app: App) -> None:
    app, _rounds = _played(platform, remote_app)
    wallet = PlatformWallet.connect(platform.url)
    try:
        report = reconcile([app], wallet, *_period())
    finally:
        wallet.close()
    assert report.ok and not report.pending, report.render()
    assert report.compared == 4 * 3 + 3 * 3  # 12 debits, 9 credits
    balances = platform.ledger.balances()
    assert {p: FUNDS + report.pokdeng_totals[p] for p in PLAYERS} == balances
    assert report.platform_totals == report.pokdeng_totals


def test_every_difference_is_listed(
    platform: Platform, remote_app: App, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app, rounds = _played(platform, remote_app)
    # the platform holds a debit pokdeng never recorded, and pays one credit 1 more than pokdeng asked
    platform.ledger.debit(
        pb.DebitRequest(tx_id="t1#9:bet:1:alice:0", player="alice", round_id="t1#9", amount=500, currency="THB")
    )
    moved = credit_tx_id(rounds[0], "bob")
    platform.ledger.db.execute("UPDATE txs SET amount = amount + 1 WHERE tx_id = ? AND kind = 2", (moved,))
    wallet = PlatformWallet.connect(platform.url)
    try:
        report = reconcile([app], wallet, *_period())
    finally:
        wallet.close()
    listed = {d.tx_id: d for d in report.differences}
    assert set(listed) == {"t1#9:bet:1:alice:0", moved}, report.render()
    assert listed["t1#9:bet:1:alice:0"].pokdeng == "has no record of it"
    assert "credit" in listed[moved].pokdeng
    # the command: the same differences, exit 1 (the store read only, while nothing serves it)
    store = str(tmp_path / "pokdeng.sqlite")
    since, until = _period()
    code = main(["wallet", "reconcile", "--db", store, "--wallet-url", platform.url, "--since", since.isoformat(),
                 "--until", until.isoformat(), "--json"])  # fmt: skip
    assert code == 1
    # a platform that does not answer: exit 4 and one line, not a traceback nor "differences" (found from the outside)
    silent = f"127.0.0.1:{free_port()}"
    capsys.readouterr()
    code = main(["wallet", "reconcile", "--db", store, "--wallet-url", silent, "--timeout", "0.5"])
    assert code == 4 and "did not answer" in capsys.readouterr().err


def test_the_pending_command_lists_open_transactions(
    platform: Platform, remote_app: App, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app, _rounds = _played(platform, remote_app, rounds=1)
    round_id = play.start_round(play.Driver(app, prefix="more"), "t1")
    platform.faults.force("Credit", *["unavailable"] * 9)
    d = play.Driver(app, prefix="more2", chooser=play.Chooser(random.Random(2)))
    play.seat_bets(d, round_id, 100)
    play.drive_round(d, round_id)
    capsys.readouterr()
    assert main(["wallet", "pending", "--db", str(tmp_path / "pokdeng.sqlite"), "--json"]) == 1  # (something is)
    pending = json.loads(capsys.readouterr().out)
    assert {p["tx_id"] for p in pending} == {credit_tx_id(round_id, p) for p in PLAYERS}
    assert {p["state"] for p in pending} == {"pending"}


def test_the_store_verification_checks_the_transactions(platform: Platform, remote_app: App, tmp_path: Path) -> None:
    app, rounds = _played(platform, remote_app)
    verdicts = {v.subject: v for v in audit.verify_store(app)}
    assert verdicts["platform transactions"].ok
    assert all(v.ok for v in verdicts.values())
    round_verdict = audit.verify_round(app, rounds[0], check_wallets=True)
    assert any(c.name == "platform wallet" and c.ok for c in round_verdict.checks), round_verdict.render()
    # an edited debit row: its digest no longer recomputes
    app.close()
    with sqlite3.connect(tmp_path / "pokdeng.sqlite") as db:
        topic = "%WalletTransactions.DebitRequested"
        rows = db.execute("SELECT rowid, state FROM stored_events WHERE topic LIKE ?", (topic,))
        rowid, state = next(iter(rows))
        edited = json.loads(state)
        edited["data"]["amount"] += 1
        db.execute("UPDATE stored_events SET state = ? WHERE rowid = ?", (json.dumps(edited).encode(), rowid))
    again = remote_app()
    verdicts = {v.subject: v for v in audit.verify_store(again)}
    assert not verdicts["platform transactions"].ok
    assert "does not match its digest" in verdicts["platform transactions"].render()


def _tx(tx_id: str, player: str, amount: int, status: str = "accepted", kind: str = "debit") -> Tx:
    return Tx(tx_id, kind, player, amount, status, "", accepted=status in ("accepted", "rolled_back"))


def test_check_round_finds_each_kind_of_disagreement() -> None:
    debit = _tx("r:bet:1:a:0", "a", 500)
    assert check_round({debit.tx_id: debit}, "", {"a": 500}, {}) == ""
    assert "not the round's stakes" in check_round({debit.tx_id: debit}, "", {"a": 600}, {})
    assert "not the round's stakes" in check_round({}, "", {"a": 500}, {})
    credit = Tx("r:credit:a", "credit", "a", 700, "applied", "", debits=(debit.tx_id,))
    both = {debit.tx_id: debit, credit.tx_id: credit}
    assert check_round(both, "settled", {"a": 500}, {"a": 200}) == ""
    assert "the round pays THB 4.00" in check_round(both, "settled", {"a": 500}, {"a": -100})
    assert "the round pays JPY 400" in check_round(both, "settled", {"a": 500}, {"a": -100}, "JPY")
    assert "no credit" in check_round({debit.tx_id: debit}, "settled", {"a": 500}, {"a": 0})
    assert "in force" in check_round({debit.tx_id: debit}, "voided", {"a": 500}, {})
    undone = _tx("r:bet:1:a:0", "a", 500, "rolled_back")
    assert check_round({undone.tx_id: undone}, "voided", {"a": 500}, {}) == ""
    assert "open" in check_round(both, "", {"a": 500}, {})
