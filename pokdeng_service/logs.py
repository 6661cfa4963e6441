"""The service's log: one line per record on standard error, as JSON (the default) or text.

``JsonFormatter`` writes any record as one JSON object (``pokdeng serve --log-format json``); the fields of
a call line (``api/observe.py``) are top-level keys. ``TextFormatter`` writes ``asctime level logger:
message``. ``BatchingHandler`` writes the records from a thread of its own; ``configure_logging`` puts it on
the root logger. Used by the server (``pokdeng serve``) and the read models' child process alike, so it
imports nothing of the service.
"""

from __future__ import annotations

import atexit
import collections
import logging
import sys
import threading
import time
from typing import Any

import orjson


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, and a call line's fields at the top level."""

    def __init__(self) -> None:
        super().__init__()
        self._second = -1
        self._stamp = ""

    def _time(self, created: float) -> str:
        second = int(created)
        if second != self._second:  # (one strftime a second)
            self._second, self._stamp = second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        return f"{self._stamp}.{int((created - second) * 1000):03d}Z"

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {"ts": self._time(record.created), "level": record.levelname, "logger": record.name}
        call = getattr(record, "call", None)
        if isinstance(call, dict):
            data.update(call)
        else:
            data["msg"] = record.getMessage()
        if record.exc_info:
            data["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(data, default=str).decode()


class TextFormatter(logging.Formatter):
    """``asctime level logger: message``, and a call line's fields as ``key=value``."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        call = getattr(record, "call", None)
        if isinstance(call, dict):
            text += " " + " ".join(f"{key}={value}" for key, value in call.items())
        return text


class BatchingHandler(logging.Handler):
    """Writes the records from a thread of its own, every ``interval`` seconds in one write: a call never
    waits for standard error, nor wakes a thread for each line. At most ``capacity`` records wait; past
    that (standard error cannot keep up, say under a flood of refused calls) they are dropped and counted."""

    def __init__(self, stream: Any, formatter: logging.Formatter, interval: float = 0.05, capacity: int = 10_000):
        super().__init__()
        self.stream = stream
        self.setFormatter(formatter)
        self.interval = interval
        self.capacity = capacity
        self.dropped = 0
        self._records: collections.deque[logging.LogRecord] = collections.deque()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pokdeng-log", daemon=True)
        self._thread.start()

    def handle(self, record: logging.LogRecord) -> bool:  # (no lock: appending to a deque is atomic)
        if not self.filter(record):
            return False
        self.emit(record)
        return True

    def emit(self, record: logging.LogRecord) -> None:
        if len(self._records) >= self.capacity:
            self.dropped += 1
            return
        self._records.append(record)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.flush()

    def flush(self) -> None:
        lines = []
        while self._records:
            record = self._records.popleft()
            try:
                lines.append(self.format(record))
            except Exception:
                self.handleError(record)
        if lines:
            try:
                self.stream.write("\n".join(lines) + "\n")
                self.stream.flush()
            except (OSError, ValueError):  # standard error closed: nothing to tell
                pass

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=2)
        self.flush()
        super().close()


def configure_logging(log_format: str = "json", level: str = "INFO") -> logging.Handler:
    """The root logger to standard error, written in batches from a thread of its own (``BatchingHandler``)."""
    formatter = JsonFormatter() if log_format == "json" else TextFormatter()
    handler = BatchingHandler(sys.stderr, formatter)
    # no line shows them: spare every record the look-ups (a record is made for every call)
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    atexit.register(handler.close)
    return handler


__all__ = ["BatchingHandler", "JsonFormatter", "TextFormatter", "configure_logging"]
