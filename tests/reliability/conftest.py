"""Fixtures of the reliability suite: fresh stores for ``pokdeng serve`` child processes.

``harness_store`` (params sqlite, postgres): a ``pokdeng_testkit.harness.server.Store`` on a fresh SQLite
file in the test's folder, or on a fresh PostgreSQL database (``postgres_database``: the
session's throwaway cluster, or ``POKDENG_TEST_POSTGRES_URL``).

The harnesses start and kill their own servers and end every one of them before they return,
also when they fail (``pokdeng_testkit.harness.server.servers``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pokdeng_testkit.harness.server import Store
from pokdeng_testkit.pgserver import PostgresServerInfo

STORES = ("sqlite", pytest.param("postgres", marks=pytest.mark.postgres))


@pytest.fixture(params=STORES)
def harness_store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "sqlite":
        return Store.sqlite(tmp_path / "pokdeng.sqlite")
    return _postgres(request.getfixturevalue("postgres_database"))


@pytest.fixture
def postgres_store(postgres_database: PostgresServerInfo) -> Store:
    return _postgres(postgres_database)


def _postgres(database: PostgresServerInfo) -> Store:
    """The database's URL (with its schema, when the session isolates tests by schema)."""
    return Store.postgres(database.url + (f"?schema={database.schema}" if database.schema else ""))
