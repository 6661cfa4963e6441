"""``BatchingHandler``: the records written to standard error from a thread of its own, the queue bounded in
lines and bytes, drops counted (``pokdeng_log_dropped_total``).
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Mapping
from typing import Any

from prometheus_client import Counter

from pokdeng_service.logs.ratelimit import summarize_rate_limits

LOG = logging.getLogger("pokdeng.log")


LOG_DROPPED = Counter(
    "pokdeng_log_dropped",
    "Log lines dropped: the queue to standard error was full (lines, bytes) or standard error failed (unwritable)",
    ["reason"],
)


def _size(line: str) -> int:
    """The bytes of ``line`` and its newline on standard error (UTF-8)."""
    return (len(line) if line.isascii() else len(line.encode("utf-8", "surrogatepass"))) + 1


class BatchingHandler(logging.Handler):
    """Formats each record when it is logged and writes the lines from a thread of its own, every
    ``interval`` seconds in one write: a caller never waits for standard error, nor wakes a thread for
    each line, and never writes itself (``flush`` from another thread asks the writer and waits at most
    ``flush_timeout`` seconds), so a stream that nobody reads stalls nobody but the writer.

    What waits is bounded: at most ``capacity`` lines and ``max_bytes`` bytes (UTF-8, the batch being
    written included). Past either a line is dropped, counted in ``dropped`` and in
    ``pokdeng_log_dropped_total{reason="lines"|"bytes"}`` (``"unwritable"``: the stream failed), and once
    lines are written again a warning says how many were lost. The writer also writes the rate limits'
    summaries (``RateLimit``)."""

    def __init__(
        self,
        stream: Any,
        formatter: logging.Formatter,
        interval: float = 0.05,
        capacity: int = 10_000,
        max_bytes: int = 4 * 1024 * 1024,
        flush_timeout: float = 2.0,
    ) -> None:
        super().__init__()
        self.stream = stream
        self.setFormatter(formatter)
        self.interval = interval
        self.capacity = capacity
        self.max_bytes = max_bytes
        self.flush_timeout = flush_timeout
        self.dropped = 0
        self.pending_bytes = 0  # of the lines waiting and the batch being written
        self.most_bytes = 0  # the most ``pending_bytes`` ever were
        self._lines: collections.deque[str] = collections.deque()
        self._lock = threading.Lock()
        self._lost: collections.Counter[str] = collections.Counter()  # dropped since the last report
        self._flushes: list[threading.Event] = []
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._dropping = {reason: LOG_DROPPED.labels(reason) for reason in ("lines", "bytes", "unwritable")}
        self._thread = threading.Thread(target=self._run, name="pokdeng-log", daemon=True)
        self._thread.start()

    def handle(self, record: logging.LogRecord) -> bool:  # (no handler lock: ``emit`` takes its own, briefly)
        if not self.filter(record):
            return False
        self.emit(record)
        return True

    def _drop(self, reason: str, lines: int = 1) -> None:
        with self._lock:
            self.dropped += lines
            self._lost[reason] += lines
        self._dropping[reason].inc(lines)

    def emit(self, record: logging.LogRecord) -> None:
        if len(self._lines) >= self.capacity:  # (full: not even formatted)
            self._drop("lines")
            return
        if self.pending_bytes >= self.max_bytes:
            self._drop("bytes")
            return
        try:
            line = self.format(record)
        except Exception:
            self.handleError(record)
            return
        size = _size(line)
        with self._lock:
            if len(self._lines) < self.capacity and self.pending_bytes + size <= self.max_bytes:
                self._lines.append(line)
                self.pending_bytes += size
                self.most_bytes = max(self.most_bytes, self.pending_bytes)
                return
            reason = "lines" if len(self._lines) >= self.capacity else "bytes"
        self._drop(reason)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.interval)
            self._wake.clear()
            self._turn()
        self._turn()

    def _turn(self) -> None:
        with self._lock:
            waiting, self._flushes = self._flushes, []
        try:
            summarize_rate_limits()
            self._write()
        finally:
            for done in waiting:
                done.set()

    def _write(self) -> None:
        """Write what waits, in chunks of at most 256 KiB; its bytes count as pending until written."""
        while True:
            chunk, size = [], 0
            with self._lock:
                while self._lines and size < 256 * 1024:
                    line = self._lines.popleft()
                    chunk.append(line)
                    size += _size(line)
                lost, self._lost = self._lost, collections.Counter()
            if lost:
                chunk.append(self._report(lost))
            if not chunk:
                return
            try:
                self.stream.write("\n".join(chunk) + "\n")
                self.stream.flush()
            except (OSError, ValueError):  # standard error closed: nothing to tell but the metric
                self._dropping["unwritable"].inc(len(chunk))
            finally:
                with self._lock:
                    self.pending_bytes -= size

    def _report(self, lost: Mapping[str, int]) -> str:
        """The line that says what was dropped (made here, outside the queue: it is never dropped itself)."""
        total = sum(lost.values())
        why = ", ".join(f"{count} for want of {reason}" for reason, count in sorted(lost.items()))
        record = LOG.makeRecord(
            LOG.name, logging.WARNING, "", 0, "the log dropped %d line(s) (%s): standard error was not read fast "
            "enough (pokdeng_log_dropped_total)", (total, why), None,
        )  # fmt: skip
        record.fields = {"dropped": total}
        return self.format(record)

    def flush(self) -> None:
        """Have the writer write what waits, and wait for it (at most ``flush_timeout`` seconds). The writer
        thread itself writes; after ``close`` whatever was logged since is written here, unless the writer
        never came back from a write (a stream nobody reads), in which case it is left."""
        if threading.current_thread() is self._thread:
            self._write()
            return
        if not self._thread.is_alive():
            with self._lock:
                waiting = bool(self._lines or self._lost)
            if waiting:
                self._write()
            return
        done = threading.Event()
        with self._lock:
            self._flushes.append(done)
        self._wake.set()
        done.wait(self.flush_timeout)

    def close(self) -> None:
        """Write what waits and stop the writer (waiting for it at most ``flush_timeout`` seconds)."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=self.flush_timeout)
        super().close()


__all__ = ["LOG", "LOG_DROPPED", "BatchingHandler"]
