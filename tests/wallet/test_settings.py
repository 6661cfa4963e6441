"""The deployment's choice of wallets: ``pokdeng serve --wallet remote|hub88 --wallet-url ...`` and its recovery
workers, on each reference wallet (pokdeng's protocol, Hub88's API)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pytest

from pokdeng_service.application.config import ConfigError, StoreConfig
from pokdeng_service.application.wallet_port import INTERNAL
from pokdeng_service.cli.main import build_parser
from pokdeng_service.cli.settings import ServeSettings
from pokdeng_service.compose import Deployment
from pokdeng_service.wallet.config import WalletConfig
from pokdeng_service.wallet.outbox import load_transactions
from pokdeng_service.wallet.remote import RemotePort

from ..service import play
from .conftest import FUNDS, PLAYERS, AnyPlatform, Hub88


def _settings(*flags: str) -> ServeSettings:
    args: argparse.Namespace = build_parser().parse_args(["serve", *flags])
    return ServeSettings.from_args(args)


def test_the_serve_flags_choose_the_wallets(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _settings().wallet_config() == WalletConfig()
    chosen = _settings("--wallet", "remote", "--wallet-url", "127.0.0.1:7070", "--wallet-timeout", "0.5")
    assert chosen.wallet_config() == WalletConfig("remote", "127.0.0.1:7070", 0.5, 3)
    monkeypatch.setenv("POKDENG_WALLET", "remote")
    monkeypatch.setenv("POKDENG_WALLET_URL", "http://127.0.0.1:8080/wallet")
    assert _settings().wallet_config().url == "http://127.0.0.1:8080/wallet"
    monkeypatch.delenv("POKDENG_WALLET_URL")
    with pytest.raises(ConfigError, match="URL"):
        _settings().wallet_config()
    with pytest.raises(ConfigError):
        _settings("--wallet-attempts", "0")


def test_the_serve_flags_choose_hub88(hub88: Hub88) -> None:
    keys = hub88.keys
    flags = ["--wallet", "hub88", "--wallet-url", hub88.url, "--wallet-hub88-key", str(keys.ours_file),
             "--wallet-hub88-public-keys", str(keys.hub88_public), "--wallet-timeout", "0.3"]  # fmt: skip
    assert _settings(*flags).wallet_config() == WalletConfig(
        "hub88", hub88.url, 0.3, hub88_key=str(keys.ours_file), hub88_public_keys=str(keys.hub88_public)
    )


def test_a_deployment_on_the_platform_s_wallets_finishes_credits_in_the_background(
    any_platform: AnyPlatform, tmp_path: Path
) -> None:
    """The served deployment on each platform; its credits refused for a while (injected), so that the background
    recovery, not the command, is what pays them."""
    platform = any_platform
    platform.fund(*PLAYERS)
    config = StoreConfig(kind="sqlite", sqlite_path=str(tmp_path / "served.sqlite"), vault_key=play.VAULT_KEY)
    wallet = platform.config(grace=None, recovery_interval=0.05)
    deployment = Deployment.open(config, clocks=False, read_models=False, wallet=wallet)
    try:
        deployment.start()
        (app,) = deployment.service.apps
        assert isinstance(app.wallet_port, RemotePort) and deployment.recoveries[0].running
        platform.open_sessions(app, *PLAYERS)
        d = play.Driver(app)
        play.open_table(d, "t1", "kingmaker", [(i, p) for i, p in enumerate(PLAYERS, 1)])
        round_id = play.start_round(d, "t1")
        play.seat_bets(d, round_id, 300)
        platform.faults.force("Credit", "unavailable", "unavailable", "unavailable", "unavailable")
        play.drive_round(d, round_id)
        deadline = time.monotonic() + 30  # (a hang guard: the outbox sends as soon as the round settles)
        while True:
            txs = load_transactions(app, round_id)
            if (txs is not None and not txs.pending()) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert txs is not None and not txs.pending()
        assert sum(platform.balances().values()) == 3 * FUNDS - app.get_table("t1").house_net
    finally:
        deployment.close()
    internal = Deployment.open(config, clocks=False, read_models=False)
    try:
        assert internal.service.apps[0].wallet_port is INTERNAL and not internal.recoveries
    finally:
        internal.close()
