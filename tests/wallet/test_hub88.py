"""``--wallet hub88``: pokdeng on Hub88's supplier wallet API (``wallet.hub88``), against the reference Hub88 wallet.

The adapter is a transport of ``PlatformWallet`` (protocol 2 mapped onto bet, win, rollback and user/balance), so the
RemotePort, the stakes step, the outbox, the recovery and the reconciliation are the ones of pokdeng's own protocol.
Checked: amounts in Hub88's units (exact, from the ISO 4217 exponent), both signatures, the RS_* statuses, idempotency
by request and transaction uuid, rollbacks (of a bet never seen: a tombstone), and under injected faults (duplicates,
lost replies, timeouts, refusals, late deliveries) and a process restart: no money lost, created or paid twice, and the
reconciliation finds no difference.
"""

from __future__ import annotations

import contextlib
import json
import random
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from pokdeng_core.errors import InsufficientFunds
from pokdeng_service import audit
from pokdeng_service.application import PokdengApp
from pokdeng_service.application.config import ConfigError
from pokdeng_service.application.errors import Conflict, WalletUnavailable
from pokdeng_service.wallet.config import WalletConfig
from pokdeng_service.wallet.hub88 import (
    HEADER,
    Hub88Error,
    from_hub88,
    request_uuid,
    sign,
    to_hub88,
    transaction_uuid,
    verified,
)
from pokdeng_service.wallet.outbox import load_transactions
from pokdeng_service.wallet.platform import PlatformWallet, Unanswered
from pokdeng_service.wallet.reconcile import reconcile
from pokdeng_service.wallet.remote import RemotePort, attach

from ..service import play
from .faults import FaultPlan, Faults
from .hub88_server import Hub88Ledger, Hub88Server, serve
from .pki import public_pem, signing_key, write_private

PLAYERS = ("alice", "bob", "carol")
FUNDS = 1_000_000
App = Callable[..., PokdengApp]


@dataclass
class Keys:
    ours: rsa.RSAPrivateKey  # pokdeng's (the supplier's)
    hub88: rsa.RSAPrivateKey
    ours_file: Path
    hub88_public: Path


@pytest.fixture(scope="module")
def rsa_keys() -> tuple[rsa.RSAPrivateKey, rsa.RSAPrivateKey]:
    ours, hub88 = signing_key("rsa"), signing_key("rsa")
    assert isinstance(ours, rsa.RSAPrivateKey) and isinstance(hub88, rsa.RSAPrivateKey)
    return ours, hub88


@pytest.fixture
def keys(tmp_path: Path, rsa_keys: tuple[rsa.RSAPrivateKey, rsa.RSAPrivateKey]) -> Keys:
    ours, hub88 = rsa_keys
    public = tmp_path / "hub88-public.pem"
    public.write_bytes(public_pem(hub88.public_key()))
    return Keys(ours, hub88, write_private(tmp_path / "pokdeng-hub88.key", ours), public)


@pytest.fixture
def hub88(keys: Keys) -> Iterator[Hub88Server]:
    server = serve(Hub88Ledger(), keys.ours.public_key(), keys.hub88)
    try:
        yield server
    finally:
        server.stop()


def _config(url: str, keys: Keys, **more: Any) -> WalletConfig:
    settings: dict[str, Any] = {"timeout": 0.3, "attempts": 3, "grace": 5.0, **more}
    return WalletConfig(
        "hub88", url, hub88_key=str(keys.ours_file), hub88_public_keys=str(keys.hub88_public), **settings
    )


@pytest.fixture
def hub88_app(tmp_path: Path, hub88: Hub88Server, keys: Keys) -> Iterator[App]:
    apps: list[PokdengApp] = []
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "pokdeng.sqlite")}

    def factory(**config: Any) -> PokdengApp:
        app = play.make_app(env)
        attach([app], _config(hub88.url, keys, **config), recovery=False)
        apps.append(app)
        return app

    yield factory
    for app in reversed(apps):
        port = app.wallet_port
        if isinstance(port, RemotePort):
            port.platform.close()
        app.close()


def _fund(hub88: Hub88Server, *players: str, amount: int = FUNDS) -> None:
    for player in players:
        hub88.ledger.open_player(player, amount)


def _driver(app: PokdengApp, seed: int = 5, prefix: str = "req") -> play.Driver:
    return play.Driver(app, prefix=prefix, chooser=play.Chooser(random.Random(seed)))


def _table(d: play.Driver, table_id: str = "t1") -> None:
    play.open_table(d, table_id, "classic", [(i, p) for i, p in enumerate(PLAYERS, 1)])


