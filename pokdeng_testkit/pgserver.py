"""Throwaway PostgreSQL clusters for the test-suite.

Used by ``tests/conftest.py``; nothing in here is imported by the product code.

A :class:`TemporaryPostgres` runs ``initdb`` into a fresh temporary folder and
starts ``postgres`` as a *direct child process* listening on 127.0.0.1 on a free
port (plus a unix socket inside the temporary folder).  It is stopped by
signalling that pid and waiting for it, then the folder is removed.

When the current user is root, the binaries are run as the ``postgres`` OS user
(PostgreSQL refuses to run as root).  The server is not daemonised through
``pg_ctl`` on purpose: keeping the postmaster as our own child lets us reap it
reliably, even on machines whose PID 1 does not reap orphans.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import secrets
import shutil
import signal
import stat
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import psycopg
from psycopg import sql

from .ports import free_port

TEST_USER = "pokdeng"
TEST_PASSWORD = "pokdeng"
TEST_DBNAME = "pokdeng_test"
SUPERUSER = "postgres"
PER_TEST_DB_PREFIX = "pokdeng_t_"
PG_BINDIR_ENV = "POKDENG_TEST_PG_BINDIR"

_PG_LIB_ROOT = Path("/usr/lib/postgresql")


class PostgresStartError(RuntimeError):
    """The throwaway cluster could not be initialised or started."""


@dataclass(frozen=True)
class PostgresServerInfo:
    """Where a PostgreSQL database can be reached, and as whom."""

    host: str
    port: int
    user: str
    password: str
    dbname: str
    #: Non-empty when isolation is by schema rather than by database (external servers
    #: whose user may not create databases): used as search_path and POSTGRES_SCHEMA.
    schema: str = ""

    @property
    def url(self) -> str:
        """``postgresql://user:password@host:port/dbname``."""
        return (
            f"postgresql://{quote(self.user, safe='')}:{quote(self.password, safe='')}"
            f"@{self.host}:{self.port}/{quote(self.dbname, safe='')}"
        )

    def connect_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for :func:`psycopg.connect`."""
        kwargs: dict[str, Any] = {
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password": self.password,
            "dbname": self.dbname,
            "connect_timeout": 10,
        }
        if self.schema:
            kwargs["options"] = f"-c search_path={self.schema}"
        return kwargs

    def connect(self, *, autocommit: bool = True) -> psycopg.Connection[Any]:
        return psycopg.connect(autocommit=autocommit, **self.connect_kwargs())

    def with_dbname(self, dbname: str) -> PostgresServerInfo:
        return replace(self, dbname=dbname)

    def eventsourcing_env(self) -> dict[str, str]:
        """Settings for ``eventsourcing.application.Application(env=...)``."""
        env = {
            "PERSISTENCE_MODULE": "eventsourcing.postgres",
            "POSTGRES_DBNAME": self.dbname,
            "POSTGRES_HOST": self.host,
            "POSTGRES_PORT": str(self.port),
            "POSTGRES_USER": self.user,
            "POSTGRES_PASSWORD": self.password,
            "POSTGRES_CONNECT_TIMEOUT": "10",
        }
        if self.schema:
            env["POSTGRES_SCHEMA"] = self.schema
        return env

    @classmethod
    def from_url(cls, url: str) -> PostgresServerInfo:
        """Parse ``postgresql://user:pw@host:port/dbname`` (all parts required but the port)."""
        parts = urlsplit(url)
        if parts.scheme not in ("postgres", "postgresql"):
            raise ValueError(f"not a postgresql:// URL: {url!r}")
        dbname = unquote(parts.path.lstrip("/"))
        if not (parts.hostname and parts.username and dbname):
            raise ValueError(f"the URL needs a user, a host and a database name: {url!r}")
        return cls(
            host=parts.hostname,
            port=parts.port or 5432,
            user=unquote(parts.username),
            password=unquote(parts.password or ""),
            dbname=dbname,
        )


