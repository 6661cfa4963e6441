"""No money owed unseen: a credit or rollback the platform refuses, or a credit it long fails, is owed to the player.

The platform answers APPLIED to the round's debits and then loses them: the settlement's credits are
refused. The player is owed the money, and everything an operator looks at says so until the money
is paid and the operator records it (``pokdeng wallet resolve TX_ID --reason TEXT``):
``pokdeng wallet pending`` lists it (player, amount; exit 1), ``pokdeng verify ROUND`` and
``verify --all`` fail, ``pokdeng_wallet_owed_minor_units`` counts it, reconcile lists it as a
difference. A rollback the platform refuses is owed alike (and a difference in the reconciliation, no
longer "pending"), and a credit unanswered for ``OWED_AFTER`` seconds too. A transaction of the
platform that is none of pokdeng's tables' (the operator's manual credit) is listed apart.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from pokdeng_service import audit
from pokdeng_service.application import PokdengApp
from pokdeng_service.cli.main import main
from pokdeng_service.money import format_money
from pokdeng_service.wallet.outbox import OWED_AFTER, credit_tx_id, load_transactions
from pokdeng_service.wallet.platform import PlatformWallet
from pokdeng_service.wallet.reconcile import reconcile, recorded_rounds, unfinished
from pokdeng_service.wallet.recovery import WalletRecovery
from pokdeng_service.wallet.v1 import wallet_pb2 as pb

from ..service import play
from .conftest import PLAYERS, Platform

App = Callable[..., PokdengApp]
STAKE = 200  # a classic stake: its debit reserves 5x, 1000


def _round(platform: Platform, app: PokdengApp, *, lose: tuple[str, ...] = (), seed: int = 4) -> str:
    """One round of the three players; the platform loses the debits of ``lose`` before the settlement."""
    d = play.Driver(app, chooser=play.Chooser(random.Random(seed)))
    play.open_table(d, "t1", "classic", [(i, p) for i, p in enumerate(PLAYERS, 1)])
    round_id = play.start_round(d, "t1")
    play.seat_bets(d, round_id, STAKE)
    for player in lose:  # (APPLIED, and then gone from the platform's books)
        platform.ledger.db.execute("DELETE FROM txs WHERE kind = ? AND player = ?", (pb.TRANSACTION_KIND_DEBIT, player))
    play.drive_round(d, round_id)
    return round_id


def _period() -> tuple[datetime, datetime]:
    now = datetime.now(tz=UTC)
    return now - timedelta(minutes=5), now + timedelta(minutes=5)


def _owed_metric() -> float:
    return REGISTRY.get_sample_value("pokdeng_wallet_owed_minor_units", {"currency": "THB"}) or 0.0


def _reconciled(platform: Platform, app: PokdengApp) -> object:
    wallet = PlatformWallet.connect(platform.url)
    try:
        return reconcile([app], wallet, *_period())
    finally:
        wallet.close()


def test_a_refused_credit_is_owed_until_an_operator_resolves_it(
    platform: Platform, remote_app: App, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    platform.fund(*PLAYERS)
    app = remote_app()
    recovery = WalletRecovery(app, app.wallet_port)  # (its tracker: the metric; never started)
    round_id = _round(platform, app, lose=("alice",))
    tx_id = credit_tx_id(round_id, "alice")
    txs = load_transactions(app, round_id)
    assert txs is not None
    credit = txs.txs[tx_id]
    assert credit.status == "refused" and "not an open applied debit" in credit.reason
    assert [t.tx_id for t in txs.owed()] == [tx_id] and credit.amount > 0
    store = ["--db", str(tmp_path / "pokdeng.sqlite")]

    # pending: listed, with its player and amount; exit 1
    capsys.readouterr()
    assert main(["wallet", "pending", *store, "--json"]) == 1
    listed = json.loads(capsys.readouterr().out)
    assert [(i["tx_id"], i["player"], i["amount"], i["state"]) for i in listed] == [
        (tx_id, "alice", credit.amount, "owed")
    ]
    assert "credit refused by the platform" in listed[0]["why"]
    assert main(["wallet", "pending", *store]) == 1
    text = capsys.readouterr().out
    assert f"OWED to players: alice {format_money(credit.amount, 'THB')}" in text and "pokdeng wallet resolve" in text
    assert f"credit of {format_money(credit.amount, 'THB')} (alice) OWED" in text  # (the JSON keeps minor units)
    assert listed[0]["currency"] == "THB"

    # verification fails: the round and the store
    assert main(["verify", round_id, *store]) == 1
    assert "owed to players" in capsys.readouterr().out
    assert main(["verify", "--all", *store]) == 1
    verdicts = {v.subject: v for v in audit.verify_store(app)}
    owed = next(c for c in verdicts["platform transactions"].checks if c.name == "owed")
    assert not owed.ok and tx_id in owed.detail

    # the metric, and the reconciliation
    recovery.follow()
    assert recovery.owed.owed() == {"THB": (credit.amount, 1)}
    assert _owed_metric() >= credit.amount
    report = _reconciled(platform, app)
    assert tx_id in {d.tx_id for d in report.differences}  # type: ignore[attr-defined]

    # not owed: nothing to resolve, and no such transaction (exit 3: refused, not found); no reason: the parser's
    applied = credit_tx_id(round_id, "bob")
    assert main(["wallet", "resolve", applied, "--reason", "x", *store]) == 3
    assert main(["wallet", "resolve", "t1#1:credit:nobody", "--reason", "x", *store]) == 3
    with pytest.raises(SystemExit):
        main(["wallet", "resolve", tx_id, *store])

    # the operator pays it on the platform (its own manual credit) and records it
    platform.ledger.credit(pb.CreditRequest(tx_id="manual-77", player="alice", amount=credit.amount, currency="THB"))
    capsys.readouterr()
    assert main(["wallet", "resolve", tx_id, "--reason", "paid by manual credit manual-77", "--operator", "kim",
                 *store]) == 0  # fmt: skip
    assert "resolved by kim" in capsys.readouterr().out
    assert main(["wallet", "resolve", tx_id, "--reason", "again", *store]) == 0  # (already: said so, nothing added)
    txs = load_transactions(app, round_id)
    assert txs is not None and txs.txs[tx_id].resolved == "paid by manual credit manual-77"
    assert txs.txs[tx_id].resolved_by == "kim" and not txs.owed()
    assert main(["wallet", "pending", *store]) == 0
    assert main(["verify", round_id, *store]) == 0
    assert main(["verify", "--all", *store]) == 0
    recovery.follow()
    assert recovery.owed.owed() == {}
    report = _reconciled(platform, app)
    # (the debit the platform lost stays a difference: its record has none; the credit is resolved, listed apart)
    lost = f"{round_id}:bet:1:alice:0"
    assert [d.tx_id for d in report.differences] == [lost], report.render()  # type: ignore[attr-defined]
    assert [d.tx_id for d in report.resolved] == [tx_id]  # type: ignore[attr-defined]
    assert [d.tx_id for d in report.not_ours] == ["manual-77"]  # type: ignore[attr-defined]
    assert report.not_ours_totals == {"alice": credit.amount}  # type: ignore[attr-defined]


def test_a_refused_rollback_is_owed_and_a_difference(
    platform: Platform, remote_app: App, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    platform.fund(*PLAYERS)
    app = remote_app()
    d = play.Driver(app, chooser=play.Chooser(random.Random(5)))
    play.open_table(d, "t1", "classic", [(i, p) for i, p in enumerate(PLAYERS, 1)])
    round_id = play.start_round(d, "t1")
    play.seat_bets(d, round_id, STAKE)
    debits = [r["tx_id"] for r in platform.ledger.rows() if r["kind"] == pb.TRANSACTION_KIND_DEBIT]
    for debit in debits[:2]:  # (the platform takes them as settled: it refuses their rollback)
        platform.ledger.db.execute("INSERT INTO settled VALUES (?, 'elsewhere')", (debit,))
    d.call("void_round", round_id, "a void")
    txs = load_transactions(app, round_id)
    assert txs is not None
    refused = {t.tx_id for t in txs.pending()}
    assert refused == set(debits[:2]) and all(txs.txs[t].refusal == "settled by a credit" for t in refused)
    assert {t.tx_id for t in txs.owed()} == refused
    # the recovery keeps sending them, and records the refusal once
    port = app.wallet_port
    before = len(list(app.events.get(txs.id)))
    assert port.finish(app, round_id) == 2  # type: ignore[attr-defined]
    assert len(list(app.events.get(txs.id))) == before
    store = ["--db", str(tmp_path / "pokdeng.sqlite")]
    capsys.readouterr()
    assert main(["wallet", "pending", *store, "--json"]) == 1
    assert {(i["tx_id"], i["state"]) for i in json.loads(capsys.readouterr().out)} == {(t, "owed") for t in refused}
    assert main(["verify", round_id, *store]) == 1
    assert main(["verify", "--all", *store]) == 1
    # the reconciliation: differences, not "pending"; each side's totals from its own record
    report = _reconciled(platform, app)
    assert {x.tx_id for x in report.differences} == refused, report.render()  # type: ignore[attr-defined]
    assert not report.pending  # type: ignore[attr-defined]
    assert report.players == sorted(PLAYERS)  # type: ignore[attr-defined]
    assert report.pokdeng_totals == report.platform_totals  # type: ignore[attr-defined]
    # resolved (say the platform's operators returned the money by hand): no longer sent, nothing owed
    for tx_id in sorted(refused):
        assert main(["wallet", "resolve", tx_id, "--reason", "returned by the platform's desk", *store]) == 0
    assert port.finish(app, round_id) == 0  # type: ignore[attr-defined]
    assert main(["wallet", "pending", *store]) == 0
    assert main(["verify", "--all", *store]) == 0


def test_a_credit_unanswered_for_long_is_owed(platform: Platform, remote_app: App) -> None:
    platform.fund(*PLAYERS)
    app = remote_app()
    platform.faults.force("Credit", *["unavailable"] * 9)
    round_id = _round(platform, app)
    rounds = recorded_rounds([app])
    credits = {credit_tx_id(round_id, p) for p in PLAYERS}
    assert {u.tx.tx_id for u in unfinished(rounds) if u.state == "pending"} == credits
    requested = datetime.fromisoformat(rounds[0].txs[credit_tx_id(round_id, "alice")].requested_at)
    late = requested + timedelta(seconds=OWED_AFTER + 60)
    owed = [u for u in unfinished(rounds, now=late) if u.state == "owed"]
    assert {u.tx.tx_id for u in owed} == credits and all("unanswered for" in u.why for u in owed)
    recovery = WalletRecovery(app, app.wallet_port)
    recovery.follow()
    assert recovery.owed.owed(now=requested + timedelta(seconds=1)) == {}
    amounts = sum(u.tx.amount for u in owed)
    assert recovery.owed.owed(now=late) == {"THB": (amounts, 3)}
    # answered at last: nothing owed
    assert app.wallet_port.finish(app, round_id) == 0  # type: ignore[attr-defined]
    recovery.follow()
    assert recovery.owed.owed(now=late) == {}
    assert not unfinished(recorded_rounds([app]), now=late)


def test_the_alert_rules_name_the_metrics_served() -> None:
    yaml = pytest.importorskip("yaml")
    rules = yaml.safe_load((Path(__file__).parents[2] / "deploy/prometheus/pokdeng-wallet.rules.yml").read_text())
    alerts = {r["alert"]: r for g in rules["groups"] for r in g["rules"]}
    assert set(alerts) == {"PokdengWalletMoneyOwed", "PokdengWalletOwedForADay"}
    served = {m.name for m in REGISTRY.collect()}  # (the wallet's families are there, samples or none)
    for rule in alerts.values():
        named = [w for w in rule["expr"].replace("(", " ").replace(")", " ").split() if w.startswith("pokdeng_")]
        assert named and set(named) <= served, rule["expr"]
        assert "max by (currency)" in rule["expr"]  # (every replica reports the same money: never a sum)