def _store_ok(app: PokdengApp) -> None:
    bad = [v.render() for v in audit.verify_store(app) if not v.ok]
    assert not bad, "\n".join(bad)


def _agree(app: PokdengApp, hub88: Hub88Server, initial: dict[str, int], since: datetime) -> None:
    """No money lost, created or paid twice: each balance is its start plus pokdeng's record, the reconciliation finds
    no difference and nothing pending, no bet won twice, the store verifies."""
    report = reconcile([app], hub88.ledger, since, datetime.now(tz=UTC) + timedelta(seconds=1))
    assert not report.differences, report.render()
    assert not report.pending and not report.held, report.render()
    for player, start in initial.items():
        assert hub88.ledger.balance_of(player) == start + report.pokdeng_totals.get(player, 0), player
    wins = Counter(tx.reference for tx in hub88.ledger.txs.values() if tx.kind == "win")
    assert all(count == 1 for count in wins.values())
    assert hub88.faults.mismatched == 0
    _store_ok(app)


# -- units and signatures ---------------------------------------------------------------------------


def test_amounts_convert_exactly_with_the_currency_s_exponent() -> None:
    assert to_hub88(356, "USD") == 356000  # $3.56, Hub88's example
    assert to_hub88(98_676, "THB") == 98_676_000
    assert to_hub88(150, "JPY") == 15_000_000  # no minor unit
    assert to_hub88(1_234, "KWD") == 123_400  # three decimals
    assert from_hub88(98_676_000, "THB") == 98_676
    with pytest.raises(Hub88Error):  # a fraction of a satang: refused, never rounded
        from_hub88(98_676_500, "THB")
    with pytest.raises(Hub88Error):
        from_hub88(150, "JPY")


def test_ids_are_uuids_the_same_in_every_process() -> None:
    tx = "t1#3:debit:alice:1"
    assert transaction_uuid(tx) == transaction_uuid(tx) != request_uuid(tx)
    assert len(transaction_uuid(tx)) == 36 and transaction_uuid(tx) != transaction_uuid(f"{tx}:rollback")


def test_the_signature_is_rsa_sha256_of_the_raw_body(keys: Keys) -> None:
    body = b'{"user":"alice","amount":1000}'
    signature = sign(keys.ours, body)
    assert verified([keys.ours.public_key()], signature, body)
    assert not verified([keys.ours.public_key()], signature, body + b" ")
    assert not verified([keys.hub88.public_key()], signature, body)
    assert not verified([keys.ours.public_key()], None, body)


def test_an_unsigned_or_wrongly_signed_request_is_refused_and_moves_nothing(hub88: Hub88Server, keys: Keys) -> None:
    _fund(hub88, "alice")
    body = {"user": "alice", "token": "alice", "request_uuid": "r1", "transaction_uuid": "b1", "round": "x",
            "currency": "THB", "amount": 1000, "game_code": "pokdeng"}  # fmt: skip
    raw = json.dumps(body).encode()
    for signature in ("", sign(keys.hub88, raw)):
        request = urllib.request.Request(f"{hub88.url}/transaction/bet", data=raw, method="POST")
        request.add_header(HEADER, signature)
        with urllib.request.urlopen(request, timeout=5) as reply:
            assert json.loads(reply.read())["status"] == "RS_ERROR_INVALID_SIGNATURE"
    assert hub88.ledger.balance_of("alice") == FUNDS


def test_the_configuration(tmp_path: Path, keys: Keys, hub88: Hub88Server) -> None:
    config = _config(hub88.url, keys)
    assert config.remote and "Hub88" in config.describe()
    with pytest.raises(ConfigError, match="hub88-key"):
        WalletConfig("hub88", hub88.url)
    with pytest.raises(ConfigError, match="URL"):
        WalletConfig("hub88", "127.0.0.1:5000", hub88_key=str(keys.ours_file))
    edwards = write_private(tmp_path / "ed.key", signing_key("ed25519"))
    with pytest.raises(ConfigError, match="RSA"):
        WalletConfig("hub88", hub88.url, hub88_key=str(edwards))
    keys.ours_file.chmod(0o644)  # the secret-file rule
    with pytest.raises(ConfigError):
        WalletConfig("hub88", hub88.url, hub88_key=str(keys.ours_file))
    keys.ours_file.chmod(0o600)
    with pytest.raises(ConfigError, match="not the"):
        WalletConfig("hub88", hub88.url, hub88_key=str(keys.ours_file), sign_key=str(keys.ours_file))


