"""``--wallet hub88``: pokdeng on Hub88's supplier wallet API (``wallet.hub88``), against the reference Hub88 wallet.

The adapter is a transport of ``PlatformWallet`` (protocol 2 mapped onto bet, win, rollback and user/balance), so the
RemotePort, the stakes step, the outbox, the recovery and the reconciliation are the ones of pokdeng's own protocol.
Checked: the players' sessions (the game launch's token handed over with ``OpenWalletSession``, sealed in the store,
each transaction sent with its bet's session, a stake or balance without one refused before any call, an expired one
refused by Hub88 and rolled back), the bodies of Hub88's schema, amounts in Hub88's units (exact, from the ISO 4217
exponent), both signatures, the RS_* statuses, idempotency by request and transaction uuid, rollbacks (of a bet never
seen: a tombstone), and under injected faults (duplicates, lost replies, timeouts, refusals, late deliveries, stale
replies), over TLS, and a process restart: no money lost, created or paid twice, and the reconciliation against the
reference's record finds no difference.
"""

from __future__ import annotations

import contextlib
import json
import random
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from pokdeng_core.errors import CurrencyMismatch, InsufficientFunds
from pokdeng_service import audit
from pokdeng_service.api.errors import reason_of, status_for
from pokdeng_service.application import PokdengApp
from pokdeng_service.application.commands import OpenWalletSession
from pokdeng_service.application.config import ConfigError
from pokdeng_service.application.errors import (
    Conflict,
    WalletSessionMissing,
    WalletSessionRejected,
    WalletUnavailable,
)
from pokdeng_service.application.principal import SYSTEM
from pokdeng_service.store.aggregates import command_uuid
from pokdeng_service.store.sessions import sessions_uuid
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
from pokdeng_service.wallet.sessions import PlayerSession

from ..service import play
from .conftest import FUNDS, PLAYERS, Hub88, Hub88Keys
from .faults import FaultPlan, Faults
from .hub88_server import Hub88Ledger, Hub88Server, body_problem, serve
from .pki import make_pki, public_pem, signing_key, write_private

App = Callable[..., PokdengApp]


def _driver(app: PokdengApp, seed: int = 5, prefix: str = "req") -> play.Driver:
    return play.Driver(app, prefix=prefix, chooser=play.Chooser(random.Random(seed)))


def _table(d: play.Driver, table_id: str = "t1", profile: str = "classic") -> None:
    play.open_table(d, table_id, profile, [(i, p) for i, p in enumerate(PLAYERS, 1)])


def _ready(hub88: Hub88, app: PokdengApp) -> play.Driver:
    """The players funded on Hub88, their games launched and sessions handed to pokdeng, a classic table."""
    hub88.fund(*PLAYERS)
    hub88.open_sessions(app, *PLAYERS)
    d = _driver(app)
    _table(d)
    return d


def _store_ok(app: PokdengApp) -> None:
    bad = [v.render() for v in audit.verify_store(app) if not v.ok]
    assert not bad, "\n".join(bad)


def _agree(app: PokdengApp, server: Hub88Server, initial: dict[str, int], since: datetime) -> None:
    """No money lost, created or paid twice: each balance is its start plus pokdeng's record, the reconciliation finds
    no difference and nothing pending, no bet won twice, every body of Hub88's schema, the store verifies."""
    report = reconcile([app], server.ledger, since, datetime.now(tz=UTC) + timedelta(seconds=1))
    assert not report.differences, report.render()
    assert not report.pending and not report.held, report.render()
    for player, start in initial.items():
        assert server.ledger.balance_of(player) == start + report.pokdeng_totals.get(player, 0), player
    wins = Counter(tx.reference for tx in server.ledger.txs.values() if tx.kind == "win")
    assert all(count == 1 for count in wins.values())
    assert server.faults.mismatched == 0
    assert not {"RS_ERROR_WRONG_SYNTAX", "RS_ERROR_WRONG_TYPES"} & set(server.ledger.refused), server.ledger.refused
    _store_ok(app)


def _since() -> datetime:
    return datetime.now(tz=UTC) - timedelta(seconds=1)


# -- units, signatures, the schema ----------------------------------------------------------------


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


def test_the_signature_is_rsa_sha256_of_the_raw_body(hub88_keys: Hub88Keys) -> None:
    body = b'{"user":"alice","amount":1000}'
    signature = sign(hub88_keys.ours, body)
    assert verified([hub88_keys.ours.public_key()], signature, body)
    assert not verified([hub88_keys.ours.public_key()], signature, body + b" ")
    assert not verified([hub88_keys.hub88.public_key()], signature, body)
    assert not verified([hub88_keys.ours.public_key()], None, body)


