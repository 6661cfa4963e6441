"""Fixtures of the platform wallet suite: the reference wallets (pokdeng's protocol, and Hub88's API), and pokdeng apps
booked on them.

``platform``     a ``Platform``: the reference ledger (its own SQLite file) served over gRPC on
                 127.0.0.1 behind a fault interceptor (``faults``: off unless a test forces or
                 plans faults).
``hub88``        a ``Hub88``: the reference Hub88 wallet (``hub88_server``) over HTTP, requests and answers signed
                 (``hub88_keys``: pokdeng's RSA key file, Hub88's public key file), faults off unless forced.
``any_platform`` each of the two in turn (a parametrised fixture): what a test of both asks of them is the same
                 (``fund``, ``balances``, ``config``, ``open_sessions``).
``wallet_apps``  a factory of ``PokdengApp`` instances on one SQLite store, each given the platform's wallets of a
                 ``WalletConfig`` (``wallet.remote.attach``, no recovery thread: the transactions of a settlement or
                 void are sent at once); ``remote_app`` and ``hub88_app`` make them on ``platform`` and ``hub88``,
                 with short timeouts (``SETTINGS``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import grpc
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from pokdeng_service.application import PokdengApp
from pokdeng_service.wallet.config import WalletConfig
from pokdeng_service.wallet.remote import RemotePort, attach

from ..service import play
from .faults import Faults
from .hub88_server import Hub88Ledger, Hub88Server, serve
from .pki import public_pem, signing_key, write_private
from .platform_server import Ledger, serve_grpc

PLAYERS = ("alice", "bob", "carol")
FUNDS = 1_000_000
SETTINGS: dict[str, Any] = {"timeout": 0.3, "attempts": 3, "grace": 5.0}
"""The wallet settings of the apps of these tests: short calls, a grace shorter than any test."""


class AnyPlatform(Protocol):
    """What a test of both reference wallets asks of one."""

    url: str
    faults: Faults

    def fund(self, *players: str, amount: int = FUNDS, currency: str = "THB") -> None: ...
    def balances(self) -> dict[str, int]: ...
    def config(self, **more: Any) -> WalletConfig: ...
    def open_sessions(self, app: Any, *players: str) -> None: ...


@dataclass
class Platform:
    ledger: Ledger
    faults: Faults
    server: grpc.Server
    url: str

    def fund(self, *players: str, amount: int = FUNDS, currency: str = "THB") -> None:
        for player in players:
            self.ledger.open_player(player, amount, currency)

    def balances(self) -> dict[str, int]:
        return self.ledger.balances()

    def config(self, **more: Any) -> WalletConfig:
        return WalletConfig("remote", self.url, **{**SETTINGS, **more})

    def open_sessions(self, app: Any, *players: str) -> None:
        """(pokdeng's protocol takes no session)"""


@dataclass
class Hub88Keys:
    ours: rsa.RSAPrivateKey  # pokdeng's (the supplier's)
    hub88: rsa.RSAPrivateKey
    ours_file: Path
    hub88_public: Path


@dataclass
class Hub88:
    server: Hub88Server
    keys: Hub88Keys

    @property
    def ledger(self) -> Hub88Ledger:
        return self.server.ledger

    @property
    def faults(self) -> Faults:
        return self.server.faults

    @property
    def url(self) -> str:
        return self.server.url

    def fund(self, *players: str, amount: int = FUNDS, currency: str = "THB") -> None:
        for player in players:
            self.ledger.open_player(player, amount, currency)

    def balances(self) -> dict[str, int]:
        return self.ledger.balances()

    def config(self, **more: Any) -> WalletConfig:
        keys = {"hub88_key": str(self.keys.ours_file), "hub88_public_keys": str(self.keys.hub88_public)}
        return WalletConfig("hub88", self.url, **{**SETTINGS, **keys, **more})

    def open_sessions(self, app: Any, *players: str, currency: str = "THB") -> None:
        """Each player's game launched on Hub88 (a new token) and its session handed to pokdeng."""
        for player in players:
            token = self.ledger.launch(player, currency)
            app.open_wallet_session(f"session:{player}:{uuid.uuid4()}", player, token, currency, "pokdeng")


@pytest.fixture
def platform(tmp_path: Path) -> Iterator[Platform]:
    ledger = Ledger(tmp_path / "platform-ledger.sqlite")
    faults = Faults()
    server, port = serve_grpc(ledger, [faults])
    try:
        yield Platform(ledger, faults, server, f"127.0.0.1:{port}")
    finally:
        server.stop(0).wait(5)
        faults.wait_delayed()
        ledger.close()


@pytest.fixture(scope="session")
def rsa_keys() -> tuple[rsa.RSAPrivateKey, rsa.RSAPrivateKey]:
    """pokdeng's and Hub88's RSA keys (made once: 2048-bit keys take a while)."""
    ours, hub88 = signing_key("rsa"), signing_key("rsa")
    assert isinstance(ours, rsa.RSAPrivateKey) and isinstance(hub88, rsa.RSAPrivateKey)
    return ours, hub88


@pytest.fixture
def hub88_keys(tmp_path: Path, rsa_keys: tuple[rsa.RSAPrivateKey, rsa.RSAPrivateKey]) -> Hub88Keys:
    ours, hub88 = rsa_keys
    public = tmp_path / "hub88-public.pem"
    public.write_bytes(public_pem(hub88.public_key()))
    return Hub88Keys(ours, hub88, write_private(tmp_path / "pokdeng-hub88.key", ours), public)


@pytest.fixture
def hub88(hub88_keys: Hub88Keys) -> Iterator[Hub88]:
    server = serve(Hub88Ledger(), hub88_keys.ours.public_key(), hub88_keys.hub88)
    try:
        yield Hub88(server, hub88_keys)
    finally:
        server.stop()


@pytest.fixture(params=["remote", "hub88"])
def any_platform(request: pytest.FixtureRequest) -> AnyPlatform:
    found: AnyPlatform = request.getfixturevalue("platform" if request.param == "remote" else "hub88")
    return found


@pytest.fixture
def wallet_apps(tmp_path: Path) -> Iterator[Callable[[WalletConfig], PokdengApp]]:
    apps: list[PokdengApp] = []
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "pokdeng.sqlite")}

    def factory(config: WalletConfig) -> PokdengApp:
        app = play.make_app(env)
        attach([app], config, recovery=False)
        apps.append(app)
        return app

    yield factory
    for app in reversed(apps):
        port = app.wallet_port
        if isinstance(port, RemotePort):
            port.platform.close()
        app.close()


@pytest.fixture
def remote_app(platform: Platform, wallet_apps: Callable[[WalletConfig], PokdengApp]) -> Callable[..., PokdengApp]:
    def factory(url: str | None = None, **config: Any) -> PokdengApp:
        return wallet_apps(WalletConfig("remote", url or platform.url, **{**SETTINGS, **config}))

    return factory


@pytest.fixture
def hub88_app(hub88: Hub88, wallet_apps: Callable[[WalletConfig], PokdengApp]) -> Callable[..., PokdengApp]:
    def factory(**config: Any) -> PokdengApp:
        return wallet_apps(hub88.config(**config))

    return factory