def test_an_answer_not_signed_by_hub88_is_no_answer(tmp_path: Path, hub88: Hub88Server, keys: Keys) -> None:
    _fund(hub88, "alice")
    other = tmp_path / "other.pem"
    other.write_bytes(public_pem(signing_key("rsa").public_key()))
    config = WalletConfig("hub88", hub88.url, hub88_key=str(keys.ours_file), hub88_public_keys=str(other), timeout=1.0)
    wallet: PlatformWallet = config.platform()
    with pytest.raises(Unanswered, match="not signed"):
        wallet.balance("alice", "THB")
    assert _config(hub88.url, keys).platform().balance("alice", "THB") == FUNDS
    assert _config(hub88.url, keys).platform().balance("nobody", "THB") is None  # RS_ERROR_INVALID_TOKEN


# -- rounds ------------------------------------------------------------------------------------------


def test_rounds_bet_win_and_a_void_rolls_back(hub88: Hub88Server, hub88_app: App) -> None:
    since = datetime.now(tz=UTC) - timedelta(seconds=1)
    _fund(hub88, *PLAYERS)
    app = hub88_app()
    d = _driver(app)
    _table(d)
    for n in range(4):
        round_id = play.start_round(d, "t1")
        play.seat_bets(d, round_id, 200)
        if n == 2:
            d.call("void_round", round_id, "a void")
        else:
            play.drive_round(d, round_id)
    kinds = Counter(tx.kind for tx in hub88.ledger.txs.values())
    assert kinds["bet"] == 12 and kinds["rollback"] == 3 and kinds["win"] >= 9
    bet = next(tx for tx in hub88.ledger.txs.values() if tx.kind == "bet")
    assert bet.amount == to_hub88(1000, "THB") and bet.supplier_id.endswith(bet.supplier_id.rpartition(":")[2])
    assert bet.uuid == transaction_uuid(bet.supplier_id)
    closed = [tx for tx in hub88.ledger.txs.values() if tx.round_closed]
    assert closed and not hub88.ledger.after_close  # round_closed on each round's last transaction
    _agree(app, hub88, dict.fromkeys(PLAYERS, FUNDS), since)


def test_not_enough_money_places_no_bet(hub88: Hub88Server, hub88_app: App) -> None:
    since = datetime.now(tz=UTC) - timedelta(seconds=1)
    _fund(hub88, "bob", "carol")
    _fund(hub88, "alice", amount=500)
    app = hub88_app()
    d = _driver(app)
    _table(d)
    round_id = play.start_round(d, "t1")
    with pytest.raises(InsufficientFunds):
        app.place_bet("alice-1", round_id, 1, "alice", 200)
    assert hub88.ledger.balance_of("alice") == 500
    app.place_bet("bob-1", round_id, 2, "bob", 200)
    play.drive_round(d, round_id)
    _agree(app, hub88, {"alice": 500, "bob": FUNDS, "carol": FUNDS}, since)


def test_a_bet_without_a_definite_answer_is_rolled_back_and_arrives_too_late_to_move_money(
    hub88: Hub88Server, hub88_app: App
) -> None:
    since = datetime.now(tz=UTC) - timedelta(seconds=1)
    _fund(hub88, *PLAYERS)
    app = hub88_app()
    d = _driver(app)
    _table(d)
    round_id = play.start_round(d, "t1")
    hub88.faults.force("Debit", "lost_reply", "timeout", "unavailable")  # applied by the first, never heard
    with pytest.raises(WalletUnavailable):
        app.place_bet("alice-1", round_id, 1, "alice", 200)
    assert hub88.ledger.balance_of("alice") == FUNDS
    hub88.faults.force("Debit", "delayed", "delayed", "delayed")  # every attempt arrives after the rollback
    with pytest.raises(WalletUnavailable):
        app.place_bet("bob-1", round_id, 2, "bob", 200)
    hub88.faults.wait_delayed()
    assert hub88.ledger.balance_of("bob") == FUNDS
    statuses = {tx.supplier_id: tx.status for tx in hub88.ledger.txs.values() if tx.kind == "rollback"}
    assert sorted(statuses.values()) == ["RS_ERROR_TRANSACTION_DOES_NOT_EXIST", "RS_OK"]  # bob's: a tombstone
    hub88.faults.force("Debit", "duplicate")
    app.place_bet("carol-1", round_id, 3, "carol", 200)
    assert hub88.ledger.balance_of("carol") == FUNDS - 1000
    play.drive_round(d, round_id)
    _agree(app, hub88, dict.fromkeys(PLAYERS, FUNDS), since)