def _bet_body(token: str, **more: Any) -> dict[str, Any]:
    return {
        "user": "alice", "transaction_uuid": str(uuid.uuid4()), "supplier_transaction_id": "x:bet:1:alice:0",
        "token": token, "round": "x", "request_uuid": str(uuid.uuid4()), "game_code": "pokdeng", "currency": "THB",
        "amount": 1000, **more,
    }  # fmt: skip


def test_an_unsigned_or_wrongly_signed_request_is_refused_and_moves_nothing(hub88: Hub88) -> None:
    hub88.fund("alice")
    raw = json.dumps(_bet_body(hub88.ledger.launch("alice"))).encode()
    for signature in ("", sign(hub88.keys.hub88, raw)):
        request = urllib.request.Request(f"{hub88.url}/transaction/bet", data=raw, method="POST")
        request.add_header(HEADER, signature)
        with urllib.request.urlopen(request, timeout=5) as reply:
            assert json.loads(reply.read())["status"] == "RS_ERROR_INVALID_SIGNATURE"
    assert hub88.ledger.balance_of("alice") == FUNDS


def test_the_reference_holds_every_body_to_hub88_s_schema(hub88: Hub88) -> None:
    """A body missing a field Hub88 requires, or carrying one it does not list, or of another type, is refused before
    any money: so pokdeng's bodies (every test's ``_agree`` checks none was refused so) are Hub88's."""
    hub88.fund("alice")
    token = hub88.ledger.launch("alice")
    good = _bet_body(token)
    assert body_problem("/transaction/bet", good) is None
    assert body_problem("/transaction/bet", {k: v for k, v in good.items() if k != "supplier_transaction_id"})
    assert body_problem("/transaction/bet", {**good, "table": "t1"}) == "RS_ERROR_WRONG_SYNTAX"
    assert body_problem("/transaction/bet", {**good, "amount": "1000"}) == "RS_ERROR_WRONG_TYPES"
    assert body_problem("/transaction/bet", {**good, "request_uuid": "r1"}) == "RS_ERROR_WRONG_TYPES"
    assert body_problem("/user/balance", {"user": "alice", "token": token, "request_uuid": str(uuid.uuid4()),
                                          "game_code": "pokdeng"}) == "RS_ERROR_WRONG_SYNTAX"  # fmt: skip
    rollback = {k: good[k] for k in ("user", "supplier_transaction_id", "token", "round", "request_uuid", "game_code")}
    rollback |= {"transaction_uuid": str(uuid.uuid4()), "reference_transaction_uuid": good["transaction_uuid"]}
    assert body_problem("/transaction/rollback", rollback) is None
    assert body_problem("/transaction/rollback", {**rollback, "amount": 1000}) == "RS_ERROR_WRONG_SYNTAX"
    assert hub88.ledger.handle("/transaction/bet", {**good, "bet": 5})["status"] == "RS_ERROR_WRONG_TYPES"
    assert hub88.ledger.balance_of("alice") == FUNDS


def test_the_configuration(tmp_path: Path, hub88: Hub88) -> None:
    keys = hub88.keys
    config = hub88.config()
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


def test_an_answer_not_signed_by_hub88_is_no_answer(tmp_path: Path, hub88: Hub88) -> None:
    hub88.fund("alice")
    session = PlayerSession(hub88.ledger.launch("alice"))
    other = tmp_path / "other.pem"
    other.write_bytes(public_pem(signing_key("rsa").public_key()))
    wallet: PlatformWallet = hub88.config(hub88_public_keys=str(other), timeout=1.0).platform()
    with pytest.raises(Unanswered, match="not signed"):
        wallet.balance("alice", "THB", session=session)
    assert hub88.config().platform().balance("alice", "THB", session=session) == FUNDS


# -- sessions -------------------------------------------------------------------------------------


