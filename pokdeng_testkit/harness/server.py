"""``pokdeng serve`` as a child process, and the stores it serves.

``ServerProcess`` runs ``python -m pokdeng_service.cli serve`` (the ``pokdeng serve`` command) on
127.0.0.1 at a fixed port with a token file and a fixed vault key, in its own session. ``kill()``
sends SIGKILL and reaps it; ``start()`` starts it again on the same port; ``close()`` ends it
(SIGTERM, then SIGKILL) and is safe to call twice. ``Store`` is where the events live: an SQLite
file or a PostgreSQL URL; ``Store.open_app()`` opens the same store in this process (for checks).

``postgres_databases()`` gives fresh PostgreSQL databases: from a URL (a fresh schema in its
database per call) or, without one, from a throwaway cluster (``pokdeng_testkit/pgserver.py``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ..keys import VAULT_KEY  # every server of a run (and the checks) opens the same sealed seeds
from ..ports import free_port

ROOT = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
FAST_RECONNECT = (
    ("grpc.initial_reconnect_backoff_ms", 50),
    ("grpc.min_reconnect_backoff_ms", 50),
    ("grpc.max_reconnect_backoff_ms", 250),
)


class ServerError(RuntimeError):
    """A server did not start, or exited on its own."""


@dataclass(frozen=True)
class Store:
    """Where a run's events are: ``kind`` "sqlite" (``path``) or "postgres" (``url``)."""

    kind: str
    path: str = ""
    url: str = ""

    @classmethod
    def sqlite(cls, path: str | Path) -> Store:
        return cls("sqlite", path=str(path))

    @classmethod
    def postgres(cls, url: str) -> Store:
        return cls("postgres", url=url)

    def serve_args(self) -> list[str]:
        return ["--db", self.path] if self.kind == "sqlite" else ["--postgres-url", self.url]

    def config(self) -> Any:
        from pokdeng_service.application.config import StoreConfig

        if self.kind == "sqlite":
            return StoreConfig(kind="sqlite", sqlite_path=self.path, vault_key=VAULT_KEY)
        return StoreConfig(kind="postgres", postgres_url=self.url, vault_key=VAULT_KEY)

    def open_app(self) -> Any:
        """The store opened in this process (close it when done)."""
        from pokdeng_service.application import PokdengApp

        config = self.config()
        return PokdengApp(config.env(0), vault=config.vault())

    def describe(self) -> str:
        if self.kind == "sqlite":
            return f"SQLite {self.path}"
        parts = urlsplit(self.url)
        return f"PostgreSQL {parts.hostname}:{parts.port}{parts.path}{'?' + parts.query if parts.query else ''}"


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a server: ours, without store settings that would override its arguments."""
    stores = ("POKDENG_DB", "POKDENG_POSTGRES", "POKDENG_VAULT", "POKDENG_PARTITION")
    env = {k: v for k, v in os.environ.items() if not k.startswith(stores)}
    env["POKDENG_VAULT_KEY"] = VAULT_KEY
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


NO_RATES = ("--rate-reads", "0", "--rate-commands", "0", "--rate-streams", "0")
"""No caller's rate (docs/operations.md, "Settings"): the harness's bots play at machine speed and its
baselines hammer the health check, as no person at a table does; a run's ``extra_args`` may set them again."""