def test_a_win_is_retried_until_hub88_applies_it_once(hub88: Hub88Server, hub88_app: App) -> None:
    since = datetime.now(tz=UTC) - timedelta(seconds=1)
    _fund(hub88, *PLAYERS)
    app = hub88_app()
    d = _driver(app)
    _table(d)
    round_id = play.start_round(d, "t1")
    play.seat_bets(d, round_id, 300)
    hub88.faults.force("Credit", "lost_reply", *["unavailable"] * 30)
    play.drive_round(d, round_id)
    txs = load_transactions(app, round_id)
    assert txs is not None and txs.pending()
    hub88.faults._forced.clear()
    hub88.faults.force("Credit", "duplicate", "timeout")
    port = app.wallet_port
    assert isinstance(port, RemotePort)
    assert port.finish(app, round_id) == 0
    _agree(app, hub88, dict.fromkeys(PLAYERS, FUNDS), since)


def test_a_bet_left_open_by_a_restart_is_rolled_back_by_the_recovery(hub88: Hub88Server, hub88_app: App) -> None:
    from pokdeng_service.application.attempt import Attempt
    from pokdeng_service.application.commands import PlaceBet
    from pokdeng_service.application.principal import SYSTEM
    from pokdeng_service.wallet.recovery import WalletRecovery
    from pokdeng_service.wallet.stakes import StakeStep

    since = datetime.now(tz=UTC) - timedelta(seconds=1)
    _fund(hub88, *PLAYERS)
    app = hub88_app()
    d = _driver(app)
    _table(d)
    round_id = play.start_round(d, "t1")
    port = app.wallet_port
    assert isinstance(port, RemotePort)
    requested = StakeStep(port)(Attempt(app, SYSTEM, "alice-1"), PlaceBet(round_id, 1, "alice", 200))
    assert requested is not None
    app.save(*requested.saved)
    (tx,) = requested.debits
    port.platform.debit(tx.tx_id, "alice", round_id, "t1", tx.amount, "THB", "bet")  # Hub88 took it; we died
    assert hub88.ledger.balance_of("alice") == FUNDS - 1000
    later = hub88_app()  # the process after the restart
    with pytest.raises(Conflict):
        later.place_bet("alice-1", round_id, 1, "alice", 200)
    recovery = WalletRecovery(later, later.wallet_port)
    assert recovery.tick(abandoned_after=0) == 0
    assert hub88.ledger.balance_of("alice") == FUNDS
    later.place_bet("alice-1", round_id, 1, "alice", 200)
    play.drive_round(_driver(later, prefix="later"), round_id)
    _agree(later, hub88, dict.fromkeys(PLAYERS, FUNDS), since)


def test_rounds_under_random_faults_move_money_exactly_once(tmp_path: Path, keys: Keys) -> None:
    """A seeded plan of faults on every money call, 12 rounds (a void among them), then what is pending finished."""
    since = datetime.now(tz=UTC) - timedelta(seconds=1)
    rates = {"drop": 0.03, "timeout": 0.03, "unavailable": 0.05, "lost_reply": 0.05, "duplicate": 0.05, "delayed": 0.03}
    faults = Faults(FaultPlan(rates=rates, seed=23, hold=0.4, delay=(0.05, 0.3)))
    server = serve(Hub88Ledger(), keys.ours.public_key(), keys.hub88, faults)
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "pokdeng.sqlite")}
    app = play.make_app(env)
    try:
        attach([app], _config(server.url, keys), recovery=False)
        _fund(server, *PLAYERS)
        d = _driver(app, seed=11)
        _table(d)
        for n in range(12):
            try:
                round_id = play.start_round(d, "t1")
                for seat, player in enumerate(PLAYERS, 1):
                    with contextlib.suppress(WalletUnavailable):  # (rolled back: the seat sits this round out)
                        app.place_bet(f"{player}-{n}", round_id, seat, player, 100 + 50 * seat)
                if n == 5:
                    d.call("void_round", round_id, "a void")
                else:
                    play.drive_round(d, round_id)
            except WalletUnavailable:
                continue
        faults.enabled = False
        faults.wait_delayed()
        port = app.wallet_port
        assert isinstance(port, RemotePort)
        from pokdeng_service.wallet.recovery import WalletRecovery

        recovery = WalletRecovery(app, port)
        for _ in range(10):
            if recovery.tick(abandoned_after=0) == 0:
                break
        assert recovery.tick(abandoned_after=0) == 0
        assert sum(faults.counts.values()) >= 5, faults.counts
        print(dict(faults.counts), Counter(tx.kind for tx in server.ledger.txs.values()))
        _agree(app, server, dict.fromkeys(PLAYERS, FUNDS), since)
    finally:
        port = app.wallet_port
        if isinstance(port, RemotePort):
            port.platform.close()
        app.close()
        server.stop()