def test_a_stake_or_a_balance_without_a_session_is_refused_before_any_call(hub88: Hub88, hub88_app: App) -> None:
    hub88.fund(*PLAYERS)
    app = hub88_app()
    hub88.open_sessions(app, "bob", "carol")
    d = _driver(app)
    _table(d)
    round_id = play.start_round(d, "t1")
    with pytest.raises(WalletSessionMissing) as refused:
        app.place_bet("alice-1", round_id, 1, "alice", 200)
    status = status_for(refused.value)
    assert status.code == 9 and reason_of(status) == "WALLET_SESSION_MISSING"  # FAILED_PRECONDITION
    assert "OpenWalletSession" in refused.value.message
    with pytest.raises(WalletSessionMissing):
        app.bid_for_banker("alice-bid", "t1", "alice", 2)
    assert not hub88.ledger.calls and load_transactions(app, round_id) is None  # nothing recorded, nothing sent
    app.place_bet("bob-1", round_id, 2, "bob", 200)
    hub88.open_sessions(app, "alice")
    app.place_bet("alice-1", round_id, 1, "alice", 200)  # the same request, now with a session
    usd = hub88.ledger.launch("carol", "USD")
    app.open_wallet_session("carol-usd", "carol", usd, "USD")
    with pytest.raises(CurrencyMismatch):  # a USD session at a THB table: refused before any call
        app.place_bet("carol-1", round_id, 3, "carol", 200)
    play.drive_round(d, round_id)
    assert hub88.ledger.calls["/transaction/bet"] == 2


def test_each_transaction_goes_with_its_bet_s_session_also_after_a_restart(hub88: Hub88, hub88_app: App) -> None:
    """Sessions that expire mid-round: a bet with an expired token is refused by Hub88 and rolled back (with that
    token: Hub88 processes a rollback whatever its age); after the games are launched again and the process
    restarted, the wins of the bets placed before go with those bets' (expired) tokens, new bets with the new."""
    since = _since()
    app = hub88_app()
    d = _ready(hub88, app)
    settled = play.start_round(d, "t1")
    app.place_bet("alice-1", settled, 1, "alice", 200)
    app.place_bet("bob-1", settled, 2, "bob", 200)
    first = {launch.user: token for token, launch in hub88.ledger.tokens.items()}
    for token in first.values():
        hub88.ledger.expire(token)
    with pytest.raises(WalletSessionRejected) as rejected:
        app.place_bet("carol-1", settled, 3, "carol", 200)
    assert reason_of(status_for(rejected.value)) == "WALLET_SESSION_REJECTED"
    assert rejected.value.details["status"] == "RS_ERROR_TOKEN_EXPIRED"
    assert hub88.ledger.refused["RS_ERROR_TOKEN_EXPIRED"] == 1 and hub88.ledger.balance_of("carol") == FUNDS
    (tombstone,) = [tx for tx in hub88.ledger.txs.values() if tx.kind == "rollback"]
    assert (tombstone.user, tombstone.token) == ("carol", first["carol"])  # (Hub88 processed it: expired token)
    assert tombstone.status == "RS_ERROR_TRANSACTION_DOES_NOT_EXIST"
    hub88.open_sessions(app, *PLAYERS)  # the games launched again
    later = hub88_app()  # the process after a restart
    later.place_bet("carol-1", settled, 3, "carol", 200)  # the same request: a new debit, with the new session
    play.drive_round(_driver(later, prefix="later"), settled)
    v = _driver(later, prefix="v")
    voided = play.start_round(v, "t1")
    play.seat_bets(v, voided, 300)
    later.void_round("void-1", voided, "a void")
    sent = [tx for tx in hub88.ledger.txs.values() if tx is not tombstone]
    old = {(tx.round, tx.user, tx.kind) for tx in sent if tx.token == first[tx.user]}
    assert old == {(settled, p, kind) for p in ("alice", "bob") for kind in ("bet", "win")}
    assert {(tx.round, tx.kind) for tx in sent if tx.user == "carol"} == {
        (settled, "bet"),
        (settled, "win"),
        (voided, "bet"),
        (voided, "rollback"),
    }
    _agree(later, hub88.server, dict.fromkeys(PLAYERS, FUNDS), since)


def test_the_token_is_sealed_and_in_nothing_exported(hub88: Hub88, hub88_app: App) -> None:
    app = hub88_app()
    d = _ready(hub88, app)
    round_id = play.start_round(d, "t1")
    play.seat_bets(d, round_id, 200)
    play.drive_round(d, round_id)
    tokens = {launch for launch in hub88.ledger.tokens}
    assert len(tokens) == 3
    exported = json.dumps(audit.export_bundle(app, round_id), default=str)
    feed = json.dumps([n.model_dump() for n in app.read_notifications(0, 10_000)], default=str)
    outbox = load_transactions(app, round_id)
    assert outbox is not None and {tx.session for tx in outbox.txs.values()} == {1}
    rows = [*app.events.get(outbox.id), *app.events.get(sessions_uuid("alice"))]
    everything = exported + feed + json.dumps([vars(e) for e in rows], default=str)
    assert not [token for token in tokens if token in everything]
    book = app.load_sessions("alice")
    assert book is not None and book.current is not None and book.current.token(app.vault) in tokens
    handed = OpenWalletSession("alice", "a-guessable-token")
    app.handle(SYSTEM, "again-alice", handed)
    record = app.command_record(command_uuid("again-alice", SYSTEM.scope))
    assert record is not None  # its fingerprint confirms the token only to whoever holds the vault key
    assert record.fingerprint == handed.fingerprint(app.vault.token_key) != handed.fingerprint()