# --------------------------------------------------------------------------- #
# Finding the binaries
# --------------------------------------------------------------------------- #


def _version_key(path: Path) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", path.name)) or (0,)


def find_pg_bin_dir() -> Path | None:
    """The folder holding ``initdb`` and ``postgres``, or None.

    ``$POKDENG_TEST_PG_BINDIR`` if set (and only it), else the highest
    ``/usr/lib/postgresql/<version>/bin``, else the folder of ``pg_ctl`` on PATH.
    """
    override = os.environ.get(PG_BINDIR_ENV, "").strip()
    if override:
        bin_dir = Path(override)
        return bin_dir if all(os.access(bin_dir / exe, os.X_OK) for exe in ("initdb", "postgres")) else None
    candidates: list[Path] = []
    if _PG_LIB_ROOT.is_dir():
        versions = sorted((p for p in _PG_LIB_ROOT.iterdir() if p.is_dir()), key=_version_key, reverse=True)
        candidates.extend(v / "bin" for v in versions)
    on_path = shutil.which("pg_ctl")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    for bin_dir in candidates:
        if all(os.access(bin_dir / exe, os.X_OK) for exe in ("initdb", "postgres")):
            return bin_dir
    return None


# --------------------------------------------------------------------------- #
# Helpers
# --------------------------------------------------------------------------- #


def _traversable_by_others(path: Path) -> bool:
    """True if every folder from / down to ``path`` has the x bit for 'others'."""
    path = path.resolve()
    return all(os.stat(p).st_mode & stat.S_IXOTH for p in (path, *path.parents))


