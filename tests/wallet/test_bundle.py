"""A platform-wallet round's bundle carries its transactions (``platform_transactions``, docs/audit.md), and its money
is checked offline: the ids the deterministic ones, the accepted debits the stakes, the credits the settlement's, the
rollbacks the void's, nothing open. ``pokdeng verify ROUND`` checks the same against the store: an outbox that
disagrees with its settlement fails it.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pokdeng_core.errors import DomainError
from pokdeng_service import audit
from pokdeng_service.application import PokdengApp
from pokdeng_service.audit.export import for_recipient
from pokdeng_service.audit.platform_txs import credit_id, debit_id
from pokdeng_service.cli.main import main
from pokdeng_service.store import codec
from pokdeng_service.wallet.outbox import credit_tx_id, debit_tx_id, load_transactions

from ..cli.pages import worked_round
from ..service import play
from .conftest import PLAYERS, Platform

App = Callable[..., PokdengApp]
EXIT_OK, EXIT_FAILED = 0, 1
WR: Any = worked_round()  # the docs' reference verifier (docs/examples/worked_round.py)


def _played(platform: Platform, remote_app: App) -> tuple[PokdengApp, str, str]:
    """An app on the platform's wallets with a settled round (carol's first debit refused, its retry attempt 1)
    and a voided one."""
    platform.fund("alice", "bob")
    platform.fund("carol", amount=250)
    app = remote_app()
    d = play.Driver(app, chooser=play.Chooser(random.Random(3)))
    play.open_table(d, "t1", "classic", [(i, p) for i, p in enumerate(PLAYERS, 1)])
    settled = play.start_round(d, "t1")
    with pytest.raises(DomainError):
        app.place_bet("carol-1", settled, 3, "carol", 300)
    platform.ledger.db.execute("UPDATE players SET balance = 5000 WHERE player = 'carol'")
    app.place_bet("carol-1", settled, 3, "carol", 300)
    app.place_bet("alice-1", settled, 1, "alice", 200)
    play.drive_round(d, settled)
    voided = play.start_round(d, "t1")
    play.seat_bets(d, voided, 100)
    d.call("void_round", voided, "a card fell face up")
    return app, settled, voided


def _redigest(bundle: dict[str, Any]) -> bytes:
    body = {k: v for k, v in bundle.items() if k != "bundle_digest"}
    bundle["bundle_digest"] = hashlib.sha256(codec.canonical_bytes(body)).hexdigest()
    return codec.canonical_bytes(bundle) + b"\n"


def test_the_tx_id_formulas_are_the_outboxs() -> None:
    assert debit_id("t#1", "cover", 2, "bob", 1) == debit_tx_id("t#1", "cover", 2, "bob", 1) == "t#1:cover:2:bob:1"
    assert credit_id("t#1", "ann") == credit_tx_id("t#1", "ann") == "t#1:credit:ann"


def test_a_platform_rounds_bundle_carries_its_transactions(platform: Platform, remote_app: App) -> None:
    app, settled, voided = _played(platform, remote_app)
    bundle = audit.export_bundle(app, settled)
    txs = bundle["platform_transactions"]
    outbox = load_transactions(app, settled)
    assert outbox is not None and [t["tx_id"] for t in txs] == list(outbox.txs)
    assert [t["tx_id"] for t in txs if t["player"] == "carol"][:2] == [
        f"{settled}:bet:3:carol:0",
        f"{settled}:bet:3:carol:1",
    ]
    assert {t["currency"] for t in txs} == {"THB"}
    assert all(b["before"] is None and b["after"] is None for b in bundle["balances"])
    verdict = audit.verify_bundle(audit.bundle_bytes(bundle))
    assert verdict.status == "UNANCHORED", verdict.render()
    assert any(c.name == "platform transactions" and c.ok for c in verdict.checks)
    mine = for_recipient(bundle, "player:carol")
    assert {t["player"] for t in mine["platform_transactions"]} == {"carol"}
    assert audit.verify_bundle(audit.bundle_bytes(mine)).status == "UNANCHORED"
    for made in (bundle, mine):
        documented = WR.verify(audit.bundle_bytes(made))
        assert documented.status == "UNANCHORED", documented.render()
        assert any(c[0] == "platform transactions" and c[1] for c in documented.checks), documented.render()
    void = audit.export_bundle(app, voided)
    assert {t["status"] for t in void["platform_transactions"]} == {"rolled_back"}
    for made_for in ("operator", "auditor", "player:alice"):
        made = void if made_for == "operator" else for_recipient(void, made_for)
        assert audit.verify_bundle(audit.bundle_bytes(made)).status == "UNANCHORED", made_for
        assert WR.verify(audit.bundle_bytes(made)).status == "UNANCHORED", made_for


EDITS: list[tuple[str, Callable[[list[dict[str, Any]]], object]]] = [
    ("a debit's amount", lambda txs: txs[-2].update(amount=txs[-2]["amount"] + 1)),
    ("a credit's amount", lambda txs: next(t for t in txs if t["kind"] == "credit").update(amount=0)),
    ("a credit left open", lambda txs: next(t for t in txs if t["kind"] == "credit").update(status="requested")),
    ("a debit's id", lambda txs: txs[0].update(tx_id=txs[0]["tx_id"][:-1] + "7")),
    ("an attempt renumbered", lambda txs: txs[1].update(tx_id=txs[1]["tx_id"][:-1] + "0")),
    ("a refused debit accepted", lambda txs: txs[0].update(status="accepted", accepted=True)),
    ("a credit dropped", lambda txs: txs.pop()),
    ("a debit dropped", lambda txs: txs.pop(1)),
    ("a currency", lambda txs: txs[0].update(currency="USD")),
    ("a credit's debits", lambda txs: next(t for t in txs if t["kind"] == "credit").update(debits=[])),
    ("a player", lambda txs: txs[-1].update(player="mallory")),
    ("a kind", lambda txs: txs[-1].update(kind="debit")),
    ("a rollback", lambda txs: txs[-2].update(status="rolled_back")),
    ("a resolution without one", lambda txs: txs[-1].update(status="refused")),
]


@pytest.mark.parametrize("edit", [e[0] for e in EDITS])
def test_an_edit_of_the_transactions_fails_the_bundle(platform: Platform, remote_app: App, edit: str) -> None:
    app, settled, _voided = _played(platform, remote_app)
    bundle = json.loads(audit.bundle_bytes(audit.export_bundle(app, settled)))
    dict(EDITS)[edit](bundle["platform_transactions"])
    raw = _redigest(bundle)
    verdict = audit.verify_bundle(raw)
    assert verdict.status == "FAIL", (edit, verdict.render())
    assert WR.verify(raw).status == "FAIL", (edit, WR.verify(raw).render())
    assert verdict.first_difference.startswith("platform transactions: "), verdict.render()


def test_a_players_bundle_holds_its_own_transactions_alone(platform: Platform, remote_app: App) -> None:
    app, settled, voided = _played(platform, remote_app)
    for round_id in (settled, voided):
        bundle = audit.export_bundle(app, round_id)
        mine = for_recipient(bundle, "player:alice")
        mine["platform_transactions"].append(next(t for t in bundle["platform_transactions"] if t["player"] == "carol"))
        assert audit.verify_bundle(_redigest(mine)).status == WR.verify(_redigest(mine)).status == "FAIL"
        stripped = for_recipient(bundle, "auditor")
        stripped["platform_transactions"] = stripped["platform_transactions"][:-1]
        assert audit.verify_bundle(_redigest(stripped)).status == WR.verify(_redigest(stripped)).status == "FAIL"


def test_an_outbox_that_disagrees_with_the_settlement_fails_verify_round(
    platform: Platform, remote_app: App, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A debit accepted after the round settled (its facts follow and chain: only the round's record shows it): the
    round's ``platform wallet`` check fails ``pokdeng verify ROUND``, and its bundle fails offline too."""
    app, settled, _voided = _played(platform, remote_app)
    db = str(tmp_path / "pokdeng.sqlite")
    assert main(["verify", settled, "--db", db]) == EXIT_OK
    outbox = load_transactions(app, settled)
    assert outbox is not None
    tx_id = debit_tx_id(settled, "bet", 2, "bob", 5)
    outbox.request_debit(tx_id, "bob", 700, "bet", 2, "bob", "forged-1")
    outbox.accept_debit(tx_id, 0, "ref", "forged-1")
    app.save(outbox)
    capsys.readouterr()
    assert main(["verify", settled, "--db", db]) == EXIT_FAILED
    out = capsys.readouterr().out
    assert "BAD  platform wallet: the accepted debits" in out, out
    raw = audit.bundle_bytes(audit.export_bundle(app, settled))
    assert WR.verify(raw).status == "FAIL"
    verdict = audit.verify_bundle(raw)
    assert verdict.status == "FAIL" and "platform transactions" in verdict.first_difference, verdict.render()