def test_a_transaction_sent_again_is_answered_as_the_first_and_another_body_is_a_duplicate(
    hub88: Hub88Server, keys: Keys
) -> None:
    _fund(hub88, "alice")
    bet = {"user": "alice", "token": "alice", "transaction_uuid": "b1", "round": "r", "currency": "THB",
           "amount": 1_000_000, "game_code": "pokdeng"}  # fmt: skip
    first = hub88.ledger.handle("/transaction/bet", {**bet, "request_uuid": "q1"})
    again = hub88.ledger.handle("/transaction/bet", {**bet, "request_uuid": "q2"})  # another request, same body
    assert first["status"] == again["status"] == "RS_OK" and hub88.ledger.balance_of("alice") == FUNDS - 1000
    other = hub88.ledger.handle("/transaction/bet", {**bet, "amount": 2_000_000, "request_uuid": "q3"})
    assert other["status"] == "RS_ERROR_DUPLICATE_TRANSACTION" and hub88.ledger.balance_of("alice") == FUNDS - 1000
    wallet: PlatformWallet = _config(hub88.url, keys).platform()
    answer = wallet.debit("d1", "alice", "r2", "t1", 500, "THB", "bet")
    assert answer.applied and answer.balance == FUNDS - 1500
    win = {"user": "alice", "token": "alice", "transaction_uuid": transaction_uuid("c1"), "round": "r2",
           "currency": "THB", "amount": 1000, "game_code": "pokdeng", "request_uuid": "q4",
           "reference_transaction_uuid": transaction_uuid("d1")}  # fmt: skip
    assert hub88.ledger.handle("/transaction/win", win)["status"] == "RS_OK"  # c1 taken with another amount
    refused = wallet.credit("c1", "alice", "r2", "t1", 900, "THB", ["d1"])
    assert refused.status == "refused" and refused.reason.endswith("RS_ERROR_DUPLICATE_TRANSACTION"), refused
    assert wallet.balance("alice", "THB") == FUNDS - 1499


def test_serve_flags_choose_hub88_and_a_deployment_plays_on_it(tmp_path: Path, hub88: Hub88Server, keys: Keys) -> None:
    import argparse
    import time

    from pokdeng_service.application.config import StoreConfig
    from pokdeng_service.cli.main import build_parser
    from pokdeng_service.cli.settings import ServeSettings
    from pokdeng_service.compose import Deployment

    flags = ["--wallet", "hub88", "--wallet-url", hub88.url, "--wallet-hub88-key", str(keys.ours_file),
             "--wallet-hub88-public-keys", str(keys.hub88_public), "--wallet-timeout", "0.3"]  # fmt: skip
    args: argparse.Namespace = build_parser().parse_args(["serve", *flags])
    wallet = ServeSettings.from_args(args).wallet_config()
    assert wallet == WalletConfig(
        "hub88", hub88.url, 0.3, hub88_key=str(keys.ours_file), hub88_public_keys=str(keys.hub88_public)
    )
    _fund(hub88, *PLAYERS)
    config = StoreConfig(kind="sqlite", sqlite_path=str(tmp_path / "served.sqlite"), vault_key=play.VAULT_KEY)
    served = WalletConfig(**{**wallet.__dict__, "recovery_interval": 0.05})
    deployment = Deployment.open(config, clocks=False, read_models=False, wallet=served)
    try:
        deployment.start()
        (app,) = deployment.service.apps
        assert isinstance(app.wallet_port, RemotePort) and deployment.recoveries[0].running
        d = play.Driver(app)
        play.open_table(d, "t1", "kingmaker", [(i, p) for i, p in enumerate(PLAYERS, 1)])
        round_id = play.start_round(d, "t1")
        play.seat_bets(d, round_id, 300)
        hub88.faults.force("Credit", "unavailable", "unavailable", "unavailable", "unavailable")
        play.drive_round(d, round_id)
        for _ in range(100):
            txs = load_transactions(app, round_id)
            if txs is not None and not txs.pending():
                break
            time.sleep(0.05)
        assert txs is not None and not txs.pending()
        assert sum(hub88.ledger.balances().values()) == 3 * FUNDS - app.get_table("t1").house_net
    finally:
        deployment.close()


def test_reconcile_says_hub88_lists_no_transactions(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    from pokdeng_service.cli.main import main

    monkeypatch.setenv("POKDENG_WALLET", "hub88")
    assert main(["wallet", "reconcile", "--wallet-url", "https://hub88.invalid/supplier/generic/v2"]) == 2
    assert "lists no transactions" in capsys.readouterr().err