def wait_until_ready(
    info: PostgresServerInfo,
    timeout: float = 30.0,
    proc: subprocess.Popen[bytes] | None = None,
) -> None:
    """Poll with psycopg until ``select 1`` works, or raise PostgresStartError."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise PostgresStartError(f"postgres exited early with code {proc.returncode}")
        try:
            with psycopg.connect(**{**info.connect_kwargs(), "connect_timeout": 2}, autocommit=True) as conn:
                conn.execute("select 1")
                return
        except psycopg.OperationalError as exc:
            last_error = exc
            time.sleep(0.05)
    raise PostgresStartError(f"PostgreSQL not ready after {timeout:.0f}s: {last_error}")


def create_database(admin: PostgresServerInfo, dbname: str, owner: str) -> None:
    with admin.connect() as conn:
        conn.execute(
            sql.SQL("CREATE DATABASE {} OWNER {} TEMPLATE template0 ENCODING 'UTF8'").format(
                sql.Identifier(dbname), sql.Identifier(owner)
            )
        )


def drop_database(admin: PostgresServerInfo, dbname: str) -> None:
    """Drop ``dbname``, disconnecting whoever is still using it (PostgreSQL 13+)."""
    with admin.connect() as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(dbname)))


def create_schema(info: PostgresServerInfo, schema: str) -> None:
    with psycopg.connect(**{**info.connect_kwargs(), "options": ""}, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))


def drop_schema(info: PostgresServerInfo, schema: str) -> None:
    with psycopg.connect(**{**info.connect_kwargs(), "options": ""}, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def unique_name(prefix: str = PER_TEST_DB_PREFIX) -> str:
    return prefix + uuid.uuid4().hex[:16]


# --------------------------------------------------------------------------- #
# The throwaway cluster
# --------------------------------------------------------------------------- #


class TemporaryPostgres:
    """A PostgreSQL cluster in a temporary folder, alive between start() and stop().

    ``admin`` (superuser, database ``postgres``) and ``info`` (user ``pokdeng`` /
    password ``pokdeng``, database ``pokdeng_test``) are set once started. Host
    connections use scram-sha-256, so passwords are really checked.
    """

    def __init__(
        self,
        bin_dir: Path,
        *,
        max_connections: int = 200,
        startup_timeout: float = 30.0,
        port_attempts: int = 3,
        settings: dict[str, str] | None = None,
    ) -> None:
        self.bin_dir = bin_dir
        self.settings = dict(settings or {})  # over the defaults of _start_postmaster (pokdeng_testkit/pgstandby.py)
        self.max_connections = max_connections
        self.startup_timeout = startup_timeout
        self.port_attempts = port_attempts
        self.tmpdir: Path | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.port: int | None = None
        self._superuser_password = secrets.token_hex(16)
        self._run_as: pwd.struct_passwd | None = None
        self._admin: PostgresServerInfo | None = None
        self._info: PostgresServerInfo | None = None
        self.startup_seconds: float | None = None

    # -- public API ---------------------------------------------------------

    @property
    def admin(self) -> PostgresServerInfo:
        if self._admin is None:
            raise RuntimeError("TemporaryPostgres is not started")
        return self._admin

    @property
    def info(self) -> PostgresServerInfo:
        if self._info is None:
            raise RuntimeError("TemporaryPostgres is not started")
        return self._info

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @property
    def data_dir(self) -> Path:
        assert self.tmpdir is not None
        return self.tmpdir / "data"

    @property
    def socket_dir(self) -> Path:
        assert self.tmpdir is not None
        return self.tmpdir / "sock"

    @property
    def log_file(self) -> Path:
        assert self.tmpdir is not None
        return self.tmpdir / "postgres.log"

    def start(self) -> PostgresServerInfo:
        started = time.monotonic()
        try:
            self._make_tmpdir()
            self._initdb()
            last_error: Exception | None = None
            for _ in range(self.port_attempts):
                try:
                    self._start_postmaster(free_port())
                    break
                except PostgresStartError as exc:  # e.g. the port was taken in the meantime
                    last_error = exc
                    self._stop_postmaster()
            else:
                raise PostgresStartError(f"{last_error}\n--- postgres log ---\n{self.log_tail()}")
            self._create_test_role_and_db()
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - started
        return self.info

    def stop(self) -> None:
        """Stop the server (SIGINT = fast shutdown, then SIGKILL) and remove the folder."""
        self._stop_postmaster()
        if self.tmpdir is not None:
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            self.tmpdir = None

    def halt(self) -> None:
        """Stop the server (a fast shutdown: its clients are disconnected), keeping its data and its port."""
        self._stop_postmaster()

    def resume(self, timeout: float = 30.0) -> None:
        """Start a halted server again, on the same port and data."""
        if self.proc is not None:
            return
        assert self.port is not None and self.tmpdir is not None, "never started"
        self._start_postmaster(self.port)
        wait_until_ready(self.info, timeout=timeout, proc=self.proc)

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except (OSError, AssertionError):
            return "(no log)"

    def __enter__(self) -> PostgresServerInfo:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- internals ----------------------------------------------------------

    def _make_tmpdir(self) -> None:
        if os.geteuid() == 0:
            try:
                self._run_as = pwd.getpwnam("postgres")
            except KeyError:
                raise PostgresStartError(
                    "running as root but there is no 'postgres' OS user to run PostgreSQL as"
                ) from None
        base = Path(tempfile.gettempdir())
        if self._run_as is not None and not _traversable_by_others(base):
            base = Path("/tmp")  # the postgres user must be able to reach the folder
        self.tmpdir = Path(tempfile.mkdtemp(prefix="pokdeng-pg-", dir=base))
        self.data_dir.mkdir(mode=0o700)
        self.socket_dir.mkdir(mode=0o700)
        self.log_file.touch(mode=0o600)
        if self._run_as is not None:
            uid, gid = self._run_as.pw_uid, self._run_as.pw_gid
            for p in (self.tmpdir, self.data_dir, self.socket_dir, self.log_file):
                os.chown(p, uid, gid)
        os.chmod(self.data_dir, 0o700)

    def _popen_kwargs(self) -> dict[str, Any]:
        assert self.tmpdir is not None
        env = {
            "PATH": f"{self.bin_dir}:/usr/bin:/bin",
            "LC_ALL": "C",
            "LANG": "C",
            "TZ": "UTC",
        }
        kwargs: dict[str, Any] = {"cwd": str(self.tmpdir), "env": env, "stdin": subprocess.DEVNULL}
        if self._run_as is not None:
            env["HOME"] = str(self.tmpdir)
            env["USER"] = env["LOGNAME"] = self._run_as.pw_name
            kwargs.update(user=self._run_as.pw_uid, group=self._run_as.pw_gid, extra_groups=[])
        return kwargs

    def _initdb(self) -> None:
        assert self.tmpdir is not None
        pwfile = self.tmpdir / "pwfile"
        pwfile.write_text(self._superuser_password + "\n")
        os.chmod(pwfile, 0o600)
        if self._run_as is not None:
            os.chown(pwfile, self._run_as.pw_uid, self._run_as.pw_gid)
        cmd = [
            str(self.bin_dir / "initdb"),
            "-D",
            str(self.data_dir),
            "-U",
            SUPERUSER,
            f"--pwfile={pwfile}",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "--encoding=UTF8",
            "--no-locale",
            "--no-sync",
            "--no-instructions",
        ]
        try:
            result = subprocess.run(
                cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120, check=False, **self._popen_kwargs()
            )
        finally:
            pwfile.unlink(missing_ok=True)
        if result.returncode != 0:
            out = result.stdout.decode(errors="replace")
            raise PostgresStartError(f"initdb failed with code {result.returncode}:\n{out}")

    def _start_postmaster(self, port: int) -> None:
        self.port = port
        settings = {
            "listen_addresses": "127.0.0.1",
            "port": str(port),
            "unix_socket_directories": str(self.socket_dir),
            "max_connections": str(self.max_connections),
            # Test-only speed-ups: losing this cluster on a crash is fine.
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "shared_buffers": "64MB",
            "logging_collector": "off",
            "log_min_messages": "warning",
            "timezone": "UTC",
            **self.settings,
        }
        cmd = [str(self.bin_dir / "postgres"), "-D", str(self.data_dir)]
        for key, value in settings.items():
            cmd += ["-c", f"{key}={value}"]
        log = open(self.log_file, "ab")  # noqa: SIM115 - handed to the child
        try:
            self.proc = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a Ctrl-C in the terminal is ours to forward
                **self._popen_kwargs(),
            )
        finally:
            log.close()
        self._admin = PostgresServerInfo(
            host="127.0.0.1", port=port, user=SUPERUSER, password=self._superuser_password, dbname="postgres"
        )
        wait_until_ready(self._admin, timeout=self.startup_timeout, proc=self.proc)

    def _create_test_role_and_db(self) -> None:
        with self.admin.connect() as conn:
            conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN CREATEDB PASSWORD {}").format(
                    sql.Identifier(TEST_USER), sql.Literal(TEST_PASSWORD)
                )
            )
        create_database(self.admin, TEST_DBNAME, TEST_USER)
        assert self.port is not None
        self._info = PostgresServerInfo(
            host="127.0.0.1", port=self.port, user=TEST_USER, password=TEST_PASSWORD, dbname=TEST_DBNAME
        )

    def _stop_postmaster(self, timeout: float = 15.0) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            # SIGINT = "fast" shutdown: roll back open transactions, disconnect clients.
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                # SIGQUIT = "immediate" shutdown, then give up politely and kill.
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGQUIT)
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    # The postmaster leads its own session/process group (start_new_session).
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()


@contextlib.contextmanager
def temporary_postgres(bin_dir: Path | None = None) -> Iterator[TemporaryPostgres]:
    """Context manager around :class:`TemporaryPostgres` (raises if no binaries)."""
    bin_dir = bin_dir or find_pg_bin_dir()
    if bin_dir is None:
        raise PostgresStartError("PostgreSQL binaries (initdb, postgres) not found")
    server = TemporaryPostgres(bin_dir)
    server.start()
    try:
        yield server
    finally:
        server.stop()
