"""Fixtures of the service suite: every scenario runs on an SQLite file; those whose subject is the store
(marked ``each_store``) on PostgreSQL too (tests/conftest.py parametrizes ``app_env``).

``app_env``   the eventsourcing settings of a fresh store: ``sqlite`` (a file in the test's
              tmp dir) or ``postgres`` (``postgres_env``: a fresh database per test).
``make_app``  a factory of ``PokdengApp`` instances on that store (all share the fixed test
              vault key, so any instance can open any round's sealed seed); closed after the test.
``app``       one instance.
``driver``    a ``play.Driver`` on ``app`` (request ids, command log, seeded choices).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

import pytest

from pokdeng_service.application import PokdengApp

from . import play


@pytest.fixture
def app_env(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    if request.param == "sqlite":
        folder = tmp_path_factory.mktemp("store")
        return {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(folder / "pokdeng.sqlite")}
    return dict(request.getfixturevalue("postgres_env"))


@pytest.fixture
def store(app_env: dict[str, str]) -> str:
    """``"sqlite"`` or ``"postgres"``."""
    return "postgres" if app_env["PERSISTENCE_MODULE"].endswith("postgres") else "sqlite"


@pytest.fixture
def make_app(app_env: dict[str, str]) -> Iterator[Callable[..., PokdengApp]]:
    apps: list[PokdengApp] = []

    def factory(**extra: str) -> PokdengApp:
        app = play.make_app(app_env, **extra)
        apps.append(app)
        return app

    yield factory
    for app in reversed(apps):
        app.close()


@pytest.fixture
def app(make_app: Callable[..., PokdengApp]) -> PokdengApp:
    return make_app()


@pytest.fixture
def driver(app: PokdengApp, request: pytest.FixtureRequest) -> play.Driver:
    seed = sum(map(ord, request.node.name))
    return play.Driver(app, chooser=play.Chooser(random.Random(seed)))
