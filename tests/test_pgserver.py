"""The PostgreSQL test harness itself: server, eventsourcing round trip, isolation.

These tests fail (never skip) under CI=true when PostgreSQL is missing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg
import pytest
from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.domain import Aggregate, event

from pokdeng_testkit.pgserver import PER_TEST_DB_PREFIX, PG_BINDIR_ENV, PostgresServerInfo

REPO_ROOT = Path(__file__).resolve().parent.parent


class Tally(Aggregate):
    """A tiny aggregate, only for these tests."""

    @event("Started")
    def __init__(self, name: str) -> None:
        self.name = name
        self.points: list[int] = []

    @event("Scored")
    def score(self, points: int) -> None:
        self.points.append(points)


class TallyApp(Application[UUID]):
    def start(self, name: str) -> UUID:
        tally = Tally(name)
        self.save(tally)
        return tally.id

    def score(self, tally_id: UUID, points: int) -> None:
        tally: Tally = self.repository.get(tally_id)
        tally.score(points)
        self.save(tally)

    def get(self, tally_id: UUID) -> Tally:
        tally: Tally = self.repository.get(tally_id)
        return tally


def _tables(info: PostgresServerInfo) -> set[str]:
    schema = info.schema or "public"
    with info.connect() as conn:
        rows = conn.execute(
            "select table_name from information_schema.tables where table_schema = %s", (schema,)
        ).fetchall()
    return {str(row[0]) for row in rows}


def test_server_answers_select_1(postgres_server: PostgresServerInfo, postgres_dsn: str) -> None:
    assert postgres_dsn == postgres_server.url
    assert postgres_dsn.startswith("postgresql://")
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        assert conn.execute("select 1").fetchone() == (1,)
        row = conn.execute("select current_user, current_database()").fetchone()
    assert row == (postgres_server.user, postgres_server.dbname)
    with postgres_server.connect() as conn:
        version = conn.execute("show server_version_num").fetchone()
    assert version is not None and int(version[0]) >= 130000


@pytest.mark.skipif(
    bool(os.environ.get("POKDENG_TEST_POSTGRES_URL")),
    reason="an outside server's pg_hba is not ours: only the throwaway cluster's password check is tested",
)
def test_wrong_password_is_refused(postgres_server: PostgresServerInfo) -> None:
    kwargs: dict[str, Any] = {**postgres_server.connect_kwargs(), "password": "not-" + postgres_server.password}
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(**kwargs).close()


def test_postgres_env_settings(postgres_env: dict[str, str], postgres_database: PostgresServerInfo) -> None:
    assert postgres_env["PERSISTENCE_MODULE"] == "eventsourcing.postgres"
    assert postgres_env["POSTGRES_DBNAME"] == postgres_database.dbname
    assert postgres_env["POSTGRES_HOST"] == postgres_database.host
    assert postgres_env["POSTGRES_PORT"] == str(postgres_database.port)
    assert postgres_env["POSTGRES_USER"] == postgres_database.user
    assert postgres_env["POSTGRES_PASSWORD"] == postgres_database.password
    assert postgres_database.dbname.startswith(PER_TEST_DB_PREFIX) or postgres_database.schema


def test_application_saves_and_reloads_through_postgres(
    postgres_env: dict[str, str], postgres_database: PostgresServerInfo
) -> None:
    assert _tables(postgres_database) == set()

    app = TallyApp(env=postgres_env)
    try:
        assert type(app.factory).__module__ == "eventsourcing.postgres"
        tally_id = app.start("dealer")
        app.score(tally_id, 3)
        app.score(tally_id, 9)
    finally:
        app.close()

    # A brand-new application object (new connection pool) reads it back from the database.
    reopened = TallyApp(env=postgres_env)
    try:
        tally = reopened.get(tally_id)
        assert tally.name == "dealer"
        assert tally.points == [3, 9]
        assert tally.version == 3
        notifications = reopened.notification_log.select(start=1, limit=10)
        assert [n.originator_id for n in notifications] == [tally_id] * 3
    finally:
        reopened.close()

    assert "tallyapp_events" in _tables(postgres_database)
    with postgres_database.connect() as conn:
        row = conn.execute("select count(*) from tallyapp_events").fetchone()
    assert row == (3,)


def test_two_databases_are_isolated(make_postgres_database: Callable[[], PostgresServerInfo]) -> None:
    first, second = make_postgres_database(), make_postgres_database()
    assert (first.dbname, first.schema) != (second.dbname, second.schema)

    app1 = TallyApp(env=first.eventsourcing_env())
    app2 = TallyApp(env=second.eventsourcing_env())
    try:
        tally_id = app1.start("player-1")
        assert app1.get(tally_id).name == "player-1"
        with pytest.raises(AggregateNotFoundError):
            app2.repository.get(tally_id)
        assert app2.notification_log.select(start=1, limit=10) == []
    finally:
        app1.close()
        app2.close()


_SEEN_DATABASES: list[PostgresServerInfo] = []


@pytest.mark.parametrize("run", [1, 2])
def test_each_test_starts_empty_and_is_cleaned_up(run: int, postgres_database: PostgresServerInfo) -> None:
    assert _tables(postgres_database) == set(), "a per-test database must start empty"
    for earlier in _SEEN_DATABASES:
        assert (earlier.dbname, earlier.schema) != (postgres_database.dbname, postgres_database.schema)
        if earlier.schema:
            with postgres_database.connect() as conn:
                row = conn.execute(
                    "select count(*) from information_schema.schemata where schema_name = %s", (earlier.schema,)
                ).fetchone()
        else:
            with postgres_database.connect() as conn:
                row = conn.execute("select count(*) from pg_database where datname = %s", (earlier.dbname,)).fetchone()
        assert row == (0,), f"the database/schema of an earlier test was not dropped: {earlier}"
    with postgres_database.connect() as conn:
        conn.execute("create table leftover (x int)")
    _SEEN_DATABASES.append(postgres_database)


@pytest.mark.postgres
def test_marker_alone_provides_the_server(request: pytest.FixtureRequest) -> None:
    # The autouse hook in conftest.py resolved the server for this marked test already.
    info = request.getfixturevalue("postgres_server")
    assert isinstance(info, PostgresServerInfo)


# --------------------------------------------------------------------------- #
# What happens without PostgreSQL: an inner pytest run with no binaries to find.
# --------------------------------------------------------------------------- #


def _run_inner_pytest_without_postgres(ci: str | None, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "POKDENG_TEST_POSTGRES_URL")}
    env[PG_BINDIR_ENV] = str(tmp_path / "no-such-bin-dir")
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            f"{Path(__file__).relative_to(REPO_ROOT)}::test_server_answers_select_1",
        ],
        cwd=REPO_ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_missing_postgres_fails_under_ci(tmp_path: Path) -> None:
    result = _run_inner_pytest_without_postgres("true", tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "PostgreSQL not found" in output, output
    assert "1 error" in output, output
    assert "skipped" not in output, output


def test_missing_postgres_skips_outside_ci(tmp_path: Path) -> None:
    result = _run_inner_pytest_without_postgres(None, tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "1 skipped" in output, output
    assert "PostgreSQL not found" in output, output
