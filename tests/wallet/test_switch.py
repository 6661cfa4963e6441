"""Switching a deployment between the platform's wallets and the store's with a round open loses no money.

A round's stakes are settled, voided and released only through the adapter that took them: a round
whose stakes the platform's wallet debited is refused by a server on the internal wallets
(FAILED_PRECONDITION ``WALLET_ADAPTER_MISMATCH``), also when the store's wallets of its players
exist, and finished correctly (credits or rollbacks on the platform) once served on the platform's
wallets again; ``pokdeng serve --wallet internal`` refuses to start while such rounds are open;
``pokdeng wallet pending`` lists the debits they hold and exits 1; ``reconcile`` lists them as held.
A round opened on the internal wallets is finished on them by a server on the platform's wallets.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from pokdeng_service import audit
from pokdeng_service.api.errors import reason_of, status_for
from pokdeng_service.application import PokdengApp
from pokdeng_service.application.config import ConfigError, StoreConfig
from pokdeng_service.application.errors import WalletAdapterMismatch
from pokdeng_service.application.wallet_port import INTERNAL, InternalPort
from pokdeng_service.cli.main import main
from pokdeng_service.compose import Deployment
from pokdeng_service.wallet.config import WalletConfig
from pokdeng_service.wallet.outbox import load_transactions
from pokdeng_service.wallet.platform import PlatformWallet, transport_for
from pokdeng_service.wallet.reconcile import reconcile
from pokdeng_service.wallet.switch import check_switch
from pokdeng_testkit.keys import VAULT_KEY

from ..service import play
from .conftest import FUNDS, Platform

App = Callable[..., PokdengApp]
PAIR = ("alice", "bob")
STAKE = 1000  # a classic stake reserves 5x: 5000 debited from each


@pytest.fixture
def internal_app(tmp_path: Path) -> Iterator[Callable[[], PokdengApp]]:
    """Apps on the store ``remote_app`` uses, on the store's own wallets (a server restarted without
    ``--wallet remote``)."""
    apps: list[PokdengApp] = []
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "pokdeng.sqlite")}

    def factory() -> PokdengApp:
        app = play.make_app(env)
        apps.append(app)
        return app

    yield factory
    for app in reversed(apps):
        app.close()


def _open_on_the_platform(platform: Platform, app: PokdengApp) -> tuple[play.Driver, str]:
    """A classic table, alice and bob seated, a round open with a stake each debited on the platform; the store's
    own wallets of alice and bob opened and funded too (WalletService works on a server of either adapter)."""
    platform.fund(*PAIR)
    d = play.Driver(app, prefix="remote", chooser=play.Chooser(random.Random(5)))
    play.open_table(d, "t1", "classic", list(enumerate(PAIR, 1)))
    play.open_wallets(d, PAIR, 100_000)
    round_id = play.start_round(d, "t1")
    play.seat_bets(d, round_id, STAKE)
    assert platform.ledger.balances() == {p: FUNDS - 5 * STAKE for p in PAIR}
    return d, round_id


def _internal_wallets(app: PokdengApp) -> dict[str, tuple[int, int]]:
    return {p: (app.get_wallet(p).balance, app.get_wallet(p).reserved) for p in PAIR}


def _nets(app: PokdengApp, round_id: str) -> dict[str, int]:
    (settled,) = play.events_of(app.get_round(round_id), "round_settled")
    return {player: net for player, _reserved, net in settled["wallets"]}


def test_a_round_of_the_platform_s_wallet_is_never_settled_on_the_store_s(
    platform: Platform, remote_app: App, internal_app: Callable[[], PokdengApp]
) -> None:
    remote = remote_app()
    _d, round_id = _open_on_the_platform(platform, remote)
    internal = internal_app()  # the restart without --wallet remote
    assert internal.wallet_port is INTERNAL
    before = _internal_wallets(internal)
    d = play.Driver(internal, prefix="internal", chooser=play.Chooser(random.Random(5)))
    with pytest.raises(WalletAdapterMismatch) as refused:
        play.drive_round(d, round_id)  # the deal, the turns: the settlement is refused
    assert refused.value.details["round_id"] == round_id and "--wallet remote" in refused.value.message
    status = status_for(refused.value)
    assert status.code == 9 and reason_of(status) == "WALLET_ADAPTER_MISMATCH"  # FAILED_PRECONDITION
    with pytest.raises(WalletAdapterMismatch):
        internal.void_round("void-internal", round_id, "switched")
    with pytest.raises(WalletAdapterMismatch):  # no stake of another seat on the store's wallets either
        internal.place_bet("bet-internal", round_id, 3, "carol", 100)
    assert internal.round_state(round_id).phase.value != "closed"
    assert _internal_wallets(internal) == before == {p: (100_000, 0) for p in PAIR}
    assert platform.ledger.balances() == {p: FUNDS - 5 * STAKE for p in PAIR}
    # back on the platform's wallets: the round is finished there, its credits reach the platform
    again = remote_app()
    view = play.drive_round(play.Driver(again, prefix="again", chooser=play.Chooser(random.Random(5))), round_id)
    assert view.phase == "closed"
    nets = _nets(again, round_id)
    assert platform.ledger.balances() == {p: FUNDS + nets[p] for p in PAIR}
    txs = load_transactions(again, round_id)
    assert txs is not None and not txs.pending()
    assert _internal_wallets(again) == before
    bad = [v.render() for v in audit.verify_store(again) if not v.ok]
    assert not bad, "\n".join(bad)


def test_a_void_of_the_platform_s_round_rolls_its_debits_back_once_served_on_the_platform(
    platform: Platform, remote_app: App, internal_app: Callable[[], PokdengApp]
) -> None:
    remote = remote_app()
    _d, round_id = _open_on_the_platform(platform, remote)
    internal = internal_app()
    with pytest.raises(WalletAdapterMismatch):
        internal.void_round("void-1", round_id, "switched")
    remote.void_round("void-1", round_id, "switched")  # the same request id, on the platform's wallets
    assert platform.ledger.balances() == {p: FUNDS for p in PAIR}
    assert _internal_wallets(internal) == {p: (100_000, 0) for p in PAIR}


def test_the_store_s_wallets_are_never_paid_for_a_round_they_reserved_nothing_for(
    platform: Platform, remote_app: App, internal_app: Callable[[], PokdengApp], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second guard: even with the outbox not looked at, a wallet that holds no reservation of the round is
    neither settled nor released."""
    remote = remote_app()
    _d, round_id = _open_on_the_platform(platform, remote)
    monkeypatch.setattr("pokdeng_service.application.wallet_port.refuse_platform_round", lambda attempt, round_id: None)
    internal = internal_app()
    d = play.Driver(internal, prefix="internal", chooser=play.Chooser(random.Random(5)))
    with pytest.raises(WalletAdapterMismatch, match="holds 0 reserved"):
        play.drive_round(d, round_id)
    with pytest.raises(WalletAdapterMismatch, match="holds 0 reserved"):
        internal.void_round("void-1", round_id, "switched")
    assert _internal_wallets(internal) == {p: (100_000, 0) for p in PAIR}


