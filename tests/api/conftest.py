"""Fixtures of the API suite: a real gRPC server on 127.0.0.1 (port 0) over a real application.

``served``      a running server on a fresh store: an SQLite file; for the tests whose subject is the
                store (marked ``each_store``) a fresh PostgreSQL database too (``postgres_env``;
                tests/conftest.py parametrizes ``store_env``).
``local``       the same on SQLite only (for tests whose subject does not depend on the store).
``start_server`` a factory for tests that need their own server (another app, other limits).

A ``Served`` hands out ``Api`` clients by token name: ``served.api("operator")``,
``served.api("alice")``, ``served.api("auditor")``, ``served.api(None)`` (no token).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest

from pokdeng_service.api.server import PokdengServer, create_server
from pokdeng_service.application import PokdengApp
from pokdeng_service.auth import Role, TokenStore
from pokdeng_service.store.vault import SeedVault
from pokdeng_testkit.keys import VAULT_KEY

from .client import PLAYERS, TOKENS, Api


def token_store() -> TokenStore:
    entries: list[tuple[str, Role | str, str | None]] = [
        (TOKENS["operator"], Role.OPERATOR, None),
        (TOKENS["auditor"], Role.AUDITOR, None),
    ]
    entries.extend((TOKENS[p], Role.PLAYER, p) for p in PLAYERS)
    return TokenStore.from_tokens(entries)


def sqlite_env(folder: Path) -> dict[str, str]:
    return {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(folder / "pokdeng.sqlite")}


def make_app(env: dict[str, str]) -> PokdengApp:
    return PokdengApp(env, vault=SeedVault.from_hex(VAULT_KEY))


@dataclass
class Served:
    server: PokdengServer
    port: int
    app: Any
    channel: grpc.Channel
    ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    stopped: bool = False

    def stop(self, grace: float | None = 0) -> None:
        if not self.stopped:
            self.stopped = True
            self.channel.close()
            self.server.stop(grace).wait(10)

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def api(self, who: str | None, *, twice: bool = False, token: str | None = None) -> Api:
        return Api(
            self.channel,
            token if token is not None else (TOKENS[who] if who else None),
            ids=self.ids,
            prefix=f"{who or 'anon'}",
            twice=twice,
            max_position=(lambda: int(self.app.max_position)) if twice else None,
        )

    def players(self, *, twice: bool = False) -> dict[str, Api]:
        return {p: self.api(p, twice=twice) for p in PLAYERS}


StartServer = Callable[..., Served]


@pytest.fixture
def start_server() -> Iterator[StartServer]:
    running: list[Served] = []

    def start(app: Any, **options: Any) -> Served:
        options.setdefault("tokens", token_store())
        server, port = create_server("127.0.0.1:0", app, **options)
        server.start()
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        grpc.channel_ready_future(channel).result(timeout=10)
        served = Served(server, port, app, channel)
        running.append(served)
        return served

    yield start
    for served in reversed(running):
        served.stop()


@pytest.fixture
def store_env(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    if request.param == "sqlite":
        return sqlite_env(tmp_path)
    return dict(request.getfixturevalue("postgres_env"))


@pytest.fixture
def served(store_env: dict[str, str], start_server: StartServer) -> Iterator[Served]:
    app = make_app(store_env)
    running = start_server(app)
    try:
        yield running
    finally:
        running.stop()
        app.close()


@pytest.fixture
def local(tmp_path: Path, start_server: StartServer) -> Iterator[Served]:
    app = make_app(sqlite_env(tmp_path))
    running = start_server(app)
    try:
        yield running
    finally:
        running.stop()
        app.close()
