"""Bounded store access: PostgreSQL sessions that cannot hang, and the cheap probe of a store.

``BoundedPostgresFactory`` (selected by ``PERSISTENCE_MODULE`` = ``BOUNDED_POSTGRES_FACTORY``, which
``application.config.postgres_settings`` sets) is the library's PostgreSQL factory whose every
connection has a connect timeout, TCP keepalives and a user timeout (a server gone from the network
is noticed in seconds, not at the kernel's two-hour default) and a ``statement_timeout``. The library's
own settings bound the rest: ``POSTGRES_CONNECT_TIMEOUT`` is also how long a call waits for a pooled
connection, ``POSTGRES_IDLE_IN_TRANSACTION_SESSION_TIMEOUT`` ends a session left inside a transaction.
Every value can be overridden from the environment with the application's prefix
(``POKDENG_POSTGRES_STATEMENT_TIMEOUT=10``).

The library retries every store call ten times on a connection error, each try waiting for a
pooled connection: with the store gone, one call would wait ten pool timeouts, and a command that
then looks for its request's record ten more. So the factory's datastore fails fast: once a
connection could not be had (or broke), every call in the next ``POSTGRES_FAIL_FAST`` seconds
(default 1) fails at once with ``StoreUnreachable``, which the library does not retry and the API
reports as UNAVAILABLE; then one call tries for real again. A call therefore fails within about one
pool timeout (2 s), whatever the library's retries.

``StoreProbe(app)`` is one partition's probe for the server's store monitor (``api.health``): a
``SELECT 1`` on a connection of its own (not from the pool, so that a pool waiting to reconnect does not
hide a store that answers again), or the last notification id of an SQLite or in-memory store.
``recover()`` is called when the store answers again after failing: it replaces the pool's
connections at once (the pool's own reconnection backs off for up to minutes).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator
from typing import Any

from eventsourcing.persistence import InterfaceError, OperationalError
from eventsourcing.postgres import PostgresDatastore, PostgresFactory
from eventsourcing.utils import Environment, EnvType

BOUNDED_POSTGRES_FACTORY = f"{__name__}:BoundedPostgresFactory"
STATEMENT_TIMEOUT = "POSTGRES_STATEMENT_TIMEOUT"  # seconds (default 5)
TCP_USER_TIMEOUT = "POSTGRES_TCP_USER_TIMEOUT"  # seconds (default 10)
FAIL_FAST = "POSTGRES_FAIL_FAST"  # seconds (default 1)
# libpq's target_session_attrs for every session (``read-write``: of a multi-host URL's servers, the writable one)
TARGET_SESSION_ATTRS = "POSTGRES_TARGET_SESSION_ATTRS"


class StoreUnreachable(OSError):
    """The store gave no connection a moment ago: the call fails at once instead of waiting again."""


class _FailFast:
    """A datastore's ``get_connection`` that fails at once for ``window`` seconds after a connection failed."""

    def __init__(self, datastore: PostgresDatastore, window: float) -> None:
        self.original = datastore.get_connection
        self.window = window
        self.failed_at: float | None = None

    @contextlib.contextmanager
    def get_connection(self) -> Iterator[Any]:
        failed_at = self.failed_at
        if failed_at is not None and time.monotonic() - failed_at < self.window:
            raise StoreUnreachable(
                f"the event store gave no connection {time.monotonic() - failed_at:.1f} s ago (fail fast)"
            )
        connection: Any = None
        try:
            with self.original() as connection:
                yield connection
        except (OperationalError, InterfaceError):
            if connection is None or getattr(connection, "broken", False) or getattr(connection, "closed", False):
                self.failed_at = time.monotonic()  # no connection, or it broke: not a slow or refused statement
            raise
        self.failed_at = None


_CONNECT_KEYS = ("dbname", "host", "port", "user", "password", "target_session_attrs")


def libpq_extras(env: Environment | dict[str, str], *, read_only: bool = False) -> dict[str, str]:
    """libpq parameters of the settings beyond the library's own: ``target_session_attrs``. A read-only session
    (``default_transaction_read_only``, the audit tools) is never "read-write": there it asks for the primary."""
    attrs = env.get(TARGET_SESSION_ATTRS) or ""
    if read_only and attrs == "read-write":
        attrs = "primary"
    return {"target_session_attrs": attrs} if attrs else {}


def connect_kwargs(env: dict[str, str], *, read_only: bool = False) -> dict[str, Any]:
    """psycopg's ``connect`` arguments for the store that the POSTGRES_* settings ``env`` name (host and port may
    be libpq lists: ``h1,h2`` and ``5432,5433``)."""
    return {
        "dbname": env["POSTGRES_DBNAME"],
        "host": env["POSTGRES_HOST"],
        "port": env["POSTGRES_PORT"],
        "user": env["POSTGRES_USER"],
        "password": env["POSTGRES_PASSWORD"],
        **libpq_extras(env, read_only=read_only),
    }


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
        kwargs.update(libpq_extras(self.env))
        pool.kwargs = kwargs
        guard = _FailFast(self.datastore, _seconds(self.env, FAIL_FAST, 1.0))
        setattr(self.datastore, "get_connection", guard.get_connection)  # noqa: B010 - the recorders call it
        setattr(self.datastore, "fail_fast", guard)  # noqa: B010 - renew_pool resets it


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
    """Replace the connections of a PostgreSQL datastore's pool (anything else: nothing to do), and let
    the next call try at once."""
    if isinstance(datastore, PostgresDatastore):
        with contextlib.suppress(Exception):
            datastore.pool.drain()
        guard = getattr(datastore, "fail_fast", None)
        if isinstance(guard, _FailFast):
            guard.failed_at = None


__all__ = [
    "BOUNDED_POSTGRES_FACTORY",
    "BoundedPostgresFactory",
    "StoreProbe",
    "StoreUnreachable",
    "connect_kwargs",
    "libpq_extras",
    "renew_pool",
    "session_options",
]