def test_a_round_with_a_pending_transaction_is_not_exported(platform: Platform, remote_app: App) -> None:
    platform.fund(*PLAYERS)
    app = remote_app()
    d = play.Driver(app, chooser=play.Chooser(random.Random(2)))
    play.open_table(d, "t1", "classic", [(i, p) for i, p in enumerate(PLAYERS, 1)])
    round_id = play.start_round(d, "t1")
    play.seat_bets(d, round_id, 100)
    platform.faults.force("Credit", *["unavailable"] * 9)
    play.drive_round(d, round_id)
    with pytest.raises(DomainError, match="still pending"):
        audit.export_bundle(app, round_id)


@pytest.mark.node
def test_the_page_checks_the_transactions_too(platform: Platform, remote_app: App) -> None:
    """The pages' verifier (verify-*.js, in Node) on the same bundles: the genuine ones UNANCHORED with their
    ``platform transactions`` check, every edit of the transactions FAIL."""
    import base64
    import shutil
    import subprocess

    from ..needs import unavailable
    from ..test_page_verifier import RUNNER, SCRIPTS, STATIC

    node = shutil.which("node")
    if node is None:
        unavailable("Node.js is not installed (node)")
    app, settled, voided = _played(platform, remote_app)
    genuine = []
    for round_id in (settled, voided):
        bundle = audit.export_bundle(app, round_id)
        genuine += [audit.bundle_bytes(bundle), audit.bundle_bytes(for_recipient(bundle, "player:alice"))]
    edited = []
    for _name, change in EDITS:
        bundle = json.loads(audit.bundle_bytes(audit.export_bundle(app, settled)))
        change(bundle["platform_transactions"])
        edited.append(_redigest(bundle))
    request = {
        "scripts": [str(STATIC / name) for name in SCRIPTS],
        "cases": [{"bundle": base64.b64encode(raw).decode(), "keys": ""} for raw in genuine + edited],
    }
    done = subprocess.run([node, "-e", RUNNER], input=json.dumps(request), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    verdicts = json.loads(done.stdout)["verdicts"]
    for verdict in verdicts[: len(genuine)]:
        assert verdict["status"] == "UNANCHORED", verdict["rendered"]
        assert "ok   platform transactions" in verdict["rendered"] or "platform transactions:" in verdict["rendered"]
    for (name, _change), verdict in zip(EDITS, verdicts[len(genuine) :], strict=True):
        assert verdict["status"] == "FAIL", (name, verdict["rendered"])
        assert "platform transactions" in verdict["rendered"], (name, verdict["rendered"])
