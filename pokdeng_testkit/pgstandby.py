"""A primary and its synchronous streaming standby: two throwaway PostgreSQL clusters for failover tests.

Nothing in here is imported by the product code. ``ReplicatedPostgres(bin_dir).start()``:

1. the primary, a ``TemporaryPostgres`` (``pokdeng_testkit/pgserver.py``: a temporary folder, a loopback port, a
   direct child process stopped by its pid) with ``wal_level=replica`` and ``synchronous_commit=on``, a
   ``replicator`` role with REPLICATION and its ``pg_hba.conf`` line for 127.0.0.1;
2. the standby: ``pg_basebackup -R -X stream`` of the primary into a second temporary folder (the
   ``-R`` writes ``standby.signal`` and ``primary_conninfo``), started on a port of its own;
3. then ``synchronous_standby_names = '*'`` on the primary (``ALTER SYSTEM``: a commit returns only once
   a standby has its WAL), and waits until ``pg_stat_replication`` shows the standby ``streaming`` and
   ``sync``.

``url`` is libpq's multi-host URL of both with ``target_session_attrs=read-write``: a session goes to
whichever is the writable one. ``crash_primary()`` is ``pg_ctl stop -m immediate`` done by pid (SIGQUIT
to the postmaster, then reaped); ``promote()`` runs ``pg_ctl promote`` on the standby and waits until
it takes writes. ``stop()`` stops both and removes their folders, whatever state they are in.

The standby's copy of the configuration predates ``synchronous_standby_names``: once promoted it has
no standby of its own and must not wait for one.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any

from psycopg import sql

from .pgserver import (
    PostgresServerInfo,
    PostgresStartError,
    TemporaryPostgres,
    find_pg_bin_dir,
)
from .ports import free_port

REPLICATOR = "replicator"
PRIMARY_SETTINGS = {
    "wal_level": "replica",
    "max_wal_senders": "5",
    "synchronous_commit": "on",
    "wal_sender_timeout": "5s",
}
STANDBY_SETTINGS = {"hot_standby": "on", "wal_receiver_status_interval": "1s"}


class StandbyPostgres(TemporaryPostgres):
    """A hot standby of ``primary``, made with ``pg_basebackup -R``; the primary's roles and passwords."""

    def __init__(self, primary: TemporaryPostgres, replication_password: str, **options: Any) -> None:
        super().__init__(primary.bin_dir, settings=STANDBY_SETTINGS, **options)
        self.primary = primary
        self.replication_password = replication_password
        self._superuser_password = primary._superuser_password

    def start(self) -> PostgresServerInfo:
        started = time.monotonic()
        try:
            self._make_tmpdir()
            self._base_backup()
            port = free_port()
            self._start_postmaster(port)
            self._info = replace(self.primary.info, port=port)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - started
        return self.info

    def _base_backup(self) -> None:
        kwargs = self._popen_kwargs()
        kwargs["env"]["PGPASSWORD"] = self.replication_password
        command = [
            str(self.bin_dir / "pg_basebackup"),
            *("-D", str(self.data_dir), "-h", "127.0.0.1", "-p", str(self.primary.port), "-U", REPLICATOR),
            *("-X", "stream", "-R", "-c", "fast", "--no-sync"),
        ]
        result = subprocess.run(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120, check=False, **kwargs
        )
        if result.returncode != 0:
            out = result.stdout.decode(errors="replace")
            raise PostgresStartError(f"pg_basebackup failed with code {result.returncode}:\n{out}")

    def promote(self, timeout: float = 30.0) -> None:
        """``pg_ctl promote`` and wait until the server takes writes."""
        result = subprocess.run(
            [str(self.bin_dir / "pg_ctl"), "promote", "-w", "-t", str(int(timeout)), "-D", str(self.data_dir)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout + 10,
            check=False,
            **self._popen_kwargs(),
        )
        if result.returncode != 0:
            raise PostgresStartError(f"pg_ctl promote failed: {result.stdout.decode(errors='replace')}")
        deadline = time.monotonic() + timeout
        while True:
            with self.admin.connect() as conn:
                row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
            if row is not None and not row[0]:
                return
            if time.monotonic() > deadline:
                raise PostgresStartError("the standby is still in recovery after pg_ctl promote")
            time.sleep(0.05)


class ReplicatedPostgres:
    """A primary and a synchronous standby on loopback (see the module's docstring)."""

    def __init__(self, bin_dir: Path) -> None:
        self.primary = TemporaryPostgres(bin_dir, settings=PRIMARY_SETTINGS)
        self.replication_password = secrets.token_hex(12)
        self.standby = StandbyPostgres(self.primary, self.replication_password)
        self.promoted = False

    @property
    def info(self) -> PostgresServerInfo:
        return self.primary.info

    @property
    def url(self) -> str:
        """``postgresql://pokdeng:pokdeng@127.0.0.1:P1,127.0.0.1:P2/pokdeng_test?target_session_attrs=read-write``."""
        head = self.primary.info.url.rsplit("@", 1)[0]
        hosts = f"127.0.0.1:{self.primary.port},127.0.0.1:{self.standby.port}"
        return f"{head}@{hosts}/{self.primary.info.dbname}?target_session_attrs=read-write"

    def start(self, timeout: float = 30.0) -> ReplicatedPostgres:
        try:
            self.primary.start()
            with self.primary.admin.connect() as conn:
                conn.execute(
                    sql.SQL("CREATE ROLE {} WITH REPLICATION LOGIN PASSWORD {}").format(
                        sql.Identifier(REPLICATOR), sql.Literal(self.replication_password)
                    )
                )
                hba = self.primary.data_dir / "pg_hba.conf"
                with open(hba, "a", encoding="utf-8") as lines:
                    lines.write(f"host replication {REPLICATOR} 127.0.0.1/32 scram-sha-256\n")
                conn.execute("SELECT pg_reload_conf()")
            self.standby.start()
            with self.primary.admin.connect() as conn:  # (not before: the set-up's own commits would wait for it)
                conn.execute("ALTER SYSTEM SET synchronous_standby_names = '*'")
                conn.execute("SELECT pg_reload_conf()")
            self.wait_synchronous(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def replication(self) -> list[tuple[str, str]]:
        """The primary's standbys: (state, sync_state) each."""
        with self.primary.admin.connect() as conn:
            rows = conn.execute("SELECT state, sync_state FROM pg_stat_replication").fetchall()
        return [(str(state), str(sync)) for state, sync in rows]

    def wait_synchronous(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while ("streaming", "sync") not in self.replication():
            if time.monotonic() > deadline:
                raise PostgresStartError(
                    f"the standby is not a streaming synchronous standby after {timeout:.0f}s: {self.replication()}"
                    f"\n--- standby log ---\n{self.standby.log_tail()}"
                )
            time.sleep(0.05)

    def crash_primary(self) -> None:
        """``pg_ctl stop -m immediate`` by pid: SIGQUIT to the postmaster, which exits at once; reaped."""
        proc, self.primary.proc = self.primary.proc, None
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGQUIT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    def promote(self) -> None:
        self.standby.promote()
        self.promoted = True

    def writable(self) -> PostgresServerInfo:
        """The server that takes writes now."""
        return self.standby.info if self.promoted else self.primary.info

    def stop(self) -> None:
        self.standby.stop()
        self.primary.stop()

    def __enter__(self) -> ReplicatedPostgres:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


@contextlib.contextmanager
def replicated_postgres(bin_dir: Path | None = None) -> Iterator[ReplicatedPostgres]:
    """A started ``ReplicatedPostgres`` (raises ``PostgresStartError`` without the binaries), stopped on the way out."""
    bin_dir = bin_dir or find_pg_bin_dir()
    if bin_dir is None:
        raise PostgresStartError("PostgreSQL binaries (initdb, postgres, pg_basebackup) not found")
    pair = ReplicatedPostgres(bin_dir)
    pair.start()
    try:
        yield pair
    finally:
        pair.stop()
