"""Stores for the tests of the production rules: played SQLite files, folder snapshots, and running
the ``pokdeng`` command as an unprivileged user (so that read-only permissions are really enforced).
"""

from __future__ import annotations

import hashlib
import os
import random
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pokdeng_service.cli import main

from ..service import play

NOBODY = 65534


@dataclass
class Played:
    """A store with closed rounds (``closed``) and one round left open (``open_round``)."""

    db: Path
    closed: list[str]
    open_round: str


def play_rounds(app: Any, rounds: int = 3, prefix: str = "cli") -> tuple[list[str], str]:
    """Wallets ann and ben, kingmaker rounds at table km, then a classic round left open at table open."""
    d = play.Driver(app, prefix=prefix, chooser=play.Chooser(random.Random(1)))
    play.open_wallets(d, ["ann", "ben"])
    play.open_table(d, "km", "kingmaker", [(1, "ann"), (2, "ben")])
    closed = []
    for _ in range(rounds):
        round_id = play.start_round(d, "km", "cli")
        play.seat_bets(d, round_id, 300)
        play.drive_round(d, round_id)
        closed.append(round_id)
    play.open_table(d, "open", "classic", [(1, "ann")])
    open_round = play.start_round(d, "open")
    play.seat_bets(d, open_round, 100)
    return closed, open_round


@dataclass
class Player:
    """Plays rounds at its own table in a thread until stopped (a server's writes during a backup)."""

    app: Any
    table: str = "busy"
    rounds: int = 0
    error: BaseException | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        d = play.Driver(self.app, prefix="busy", chooser=play.Chooser(random.Random(2)))
        play.open_wallets(d, ["cat", "dan"])
        play.open_table(d, self.table, "kingmaker", [(1, "cat"), (2, "dan")])

        def run() -> None:
            try:
                while not self._stop.is_set():
                    round_id = play.start_round(d, self.table, "busy")
                    play.seat_bets(d, round_id, 100)
                    play.drive_round(d, round_id)
                    self.rounds += 1
            except BaseException as error:  # reported by stop()
                self.error = error

        self._thread = threading.Thread(target=run, name="player", daemon=True)
        self._thread.start()

    def wait_for(self, rounds: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while self.rounds < rounds and self.error is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert self.error is None, self.error
        assert self.rounds >= rounds, f"only {self.rounds} rounds in {timeout} s"

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def stop(self) -> int:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
        assert self.error is None, self.error
        return self.rounds


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with the SHA-256 of its content (folders as ``<dir>``)."""
    out = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        out[name] = "<dir>" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str


def run_cli(argv: list[str], *, unprivileged: bool = False) -> Ran:
    """``pokdeng ARGV`` in a forked child (as user ``nobody`` when we are root and ``unprivileged``),
    its output captured. Run the same commands once in this process first, so that the child finds
    every module it needs already imported (``nobody`` may not read the interpreter's folders)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: never returns into pytest
            code = 99
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
                sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
                if unprivileged and os.geteuid() == 0:
                    os.setgroups([])
                    os.setgid(NOBODY)
                    os.setuid(NOBODY)
                code = main(argv)
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        out.seek(0)
        err.seek(0)
        return Ran(os.waitstatus_to_exitcode(status), out.read().decode(), err.read().decode())


def world_readable_folder() -> Path:
    """A new folder that user ``nobody`` can reach (tmp_path's parents are private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="pokdeng-ro-", dir="/tmp"))
    folder.chmod(0o755)
    return folder
