"""The read models in a process of their own, beside ``pokdeng serve``.

Following the log costs CPU for every event a server writes: reading the page, decoding, folding,
writing the views. In the server's own process it shares the one core that Python lets a process use
(the GIL) with the calls: under load about a sixth of the server's time. ``ProjectorProcess`` runs the
same work, ``ReadModels.run_in_background`` per partition, in a child process
(``python -m pokdeng_service.projector``), so that it runs on another core. Nothing else
changes: the views and their tracking position are in the partition's store as before, a page and
its position are one transaction (exactly once, whoever projects: ``readmodels.runner``), and the
server answers its queries from the views as they stand.

The child is told its stores on its standard input (one JSON line: each partition's store settings,
the poll interval and the log's format and level; URLs with passwords never appear on a command
line) and keeps reading it: when the server closes it, or dies however it dies, the child sees the
end of the file and stops. It starts a session of its own, so that a terminal's Ctrl-C reaches the
server only, which then stops it. If the child exits while the server runs, the server logs it and
starts another after a pause (1 s, doubling to 30 s while it keeps failing: ``restart_pause``); the views only lag
meanwhile, and the new child goes on from the tracked position. When the projection meets an error
(a store failing over), the child logs it and renews its connection pools, as the server's store
probe does for the server's; the projection retries by itself.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import IO, Any

from pokdeng_service.logs import stderr_for_children

log = logging.getLogger("pokdeng.readmodels")

RESTART_FIRST = 1.0  # seconds before the first restart of a child that exited
RESTART_MOST = 30.0  # the longest pause between restarts


def restart_pause(last: float | None, lived: float) -> float:
    """The pause before starting a child again: ``RESTART_FIRST`` the first time, or after a child that ran
    for ``RESTART_MOST`` s or more (it was not failing); else twice the ``last`` pause, at most ``RESTART_MOST``."""
    if last is None or lived >= RESTART_MOST:
        return RESTART_FIRST
    return min(last * 2, RESTART_MOST)


class ProjectorProcess:
    """A child process that keeps the read models of ``stores`` (one settings mapping per partition) up to date."""

    def __init__(
        self,
        stores: Sequence[Mapping[str, str]],
        *,
        interval: float = 0.1,
        log_format: str = "text",
        log_level: str = "INFO",
    ) -> None:
        self._order = json.dumps(
            {
                "stores": [dict(s) for s in stores],
                "interval": interval,
                "log_format": log_format,
                "log_level": log_level,
            }
        )
        self._child: subprocess.Popen[bytes] | None = None
        self._stopping = threading.Event()
        self._watcher: threading.Thread | None = None
        self._lock = threading.Lock()
        self._started_at = 0.0  # (time.monotonic) when the running child was started
        self.starts = 0  # children started so far (1 once running; more after restarts)

    @property
    def restarts(self) -> int:
        """Children started again after one exited (the counter ``pokdeng_read_models_restarts_total``)."""
        return max(0, self.starts - 1)

    def start(self) -> None:
        """Start the child, and a thread that starts another if it exits before ``stop``."""
        if self._watcher is not None:
            raise RuntimeError("the projector is already running")
        self._stopping.clear()
        self._spawn()
        self._watcher = threading.Thread(target=self._watch, name="pokdeng-projector-watch", daemon=True)
        self._watcher.start()

    def _spawn(self) -> None:
        with self._lock:
            if self._stopping.is_set():
                return
            child = subprocess.Popen(
                [sys.executable, "-P", "-m", "pokdeng_service.projector"],  # -P: not the working folder's modules
                stdin=subprocess.PIPE,
                stderr=stderr_for_children(),  # (the real standard error, not the pipe of the server's C code)
                start_new_session=True,
                close_fds=True,
            )
            assert child.stdin is not None
            self._child = child
            self._started_at = time.monotonic()
            self.starts += 1
            try:
                child.stdin.write(self._order.encode() + b"\n")
                child.stdin.flush()
            except OSError as error:  # (it died at once: the watcher sees it exit and starts another)
                log.warning("read models: projector process %d did not take its orders: %s", child.pid, error)
                return
        log.info("read models: projecting in process %d", child.pid)

    def _watch(self) -> None:
        pause: float | None = None
        while not self._stopping.is_set():
            child = self._child
            if child is None:
                return
            code = child.wait()
            if self._stopping.is_set():
                return
            pause = restart_pause(pause, time.monotonic() - self._started_at)
            log.warning(
                "read models: projector process %d exited with code %s; restarting in %.0f s", child.pid, code, pause
            )
            if self._stopping.wait(pause):
                return
            try:
                self._spawn()
            except OSError as error:
                log.warning("read models: could not start a projector process: %s", error)

    def stop(self, timeout: float = 3.0) -> None:
        """Stop the child (the end of its input, then SIGKILL after ``timeout`` s: it keeps nothing that a kill
        loses, a page and its position being one transaction) and the watcher. Safe twice."""
        self._stopping.set()
        with self._lock:
            child, self._child = self._child, None
        if child is not None:
            _close(child.stdin)
            try:
                child.wait(timeout)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        watcher, self._watcher = self._watcher, None
        if watcher is not None and watcher is not threading.current_thread():
            watcher.join(timeout)


def _close(stream: IO[bytes] | None) -> None:
    if stream is not None:
        with contextlib.suppress(OSError):  # (a child already gone: a broken pipe)
            stream.close()


# --- the child -----------------------------------------------------------------------------------


def run(order: Mapping[str, Any], stopping: threading.Event) -> int:
    """Project every store of ``order`` until ``stopping`` is set (the end of the input, or SIGTERM)."""
    from pokdeng_service.application import PokdengApp
    from pokdeng_service.readmodels.runner import ReadModels
    from pokdeng_service.store.bounded import renew_pool

    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # (the server stops its child; a terminal's Ctrl-C is its)
    interval = float(order.get("interval", 0.1))
    apps, models = [], []
    try:
        for settings in order["stores"]:
            if stopping.is_set():  # (the server went while this child was starting)
                return 0
            app = PokdengApp(dict(settings))
            apps.append(app)
            views = ReadModels(dict(settings))
            models.append(views)
            views.run_in_background(app, interval)
        log.info("read models: projecting %d partition(s) for the server %d", len(models), os.getppid())
        reported: list[BaseException | None] = [None] * len(models)
        while not stopping.wait(0.5):
            for k, views in enumerate(models):
                error = views.error
                if error is not None and error is not reported[k]:
                    log.warning("read models: partition %d: %s (the projection retries)", k, error)
                    # (a store that failed over: the pools' connections go to the old server; new ones
                    # find the new primary, as the server's own pools are renewed by its store probe)
                    renew_pool(getattr(apps[k].recorder, "datastore", None))
                    renew_pool(getattr(views.recorder, "datastore", None))
                reported[k] = error
    finally:
        for views in models:
            with contextlib.suppress(Exception):
                views.close()  # (its thread, then its store's connections)
        for app in apps:
            with contextlib.suppress(Exception):
                app.close()
    return 0


def main() -> int:
    line = sys.stdin.buffer.readline()
    if not line.strip():
        return 0  # the server was gone before it said anything
    stopping = threading.Event()

    def wait_for_the_end() -> None:  # (from the start: a server that dies while this child imports is seen)
        while sys.stdin.buffer.read(4096):
            pass
        stopping.set()

    threading.Thread(target=wait_for_the_end, name="pokdeng-projector-input", daemon=True).start()
    order = json.loads(line)
    from pokdeng_service.logs import configure_logging

    handler = configure_logging(order.get("log_format", "text"), order.get("log_level", "INFO"))
    code = run(order, stopping)
    handler.close()  # (the last lines written)
    sys.stderr.flush()
    # Every store is closed: leave without the interpreter's finalisation, which joins what is left of the
    # connection pools' threads (from Python 3.13 that can wait long after a server died).
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