def test_a_round_of_the_store_s_wallets_is_finished_on_them_by_a_server_on_the_platform_s(
    platform: Platform, remote_app: App, internal_app: Callable[[], PokdengApp]
) -> None:
    platform.fund(*PAIR, "carol")
    internal = internal_app()
    d = play.Driver(internal, prefix="internal", chooser=play.Chooser(random.Random(5)))
    play.open_table(d, "t1", "classic", list(enumerate(PAIR, 1)))
    play.open_wallets(d, PAIR, 100_000)
    round_id = play.start_round(d, "t1")
    d.call("place_bet", round_id, 1, "alice", STAKE)
    remote = remote_app()  # the switch to the platform's wallets with the round open
    r = play.Driver(remote, prefix="remote", chooser=play.Chooser(random.Random(5)))
    r.call("place_bet", round_id, 2, "bob", STAKE)  # on the store's wallets: the round's stakes are there
    play.drive_round(r, round_id)
    nets = _nets(remote, round_id)
    assert _internal_wallets(remote) == {p: (100_000 + nets[p], 0) for p in PAIR}
    assert platform.ledger.balances() == {p: FUNDS for p in (*PAIR, "carol")}
    assert load_transactions(remote, round_id) is None
    bad = [v.render() for v in audit.verify_store(remote) if not v.ok]
    assert not bad, "\n".join(bad)