# -- rounds ------------------------------------------------------------------------------------------


def test_rounds_bet_win_and_a_void_rolls_back(hub88: Hub88, hub88_app: App) -> None:
    since = _since()
    app = hub88_app()
    d = _ready(hub88, app)
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
    assert bet.amount == to_hub88(1000, "THB") and bet.uuid == transaction_uuid(bet.supplier_id)
    closed = [tx for tx in hub88.ledger.txs.values() if tx.round_closed]
    assert closed and not hub88.ledger.after_close  # round_closed on each round's last transaction
    _agree(app, hub88.server, dict.fromkeys(PLAYERS, FUNDS), since)


def test_not_enough_money_places_no_bet(hub88: Hub88, hub88_app: App) -> None:
    since = _since()
    hub88.fund("bob", "carol")
    hub88.fund("alice", amount=500)
    app = hub88_app()
    hub88.open_sessions(app, *PLAYERS)
    d = _driver(app)
    _table(d)
    round_id = play.start_round(d, "t1")
    with pytest.raises(InsufficientFunds):
        app.place_bet("alice-1", round_id, 1, "alice", 200)
    assert hub88.ledger.balance_of("alice") == 500
    app.place_bet("bob-1", round_id, 2, "bob", 200)
    play.drive_round(d, round_id)
    _agree(app, hub88.server, {"alice": 500, "bob": FUNDS, "carol": FUNDS}, since)


def test_a_bet_without_a_definite_answer_is_rolled_back_and_arrives_too_late_to_move_money(
    hub88: Hub88, hub88_app: App
) -> None:
    since = _since()
    app = hub88_app()
    d = _ready(hub88, app)
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
    hub88.faults.force("Debit", "duplicate", "stale_reply")
    app.place_bet("carol-1", round_id, 3, "carol", 200)
    assert hub88.ledger.balance_of("carol") == FUNDS - 1000
    play.drive_round(d, round_id)
    _agree(app, hub88.server, dict.fromkeys(PLAYERS, FUNDS), since)


def test_a_win_is_retried_until_hub88_applies_it_once(hub88: Hub88, hub88_app: App) -> None:
    since = _since()
    app = hub88_app()
    d = _ready(hub88, app)
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
    _agree(app, hub88.server, dict.fromkeys(PLAYERS, FUNDS), since)


def test_a_bet_left_open_by_a_restart_is_rolled_back_by_the_recovery(hub88: Hub88, hub88_app: App) -> None:
    from pokdeng_service.application.attempt import Attempt
    from pokdeng_service.application.principal import SYSTEM
    from pokdeng_service.application.round_commands import PlaceBet
    from pokdeng_service.wallet.recovery import WalletRecovery
    from pokdeng_service.wallet.stakes import StakeStep

    since = _since()
    app = hub88_app()
    d = _ready(hub88, app)
    round_id = play.start_round(d, "t1")
    port = app.wallet_port
    assert isinstance(port, RemotePort)
    requested = StakeStep(port)(Attempt(app, SYSTEM, "alice-1"), PlaceBet(round_id, 1, "alice", 200))
    assert requested is not None
    app.save(*requested.saved)
    (tx,) = requested.debits
    session = port.player_session("alice", tx.session)
    port.platform.debit(tx.tx_id, "alice", round_id, "t1", tx.amount, "THB", "bet", session=session)  # we died
    assert hub88.ledger.balance_of("alice") == FUNDS - 1000
    later = hub88_app()  # the process after the restart
    with pytest.raises(Conflict):
        later.place_bet("alice-1", round_id, 1, "alice", 200)
    recovery = WalletRecovery(later, later.wallet_port)
    assert recovery.tick(abandoned_after=0) == 0
    assert hub88.ledger.balance_of("alice") == FUNDS
    later.place_bet("alice-1", round_id, 1, "alice", 200)
    play.drive_round(_driver(later, prefix="later"), round_id)
    _agree(later, hub88.server, dict.fromkeys(PLAYERS, FUNDS), since)


