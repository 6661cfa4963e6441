"""Fixtures of the platform wallet suite: a reference platform wallet server, and pokdeng apps booked on it.

``platform``     a ``Platform``: the reference ledger (its own SQLite file) served over gRPC on
                 127.0.0.1 behind a fault interceptor (``faults``: off unless a test forces or
                 plans faults).
``remote_app``   a factory of ``PokdengApp`` instances on one SQLite store, each given the
                 platform's wallets (``wallet.remote.attach``, no recovery thread: the transactions
                 of a settlement or void are sent at once), with short timeouts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from pokdeng_service.application import PokdengApp
from pokdeng_service.wallet.config import WalletConfig
from pokdeng_service.wallet.remote import RemotePort, attach

from ..service import play
from .faults import Faults
from .platform_server import Ledger, serve_grpc

PLAYERS = ("alice", "bob", "carol")
FUNDS = 1_000_000


@dataclass
class Platform:
    ledger: Ledger
    faults: Faults
    server: grpc.Server
    url: str

    def fund(self, *players: str, amount: int = FUNDS, currency: str = "THB") -> None:
        for player in players:
            self.ledger.open_player(player, amount, currency)


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


@pytest.fixture
def remote_app(tmp_path: Path, platform: Platform) -> Iterator[Callable[..., PokdengApp]]:
    apps: list[PokdengApp] = []
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "pokdeng.sqlite")}

    def factory(url: str | None = None, **config: Any) -> PokdengApp:
        app = play.make_app(env)
        settings = {"timeout": 0.3, "attempts": 3, "grace": 5.0, **config}
        attach([app], WalletConfig("remote", url or platform.url, **settings), recovery=False)
        apps.append(app)
        return app

    yield factory
    for app in reversed(apps):
        port = app.wallet_port
        if isinstance(port, RemotePort):
            port.platform.close()
        app.close()
