"""The suite's shared set-up: its markers and the fast loop, Hypothesis profiles, ``--long``, a PostgreSQL server.

Markers and the fast loop
-------------------------
Each test that needs something beyond Python and SQLite, or that runs long, carries the marker of its
kind; every one of those kinds is also ``slow`` (added here), so the fast loop is
``python -m pytest -m "not slow"``: the unit, property, API and CLI tests on SQLite.

``postgres``     a PostgreSQL server (added by fixture too, see below)
``browser``      headless Chromium (the dispute pages in a real browser)
``node``         Node.js, with npm for the packages of ``tests/node`` (the Node client, the pinned buf)
``go``           Go and Debian's golang.org/x/mod sources (``tests/go``: our checkpoints read by Go's sumdb)
``packaging``    builds or installs the package (the wheel; the dependency floors from the package index)
``reliability``  ``pokdeng serve`` or a worker killed and restarted under load, outages, replicas, load runs
``soak``         long model and soak runs (hypothesis state machines, faults and kills against the platform)

``--long`` runs the long forms of the volume tests (more examples, kills, rounds): ``long_run()`` in
``tests/needs.py``. The default sizes are those that prove each property.

Hypothesis profiles
-------------------
``dev`` (the default) and ``ci`` (under ``CI=true``); ``HYPOTHESIS_PROFILE`` chooses either. Both have no
deadline: an example's time on a loaded machine says nothing about the code. ``ci`` is derandomized (the
same examples every run, so a red CI is the code's, never the draw's), keeps no example database and
prints the blob that reproduces a failure; it also lets slow data generation pass (``too_slow``).

Fixtures: a PostgreSQL server for the test session
--------------------------------------------------

Fixtures
--------
``postgres_server`` (session)
    :class:`pokdeng_testkit.pgserver.PostgresServerInfo` (host, port, user, password, dbname, url)
    for user ``pokdeng`` / password ``pokdeng`` on database ``pokdeng_test``.
    Where it comes from, in order:

    1. ``POKDENG_TEST_POSTGRES_URL`` (``postgresql://user:pw@host:port/dbname``) if set;
    2. else a throwaway cluster started from the PostgreSQL binaries
       (highest ``/usr/lib/postgresql/*/bin``, else ``pg_ctl`` on PATH), stopped at
       session end;
    3. else the test fails when ``CI=true`` and is skipped otherwise.

    ``POKDENG_TEST_PG_BINDIR`` names the bin folder explicitly (nothing else is tried then).

``postgres_dsn`` (session)
    ``postgres_server.url`` as a string.

``postgres_database`` (function)
    A :class:`PostgresServerInfo` for a brand-new empty database owned by the test user,
    dropped after the test.  (On an external server whose user may not create databases,
    a fresh schema in its database instead, with ``.schema`` set.)

``make_postgres_database`` (function)
    A factory ``() -> PostgresServerInfo``: each call makes one more fresh database
    (for tests needing several); all are dropped after the test.

``postgres_env`` (function)
    ``dict[str, str]`` for ``Application(env=...)``: ``PERSISTENCE_MODULE=eventsourcing.postgres``
    and ``POSTGRES_DBNAME/HOST/PORT/USER/PASSWORD`` (+ ``POSTGRES_SCHEMA`` in schema mode)
    pointing at ``postgres_database``.

Tests marked ``@pytest.mark.postgres`` get ``postgres_server`` automatically (so they
fail/skip like the fixture does), and tests using any of these fixtures get the
``postgres`` marker automatically (so ``-m "not postgres"`` deselects them).
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, settings

from pokdeng_testkit.pgserver import (
    PostgresServerInfo,
    PostgresStartError,
    TemporaryPostgres,
    create_database,
    create_schema,
    drop_database,
    drop_schema,
    find_pg_bin_dir,
    unique_name,
    wait_until_ready,
)
from tests.needs import LONG_ENV, unavailable, under_ci

POSTGRES_URL_ENV = "POKDENG_TEST_POSTGRES_URL"
_POSTGRES_FIXTURES = frozenset(
    {"postgres_server", "postgres_dsn", "postgres_database", "postgres_env", "make_postgres_database"}
)


STORE_FIXTURES = ("app_env", "store_env")  # parametrized over the stores by pytest_generate_tests
SLOW_KINDS = ("postgres", "browser", "node", "go", "packaging", "reliability", "soak")  # each is also ``slow``
LONGEST_FIRST = (("reliability", "soak", "packaging"), ("slow",))  # the run's order: these first, then the rest
STORE_ENV = (  # the store settings of ``pokdeng`` from the environment (no_store_settings removes them)
    "POKDENG_VAULT_KEY",
    "POKDENG_VAULT_KEY_FILE",
    "POKDENG_DB",
    "POKDENG_POSTGRES_URL",
    "POKDENG_PARTITION_URLS",
    "POKDENG_PARTITIONS",
)

settings.register_profile("dev", deadline=None, print_blob=True)
settings.register_profile(
    "ci", deadline=None, derandomize=True, database=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "").strip() or ("ci" if under_ci() else "dev"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--long",
        action="store_true",
        default=False,
        help="run the long forms of the volume tests (more examples, kills and rounds; tests/needs.py long_run)",
    )


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto`` (pyproject.toml's addopts): xdist's worker a core for the suite or its folders; none for a run
    of single files or tests (no workers to start, and a debugger or ``-s`` works as without xdist)."""
    if config.args and all("::" in arg or Path(arg).is_file() for arg in config.args):
        return 0
    return None  # (xdist's own count: PYTEST_XDIST_AUTO_NUM_WORKERS, else the cores)


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--long"):
        os.environ[LONG_ENV] = "1"  # (read at import by the test modules, in every xdist worker alike)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Before ``-m`` deselects: the ``postgres`` marker by fixture, then ``slow`` for every slow kind; and the
    longest kinds first, so that the parallel workers never wait on a long test begun last."""
    for item in items:
        if _POSTGRES_FIXTURES.intersection(getattr(item, "fixturenames", ())) and not item.get_closest_marker(
            "postgres"
        ):
            item.add_marker(pytest.mark.postgres)
        if not item.get_closest_marker("slow") and any(item.get_closest_marker(kind) for kind in SLOW_KINDS):
            item.add_marker(pytest.mark.slow)
    items.sort(key=_first_the_longest)  # (stable: each kind in the order collected)


def _first_the_longest(item: pytest.Item) -> int:
    for rank, kinds in enumerate(LONGEST_FIRST):
        if any(item.get_closest_marker(kind) for kind in kinds):
            return rank
    return len(LONGEST_FIRST)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """The store of ``app_env`` (tests/service) and ``store_env`` (tests/api): SQLite for every test, and
    PostgreSQL too for the tests whose subject is the store (``@pytest.mark.each_store``)."""
    chosen = {n.strip() for m in metafunc.definition.iter_markers("parametrize") for n in _argnames(m.args[0])}
    for name in STORE_FIXTURES:
        if name in metafunc.fixturenames and name not in chosen:  # (a test may choose its store itself)
            kinds: list[Any] = ["sqlite"]
            if metafunc.definition.get_closest_marker("each_store"):
                kinds.append(pytest.param("postgres", marks=pytest.mark.postgres))
            metafunc.parametrize(name, kinds, indirect=True)


def _argnames(names: str | Sequence[str]) -> list[str]:
    return names.split(",") if isinstance(names, str) else list(names)


@pytest.fixture
def no_store_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """No store setting reaches ``pokdeng`` from the environment (the machine's own ``POKDENG_*``)."""
    for name in STORE_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _postgres_marker(request: pytest.FixtureRequest) -> None:
    """Tests marked ``postgres`` need the server even if they don't ask for a fixture."""
    if request.node.get_closest_marker("postgres") is not None:
        request.getfixturevalue("postgres_server")


class _Session:
    """What the session-scoped fixtures share."""

    def __init__(self, info: PostgresServerInfo, admin: PostgresServerInfo, *, throwaway: bool) -> None:
        self.info = info
        self.admin = admin  # who creates/drops the per-test databases
        self.throwaway = throwaway
        self.can_create_databases = True


@pytest.fixture(scope="session")
def _postgres_session() -> Iterator[_Session]:
    url = os.environ.get(POSTGRES_URL_ENV, "").strip()
    if url:
        try:
            info = PostgresServerInfo.from_url(url)
        except ValueError as exc:
            pytest.fail(f"{POSTGRES_URL_ENV} is not usable: {exc}", pytrace=False)
        try:
            wait_until_ready(info, timeout=30.0)
        except PostgresStartError as exc:
            pytest.fail(f"cannot reach the server in {POSTGRES_URL_ENV}: {exc}", pytrace=False)
        yield _Session(info, info, throwaway=False)
        return

    bin_dir = find_pg_bin_dir()
    if bin_dir is None:
        message = (
            "PostgreSQL not found: install postgresql-15 (initdb/postgres in /usr/lib/postgresql/*/bin "
            f"or pg_ctl on PATH) or set {POSTGRES_URL_ENV}=postgresql://user:pw@host:port/dbname"
        )
        unavailable(message)

    server = TemporaryPostgres(bin_dir)
    atexit.register(server.stop)  # belt and braces: stop() is idempotent
    try:
        server.start()
    except PostgresStartError as exc:
        pytest.fail(f"could not start a throwaway PostgreSQL from {bin_dir}: {exc}", pytrace=False)
    try:
        yield _Session(server.info, server.admin, throwaway=True)
    finally:
        server.stop()
        atexit.unregister(server.stop)


@pytest.fixture(scope="session")
def postgres_server(_postgres_session: _Session) -> PostgresServerInfo:
    """The session's PostgreSQL server (user pokdeng / database pokdeng_test by default)."""
    return _postgres_session.info


@pytest.fixture(scope="session")
def postgres_dsn(postgres_server: PostgresServerInfo) -> str:
    """``postgresql://user:password@127.0.0.1:port/dbname`` for the session's server."""
    return postgres_server.url


def _new_database(session: _Session, cleanups: list[Callable[[], None]]) -> PostgresServerInfo:
    name = unique_name()
    if session.can_create_databases:
        owner = session.info.user if session.throwaway else session.admin.user
        try:
            create_database(session.admin, name, owner)
        except psycopg.errors.InsufficientPrivilege:
            session.can_create_databases = False
        else:
            cleanups.append(lambda: drop_database(session.admin, name))
            return session.info.with_dbname(name)
    # External server whose user may not create databases: isolate by schema instead.
    create_schema(session.info, name)
    cleanups.append(lambda: drop_schema(session.info, name))
    return replace(session.info, schema=name)


@pytest.fixture
def make_postgres_database(_postgres_session: _Session) -> Iterator[Callable[[], PostgresServerInfo]]:
    """A factory: each call gives another fresh, empty database; all are dropped after the test."""
    cleanups: list[Callable[[], None]] = []
    try:
        yield lambda: _new_database(_postgres_session, cleanups)
    finally:
        for cleanup in reversed(cleanups):
            cleanup()


@pytest.fixture
def postgres_database(make_postgres_database: Callable[[], PostgresServerInfo]) -> PostgresServerInfo:
    """A fresh, empty database (or schema) of the test's own, dropped afterwards."""
    return make_postgres_database()


@pytest.fixture
def postgres_env(postgres_database: PostgresServerInfo) -> dict[str, str]:
    """Settings for ``Application(env=...)`` with eventsourcing.postgres on a fresh database."""
    return postgres_database.eventsourcing_env()