def test_rounds_under_random_faults_move_money_exactly_once(tmp_path: Path, hub88_keys: Hub88Keys) -> None:
    """A seeded plan of faults on every money call, over HTTPS, with real tokens (one expiring mid-way, its game
    launched again), 12 rounds (a void among them), then what is pending finished."""
    since = _since()
    rates = {"drop": 0.03, "timeout": 0.03, "unavailable": 0.05, "lost_reply": 0.05, "duplicate": 0.05,
             "delayed": 0.03, "stale_reply": 0.03}  # fmt: skip
    faults = Faults(FaultPlan(rates=rates, seed=23, hold=0.4, delay=(0.05, 0.3)))
    pki = make_pki(tmp_path / "pki")
    server = serve(
        Hub88Ledger(), hub88_keys.ours.public_key(), hub88_keys.hub88, faults, (pki.server_cert, pki.server_key)
    )
    hub88 = Hub88(server, hub88_keys)
    assert server.url.startswith("https://")
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "pokdeng.sqlite")}
    app = play.make_app(env)
    try:
        attach([app], hub88.config(tls_ca=str(pki.ca)), recovery=False)
        d = _ready(hub88, app)
        d.chooser = play.Chooser(random.Random(11))
        for n in range(12):
            if n == 7:  # alice's session expires, and her game is launched again
                hub88.ledger.expire(next(t for t, s in hub88.ledger.tokens.items() if s.user == "alice"))
                hub88.open_sessions(app, "alice")
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
        assert {tx.token for tx in server.ledger.txs.values() if tx.user == "alice"} == {
            t for t, s in server.ledger.tokens.items() if s.user == "alice"
        }  # both of her sessions used
        print(dict(faults.counts), Counter(tx.kind for tx in server.ledger.txs.values()))
        _agree(app, server, dict.fromkeys(PLAYERS, FUNDS), since)
    finally:
        port = app.wallet_port
        if isinstance(port, RemotePort):
            port.platform.close()
        app.close()
        server.stop()


def test_a_transaction_sent_again_is_answered_as_the_first_and_another_body_is_a_duplicate(hub88: Hub88) -> None:
    hub88.fund("alice")
    token = hub88.ledger.launch("alice")
    bet = _bet_body(token, amount=1_000_000)
    first = hub88.ledger.handle("/transaction/bet", bet)
    again = hub88.ledger.handle("/transaction/bet", {**bet, "request_uuid": str(uuid.uuid4())})  # same body
    assert first["status"] == again["status"] == "RS_OK" and hub88.ledger.balance_of("alice") == FUNDS - 1000
    other = hub88.ledger.handle("/transaction/bet", {**bet, "amount": 2_000_000, "request_uuid": str(uuid.uuid4())})
    assert other["status"] == "RS_ERROR_DUPLICATE_TRANSACTION" and hub88.ledger.balance_of("alice") == FUNDS - 1000
    wallet: PlatformWallet = hub88.config().platform()
    session = PlayerSession(token)
    answer = wallet.debit("d1", "alice", "r2", "t1", 500, "THB", "bet", session=session)
    assert answer.applied and answer.balance == FUNDS - 1500
    win = {k: v for k, v in _bet_body(token).items() if k != "supplier_transaction_id"}
    win |= {"transaction_uuid": transaction_uuid("c1"), "supplier_transaction_id": "c1", "round": "r2",
            "reference_transaction_uuid": transaction_uuid("d1")}  # fmt: skip
    assert hub88.ledger.handle("/transaction/win", win)["status"] == "RS_OK"  # c1 taken with another amount
    refused = wallet.credit("c1", "alice", "r2", "t1", 900, "THB", ["d1"], session=session)
    assert refused.status == "refused" and refused.reason.endswith("RS_ERROR_DUPLICATE_TRANSACTION"), refused
    assert wallet.balance("alice", "THB", session=session) == FUNDS - 1499
    with pytest.raises(Unanswered, match="no wallet session"):  # no token: not sent at all
        wallet.balance("alice", "THB")


def test_reconcile_says_hub88_lists_no_transactions(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    from pokdeng_service.cli.main import main

    url = "https://hub88.invalid/supplier/generic/v2"
    assert main(["wallet", "reconcile", "--wallet", "hub88", "--wallet-url", url]) == 2
    told = capsys.readouterr().err
    assert "lists no transactions" in told and "pokdeng wallet pending" in told and "supplier_transaction_id" in told
    monkeypatch.setenv("POKDENG_WALLET", "hub88")
    assert main(["wallet", "reconcile", "--wallet-url", url]) == 2
