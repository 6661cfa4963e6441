"""``StderrCapture``: what C code writes to file descriptor 2 (the gRPC core's lines) read from a pipe by a
thread and turned into ``grpc.core`` records, cut, escaped and rate-limited like the rest.
"""

from __future__ import annotations

import atexit
import contextlib
import faulthandler
import logging
import os
import re
import sys
import threading
from typing import IO

from pokdeng_service.logs.ratelimit import RateLimit
from pokdeng_service.logs.writer import BatchingHandler

_GLOG = re.compile(r"^([IWEF])(\d{4} \d\d:\d\d:\d\d\.\d+)\s+(\d+)\s+([^\s\]]+:\d+)\]\s?(.*)$", re.DOTALL)


_SEVERITY = {"I": logging.INFO, "W": logging.WARNING, "E": logging.ERROR, "F": logging.CRITICAL}


NATIVE_RATE = 10.0  # the gRPC core's lines a second, per source file (a burst of 20)


NATIVE_LINE = 16 * 1024  # bytes of a line that never ends, before it is taken as one


class StderrCapture:
    """File descriptor 2 as a pipe, read by a thread of its own: each line that C code writes there (the
    gRPC core's, through absl; BoringSSL's; any library's) becomes a record of ``logger`` (``grpc.core``)
    in the log's own stream, format and bounds. A line in the gRPC core's format keeps its severity
    (I, W, E, F: INFO, WARNING, ERROR, CRITICAL) and its source file as the ``source`` field; any other
    line is a WARNING. At most ``NATIVE_RATE`` lines a second per source file are written (``RateLimit``,
    registered until ``close``).

    Python's own ``sys.stderr`` (and with it the log's handler, ``print(..., file=sys.stderr)`` and the
    tracebacks of uncaught errors) is pointed at a copy of the original descriptor, ``original``, so it
    does not go through the pipe; so is ``faulthandler`` (enabled: a crash's Python tracebacks reach the
    real standard error even if the pipe's last lines are lost with the process). Child processes are to be
    given ``original`` as their standard error (``stderr_for_children``). ``close`` (at exit) puts the
    original back on descriptor 2 and writes what was left in the pipe."""

    def __init__(self, logger: str = "grpc.core", rate: float = NATIVE_RATE) -> None:
        self.logger = logging.getLogger(logger)
        self.limit = RateLimit(logger, rate, 2 * rate, logger=logger, keys=256)
        sys.stderr.flush()
        self.original = os.dup(2)
        os.set_inheritable(self.original, False)
        self.stream: IO[str] = open(  # noqa: SIM115 (it lives as long as the process writes to it)
            self.original, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False
        )
        # Python's writers to the original first (the same file as descriptor 2 until the pipe takes it):
        # no line of theirs goes through the pipe
        self._previous = sys.stderr
        for handler in logging.getLogger().handlers:
            if isinstance(handler, BatchingHandler) and handler.stream is self._previous:
                handler.stream = self.stream
        sys.stderr = self.stream
        faulthandler.enable(file=self.stream)
        read, write = os.pipe()
        os.dup2(write, 2)
        os.close(write)
        self._read = read
        self._thread = threading.Thread(target=self._run, name="pokdeng-stderr", daemon=True)
        self._thread.start()
        self.limit.register()

    def _run(self) -> None:
        pending = b""
        while True:
            try:
                chunk = os.read(self._read, 65536)
            except OSError:
                break
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            if len(pending) > NATIVE_LINE:  # (a line that never ends is taken as it is)
                lines.append(pending)
                pending = b""
            for line in lines:
                self.line(line)
        if pending:
            self.line(pending)
        with contextlib.suppress(OSError):
            os.close(self._read)

    def line(self, raw: bytes) -> None:
        """One line of C code's standard error, as a record (if its source is within its rate)."""
        text = raw.decode("utf-8", "replace").rstrip("\r")
        if not text.strip():
            return
        found = _GLOG.match(text)
        if found:
            severity, _when, thread, source, message = found.groups()
            level, fields = _SEVERITY[severity], {"source": source, "thread": int(thread)}
        else:
            level, source, message, fields = logging.WARNING, "", text, {}
        if not self.logger.isEnabledFor(level) or not self.limit.allow(source.rpartition(":")[0] or "-"):
            return
        record = self.logger.makeRecord(self.logger.name, level, source, 0, "%s", (message,), None)
        record.fields = fields
        self.logger.handle(record)

    def close(self, timeout: float = 2.0) -> None:
        """Put the original standard error back on descriptor 2 (and ``sys.stderr``) and let the thread write
        what the pipe held. Safe twice."""
        global _CAPTURE
        with contextlib.suppress(OSError):
            os.dup2(self.original, 2)  # (the pipe's last writer gone: the thread reads to its end)
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        self.limit.unregister()  # (its last summary, while the log's handler still writes)
        if sys.stderr is self.stream:
            sys.stderr = self._previous
        if _CAPTURE is self:
            _CAPTURE = None


_CAPTURE: StderrCapture | None = None


def capture_stderr() -> StderrCapture | None:
    """Take descriptor 2 for the log (``StderrCapture``; ``pokdeng serve``, once its settings are checked and
    its store open, before the gRPC server is made): what C code writes there becomes records. The root
    logger's ``BatchingHandler`` keeps writing to the real standard error. None if there is no descriptor
    2 to take (C code's lines then go where they went). Released at exit, or by its ``close``."""
    global _CAPTURE
    if _CAPTURE is None:
        try:
            _CAPTURE = StderrCapture()
        except OSError as error:
            print(f"pokdeng: standard error not captured: {error}", file=sys.stderr)
            return None
        atexit.register(_CAPTURE.close)  # (before the handler's close: what the pipe held goes out too)
    return _CAPTURE


def stderr_for_children() -> int | None:
    """What a child process is to be given as its standard error: the original descriptor while
    ``StderrCapture`` holds descriptor 2 (not the pipe), else None (it inherits standard error)."""
    return _CAPTURE.original if _CAPTURE is not None else None


def quiet_grpc_core(verbosity: str = "ERROR") -> None:
    """Set ``GRPC_VERBOSITY`` (unless the environment sets it) before grpc is imported: without it the
    gRPC core writes an INFO line to standard error for every failed TLS handshake, which anyone who can
    open a connection can cause. It counts only if grpc is not imported yet (``pokdeng serve`` calls it
    first), so it is not set once grpc is; ``GRPC_TRACE`` is left as the environment has it."""
    if "grpc" not in sys.modules:
        os.environ.setdefault("GRPC_VERBOSITY", verbosity)


__all__ = ["NATIVE_LINE", "NATIVE_RATE", "StderrCapture", "capture_stderr", "quiet_grpc_core", "stderr_for_children"]
