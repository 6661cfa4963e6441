"""Bounded store access: PostgreSQL sessions that cannot hang, and the cheap probe of a store.

``BoundedPostgresFactory`` (selected by ``PERSISTENCE_MODULE`` = ``BOUNDED_POSTGRES_FACTORY``, which
``application.config.postgres_settings`` sets) is the library's PostgreSQL factory whose every
connection has a connect timeout, TCP keepalives and a user timeout (a server gone from the network
is noticed in seconds, not at the kernel's two-hour default) and a ``statement_timeout``. The library's
own settings bound the rest: ``POSTGRES_CONNECT_TIMEOUT`` is also how long a call waits for a pooled
connection, ``POSTGRES_IDLE_IN_TRANSACTION_SESSION_TIMEOUT`` ends a session left inside a transaction.
Every value can be overridden from the environment with the application's prefix
(``POKDENG_POSTGRES_STATEMENT_TIMEOUT=10``).

``StoreProbe(app)`` is one partition's probe for the server's store monitor (``api.health``): a
``SELECT 1`` on a connection of its own (not from the pool, so that a pool waiting to reconnect does not
hide a store that answers again), or the last notification id of an SQLite or in-memory store.
``recover()`` is called when the store answers again after failing: it replaces the pool's
connections at once (the pool's own reconnection backs off for up to minutes).
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

from eventsourcing.postgres import PostgresDatastore, PostgresFactory
from eventsourcing.utils import Environment, EnvType

BOUNDED_POSTGRES_FACTORY = f"{__name__}:BoundedPostgresFactory"
STATEMENT_TIMEOUT = "POSTGRES_STATEMENT_TIMEOUT"  # seconds (default 5)
TCP_USER_TIMEOUT = "POSTGRES_TCP_USER_TIMEOUT"  # seconds (default 10)
_CONNECT_KEYS = ("dbname", "host", "port", "user", "password")


def _seconds(env: Environment, key: str, default: float) -> float:
    text = env.get(key) or ""
    try:
        value = float(text) if text else default
    except ValueError:
        raise OSError(f"{key} must be a number of seconds, not {text!r}") from None
    if value <= 0:
        raise OSError(f"{key} must be positive, not {text!r}")
    return value


class BoundedPostgresFactory(PostgresFactory):
    """eventsourcing's PostgreSQL factory whose sessions have connect, keepalive and statement timeouts."""

    def __init__(self, env: Environment | EnvType | None):
        super().__init__(env)
        connect = _seconds(self.env, self.POSTGRES_CONNECT_TIMEOUT, 5.0)
        statement = _seconds(self.env, STATEMENT_TIMEOUT, 5.0)
        user_timeout = _seconds(self.env, TCP_USER_TIMEOUT, 10.0)
        pool = self.datastore.pool  # not opened yet: every connection it makes gets these
        kwargs = dict(pool.kwargs) if isinstance(pool.kwargs, dict) else {}
        kwargs.update(session_options(connect, statement, user_timeout))
        previous = str(kwargs.get("options", "") or "")
        kwargs["options"] = f"{previous} -c statement_timeout={int(statement * 1000)}".strip()
        pool.kwargs = kwargs


def session_options(connect: float, statement: float, user_timeout: float) -> dict[str, Any]:
    """libpq's connection parameters that bound a session's waits (libpq counts a connect timeout below 2 s as 2)."""
    return {
        "connect_timeout": max(2, math.ceil(connect)),
        "keepalives": 1,
        "keepalives_idle": 5,
        "keepalives_interval": 2,
        "keepalives_count": 3,
        "tcp_user_timeout": int(user_timeout * 1000),
    }


class StoreProbe:
    """A cheap query against one application's store; raises when the store does not answer."""

    def __init__(self, app: Any, timeout: float = 1.0) -> None:
        self.recorder = app.recorder
        self.timeout = timeout
        datastore = getattr(self.recorder, "datastore", None)
        self.datastore = datastore if isinstance(datastore, PostgresDatastore) else None
        self._connection: Any = None

    def __call__(self) -> None:
        if self.datastore is None:
            self.recorder.max_notification_id()
            return
        import psycopg

        connection = self._connection
        if connection is None or connection.closed:
            pool_kwargs = self.datastore.pool.kwargs if isinstance(self.datastore.pool.kwargs, dict) else {}
            kwargs = {key: pool_kwargs[key] for key in _CONNECT_KEYS if key in pool_kwargs}
            kwargs.update(session_options(self.timeout, self.timeout, max(self.timeout, 2.0)))
            kwargs["options"] = f"-c statement_timeout={int(self.timeout * 1000)}"
            connection = self._connection = psycopg.connect(autocommit=True, **kwargs)
        try:
            connection.execute("SELECT 1").fetchone()
        except BaseException:
            self.close()
            raise

    def recover(self) -> None:
        """The store answers again: replace the pool's (broken) connections now."""
        renew_pool(self.datastore)

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(Exception):
                connection.close()


def renew_pool(datastore: Any) -> None:
    """Replace the connections of a PostgreSQL datastore's pool (anything else: nothing to do)."""
    if isinstance(datastore, PostgresDatastore):
        with contextlib.suppress(Exception):
            datastore.pool.drain()


__all__ = ["BOUNDED_POSTGRES_FACTORY", "BoundedPostgresFactory", "StoreProbe", "renew_pool", "session_options"]