@dataclass
class ServerProcess:
    """One ``pokdeng serve`` on 127.0.0.1:``port``, without callers' rates (``NO_RATES``); restartable on the
    same port."""

    store: Store
    tokens_file: Path
    log_path: Path
    port: int = 0
    workers: int = 16
    name: str = "server"
    extra_args: tuple[str, ...] = ()  # more flags of ``pokdeng serve``
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0
    kills: int = 0
    startup_seconds: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.port:
            self.port = free_port()

    @property
    def target(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def cpu_seconds(self) -> float | None:
        """The CPU time (user and system) the server process has used so far: from ``/proc`` (Linux); None
        elsewhere or when it is not running. Its projector is another process and is not counted."""
        if not self.running or self.proc is None:
            return None
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # (utime, stime: fields 14, 15)

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "pokdeng_service.cli",
            "serve",
            *self.store.serve_args(),
            "--host",
            HOST,
            "--port",
            str(self.port),
            "--tokens",
            str(self.tokens_file),
            "--workers",
            str(self.workers),
            *NO_RATES,
            *self.extra_args,
        ]

    def start(self, timeout: float = 60.0) -> float:
        """Start the server and wait until its health check answers SERVING; returns the seconds it took."""
        started = time.monotonic()
        self.spawn()
        self.wait_ready(started + timeout)
        took = time.monotonic() - started
        self.startup_seconds.append(took)
        return took

    def spawn(self) -> None:
        """Start the server process without waiting for it to serve."""
        if self.running:
            raise ServerError(f"{self.name} is already running")
        with open(self.log_path, "ab") as log:
            log.write(f"\n--- start {self.starts + 1} ---\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                self.command(),
                cwd=str(self.log_path.parent),
                env=child_env(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.starts += 1

    def wait_ready(self, deadline: float) -> None:
        with grpc.insecure_channel(self.target, options=FAST_RECONNECT) as channel:
            stub: Any = health_pb2_grpc.HealthStub(channel)
            while True:
                if self.proc is None or self.proc.poll() is not None:
                    raise ServerError(f"{self.name} exited during start-up:\n{self.log_tail()}")
                try:
                    answer = stub.Check(health_pb2.HealthCheckRequest(), timeout=0.5, wait_for_ready=True)
                except grpc.RpcError:
                    answer = None
                if answer is not None and answer.status == health_pb2.HealthCheckResponse.SERVING:
                    return
                if time.monotonic() > deadline:
                    raise ServerError(f"{self.name} not serving in time:\n{self.log_tail()}")
                time.sleep(0.02)

    def kill(self) -> None:
        """SIGKILL the server (its whole process group) and reap it."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        self.kills += 1

    def stop(self, grace: float = 10.0) -> int | None:
        """SIGTERM (the server's graceful shutdown), then SIGKILL after ``grace`` seconds; the exit code."""
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        return proc.returncode

    def close(self) -> None:
        """End the server whatever its state (for finalizers)."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def log_errors(self) -> list[str]:
        """Lines of the server's log that report an error (tracebacks' first lines)."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return []
        return [
            line
            for line in text.splitlines()
            if " ERROR " in line or line.startswith("Traceback") or '"level":"ERROR"' in line
        ]


@contextlib.contextmanager
def servers() -> Iterator[list[ServerProcess]]:
    """A list to put servers in: every one is closed on the way out, whatever happened."""
    running: list[ServerProcess] = []
    try:
        yield running
    finally:
        for server in running:
            server.close()


# --- PostgreSQL -----------------------------------------------------------------------------


def with_schema(url: str, schema: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, f"schema={schema}", ""))


@contextlib.contextmanager
def postgres_databases(url: str | None = None) -> Iterator[Callable[[], str]]:
    """A factory of fresh, empty PostgreSQL stores (URLs), all dropped on the way out.

    With ``url``: each store is a new schema in that database (``?schema=`` in the URL). Without:
    a throwaway cluster from ``pokdeng_testkit/pgserver.py`` (PostgreSQL binaries needed), one database each.
    """
    import psycopg
    from psycopg import sql

    cleanups: list[Callable[[], None]] = []
    if url:

        def new() -> str:
            schema = "pokdeng_h_" + uuid.uuid4().hex[:12]
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))

            def drop() -> None:
                with psycopg.connect(url, autocommit=True) as conn:
                    conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))

            cleanups.append(drop)
            return with_schema(url, schema)

        try:
            yield new
        finally:
            for cleanup in reversed(cleanups):
                with contextlib.suppress(Exception):
                    cleanup()
        return

    from ..pgserver import PostgresStartError, TemporaryPostgres, create_database, find_pg_bin_dir, unique_name

    bin_dir = find_pg_bin_dir()
    if bin_dir is None:
        raise PostgresStartError("PostgreSQL binaries not found: give a URL (--postgres-url) or install PostgreSQL")
    cluster = TemporaryPostgres(bin_dir)
    cluster.start()
    try:

        def new_db() -> str:
            name = unique_name("pokdeng_h_")
            create_database(cluster.admin, name, cluster.info.user)
            url: str = cluster.info.with_dbname(name).url
            return url

        yield new_db
    finally:
        cluster.stop()