def test_pending_lists_the_debits_open_rounds_hold_and_exits_1(
    platform: Platform, remote_app: App, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    remote = remote_app()
    d, round_id = _open_on_the_platform(platform, remote)
    store = str(tmp_path / "pokdeng.sqlite")
    capsys.readouterr()
    assert main(["wallet", "pending", "--db", store]) == 1
    out = capsys.readouterr().out
    assert f"held by open round {round_id}" in out and "2 debits held by 1 open rounds" in out, out
    assert main(["wallet", "pending", "--db", store, "--json"]) == 1
    listed = json.loads(capsys.readouterr().out)
    assert {(i["player"], i["amount"], i["state"]) for i in listed} == {(p, 5 * STAKE, "held") for p in PAIR}
    wallet = PlatformWallet.connect(platform.url)
    try:
        now = datetime.now(tz=UTC)
        report = reconcile([remote], wallet, now - timedelta(minutes=5), now + timedelta(minutes=5))
        assert report.ok and {h.player for h in report.held} == set(PAIR), report.render()
        assert "2 held by open rounds" in report.render()
        play.drive_round(d, round_id)
        assert main(["wallet", "pending", "--db", store]) == 0
        assert "0 pending of 4 transactions" in capsys.readouterr().out
        report = reconcile([remote], wallet, now - timedelta(minutes=5), now + timedelta(minutes=5))
        assert report.ok and not report.held and not report.pending, report.render()
    finally:
        wallet.close()


class _Unguarded(InternalPort):
    """The internal adapter as it was: it books a round of the platform's wallet on the store's wallets."""

    def stake_funds(self, attempt: Any, round_id: str) -> int | None:
        return None

    def settle(self, attempt: Any, record: Any, player: str, reserved: int, net: int) -> None:
        attempt.wallet(player).settle(record.round_id, reserved, net)

    def release(self, attempt: Any, record: Any, player: str, amount: int, reason: str) -> None:
        attempt.wallet(player).release(record.round_id, amount, reason)


def test_debits_stranded_by_a_round_settled_elsewhere_are_differences_and_pending(
    platform: Platform,
    remote_app: App,
    internal_app: Callable[[], PokdengApp],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A store the unguarded adapter left (before this fix): reconcile and pending no longer say all is well."""
    remote = remote_app()
    _d, round_id = _open_on_the_platform(platform, remote)
    internal = internal_app()
    internal.wallet_port = _Unguarded()
    play.drive_round(play.Driver(internal, prefix="internal", chooser=play.Chooser(random.Random(5))), round_id)
    wallet = PlatformWallet.connect(platform.url)
    try:
        now = datetime.now(tz=UTC)
        report = reconcile([remote], wallet, now - timedelta(minutes=5), now + timedelta(minutes=5))
    finally:
        wallet.close()
    assert not report.ok and {d.player for d in report.differences} == set(PAIR), report.render()
    assert all("the player is owed it" in d.pokdeng for d in report.differences)
    capsys.readouterr()
    assert main(["wallet", "pending", "--db", str(tmp_path / "pokdeng.sqlite")]) == 1
    assert "STRANDED" in capsys.readouterr().out


def test_a_server_on_the_store_s_wallets_does_not_start_while_rounds_hold_the_platform_s_money(
    platform: Platform, remote_app: App, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    remote = remote_app()
    d, round_id = _open_on_the_platform(platform, remote)
    config = StoreConfig(kind="sqlite", sqlite_path=str(tmp_path / "pokdeng.sqlite"), vault_key=play.VAULT_KEY)
    deployment = Deployment.open(config, clocks=False, read_models=False, lock=False)
    try:
        apps = deployment.service.apps
        with pytest.raises(ConfigError) as refused:
            check_switch(apps, WalletConfig())
        message = str(refused.value)
        assert f"round {round_id}: open, debits held: alice 5000, bob 5000" in message, message
        assert "--wallet remote" in message and "pokdeng wallet pending" in message
        assert check_switch(apps, WalletConfig("remote", platform.url)) == []  # the adapter that holds them
        with caplog.at_level("WARNING", "pokdeng.wallet"):
            assert len(check_switch(apps, WalletConfig(), allow=True)) == 2
        assert "started anyway" in caplog.text
        play.drive_round(d, round_id)
        assert check_switch(apps, WalletConfig()) == []
    finally:
        deployment.close()


def test_a_wallet_url_of_a_scheme_the_adapter_does_not_speak_is_refused() -> None:
    for url in ("ftp://nope", "nope", "unix:/tmp/wallet.sock", "http://", "GRPC://host:7070"):
        with pytest.raises(ConfigError, match="--wallet-url"):
            WalletConfig("remote", url)
        with pytest.raises(ValueError):
            transport_for(url)
    for url in ("127.0.0.1:7070", "grpc://wallet:7070", "http://wallet:8080/base", "https://wallet", "[::1]:7070"):
        WalletConfig("remote", url)
    assert main(["serve", "--wallet", "remote", "--wallet-url", "ftp://nope", "--db", "/nonexistent/x.sqlite"]) == 2


def test_one_writer_on_the_store_s_wallets_looks_for_a_round_s_outbox_once(tmp_path: Path) -> None:
    """The guard reads one row a bet or settlement; a single writer booking the store's wallets (``pokdeng
    serve`` on SQLite) remembers the rounds that have none, since no one else can give them one."""
    from pokdeng_service.wallet.outbox import transactions_uuid

    config = StoreConfig(kind="sqlite", sqlite_path=str(tmp_path / "one.sqlite"), vault_key=VAULT_KEY)
    app = PokdengApp(config.env(), vault=config.vault())
    try:
        assert app.single_writer and not app.wallet_port.remote
        looked: list[Any] = []
        select = app.recorder.select_events

        def counted(originator_id: Any, **kwargs: Any) -> Any:
            if originator_id == transactions_uuid("t#1"):
                looked.append(kwargs)
            return select(originator_id, **kwargs)

        app.recorder.select_events = counted  # type: ignore[method-assign]
        for player in ("ann", "bob"):
            app.open_wallet(f"open-{player}", player)
            app.deposit(f"fund-{player}", player, 100_000)
        app.open_table("table", "t", "classic", min_stake=100, max_stake=1000, seats=5)
        app.take_seat("seat-ann", "t", "ann", 1)
        app.take_seat("seat-bob", "t", "bob", 2)
        app.start_round("start", "t")
        app.place_bet("bet-ann", "t#1", 1, "ann", 100)
        app.place_bet("bet-bob", "t#1", 2, "bob", 100)
        assert len(looked) == 1  # the first bet looked; the second knew
    finally:
        app.close()
