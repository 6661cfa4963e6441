"""The service's log: one line per record on standard error, as JSON (the default) or text, bounded.

``JsonFormatter`` writes any record as one JSON object (``pokdeng serve --log-format json``); the fields of
a call line (``api/observe.py``, ``record.call``) or of any record (``record.fields``) are top-level keys.
``TextFormatter`` writes ``asctime level logger: message key=value ...``. ``BatchingHandler`` writes the
records from a thread of its own; ``configure_logging`` puts it on the root logger. Used by the server
(``pokdeng serve``) and the read models' child process alike, so it imports nothing of the service.

What a caller can make the log hold is bounded (docs/operations.md, "Logs"):

* every field is cut to ``LIMITS.field_chars`` characters (128), a message to ``LIMITS.message_chars``
  (1,024), a traceback to ``LIMITS.traceback_chars`` (8,192); what is cut ends with the whole value's
  length and the first 12 hex digits of its SHA-256 (``cut``), so lines stay correlatable;
* the text format escapes every control character (newline, CR, ESC, the other C0 and C1 controls,
  Unicode's line separators and bidirectional controls) and the backslash, and quotes a field's value
  that holds a space, ``=`` or ``"``: a value can never start a line of its own or pass for another
  field (the JSON format escapes by itself); a traceback's lines are indented under their record;
* the queue of lines waiting for standard error is bounded in lines and in bytes (``BatchingHandler``:
  10,000 lines, 4 MiB, the lines being written included); past either, lines are dropped and counted
  (``pokdeng_log_dropped_total{reason}``), and a line says how many once the writer catches up. A
  caller never writes to standard error itself, so a reader that does not read stalls no call, and the
  memory the log holds stays within the bound;
* a source that anyone can make speak is rate-limited (``RateLimit``): at most so many lines a second
  per key (a peer, a source file), the rest counted (``pokdeng_log_suppressed_total{source}``) and
  summed up in one line every ``SUMMARY_SECONDS`` (written by the log's writer thread);
* ``StderrCapture`` (``pokdeng serve``, ``capture_stderr``): what C code writes to file descriptor 2
  (the gRPC core's lines, ``I1207 12:00:00.000000 123 ssl_transport_security.cc:2563] Handshake
  failed ...``) is read from a pipe by a thread and becomes records of the ``grpc.core`` logger, in
  the same stream and format as the rest, cut, escaped and rate-limited like them.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import faulthandler
import hashlib
import logging
import os
import re
import sys
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import IO, Any

import orjson
from prometheus_client import Counter

LOG = logging.getLogger("pokdeng.log")
SUMMARY_SECONDS = 10.0  # how often a rate limit's summary line is written (when it suppressed any)

LOG_DROPPED = Counter(
    "pokdeng_log_dropped",
    "Log lines dropped: the queue to standard error was full (lines, bytes) or standard error failed (unwritable)",
    ["reason"],
)
LOG_SUPPRESSED = Counter(
    "pokdeng_log_suppressed",
    "Log lines not written: their source spoke over its rate (unauthenticated: calls refused without a "
    "valid token, per peer; grpc.core: the gRPC core's lines, per source file)",
    ["source"],
)


@dataclass
class LogLimits:
    """How long a logged value may be (characters): a field, a message, a traceback."""

    field_chars: int = 128
    message_chars: int = 1024
    traceback_chars: int = 8192


LIMITS = LogLimits()  # the process's (``configure_logging`` sets the field's)


def cut(text: str, limit: int) -> str:
    """``text``, or its first ``limit`` characters and ``...[N chars, sha256 DIGEST]``: the whole value's
    length and the first 12 hex digits of its SHA-256 (UTF-8), so that cut values stay comparable."""
    if len(text) <= limit:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{text[:limit]}...[{len(text)} chars, sha256 {digest}]"


def _field(value: Any, limit: int) -> Any:
    """A field's value as logged: a string cut; a number, a boolean or None as it is; anything else as text, cut."""
    if isinstance(value, str):
        return cut(value, limit)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return cut(str(value), limit)


_NAMED = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(char: str) -> str:
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def escape(text: str) -> str:
    """``text`` on one line, as a terminal shows it: a backslash doubled, every character that is not
    printable (newline, CR, tab, ESC and the other C0 and C1 controls, DEL, the line and paragraph
    separators, bidirectional and other format controls, unassigned code points) as ``\\n``, ``\\xNN``,
    ``\\uNNNN``. Printable text of any script (Thai included) is left as it is."""
    if text.isprintable() and "\\" not in text:
        return text
    return "".join(char if char.isprintable() and char != "\\" else _escaped(char) for char in text)


def _quoted(value: Any, limit: int) -> str:
    """A field's value in the text format: escaped, and in double quotes if it holds a space, ``=`` or ``"``
    (or is empty), so that no value passes for another field."""
    text = escape(str(_field(value, limit)))
    if not text or " " in text or "=" in text or '"' in text:
        return '"' + text.replace('"', '\\"') + '"'
    return text


def _fields(record: logging.LogRecord) -> Mapping[str, Any] | None:
    fields = getattr(record, "call", None)
    if isinstance(fields, dict):
        return fields
    fields = getattr(record, "fields", None)
    return fields if isinstance(fields, dict) else None


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message (a call line has none), its fields at the top
    level, every value cut (``cut``); a traceback under ``exc``."""

    def __init__(self, limits: LogLimits | None = None) -> None:
        super().__init__()
        self.limits = limits or LIMITS
        self._second = -1
        self._stamp = ""

    def _time(self, created: float) -> str:
        second = int(created)
        if second != self._second:  # (one strftime a second)
            self._second, self._stamp = second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        return f"{self._stamp}.{int((created - second) * 1000):03d}Z"

    def format(self, record: logging.LogRecord) -> str:
        limits = self.limits
        data: dict[str, Any] = {"ts": self._time(record.created), "level": record.levelname, "logger": record.name}
        if getattr(record, "call", None) is None:
            data["msg"] = cut(record.getMessage(), limits.message_chars)
        fields = _fields(record)
        if fields:
            for key, value in fields.items():
                data.setdefault(cut(str(key), limits.field_chars), _field(value, limits.field_chars))
        if record.exc_info:
            data["exc"] = cut(self.formatException(record.exc_info), limits.traceback_chars)
        return orjson.dumps(data, default=str).decode()


class TextFormatter(logging.Formatter):
    """``asctime level logger: message key=value ...`` on one line: the message and every field cut and
    escaped (``escape``), a value with a space, ``=`` or ``"`` quoted; a traceback's lines follow, each
    indented with ``  | `` and escaped, so that nothing a caller sent can start a line that looks like a
    record."""

    def __init__(self, limits: LogLimits | None = None) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")
        self.limits = limits or LIMITS

    def format(self, record: logging.LogRecord) -> str:
        limits = self.limits
        message = escape(cut(record.getMessage(), limits.message_chars))
        text = f"{self.formatTime(record)} {record.levelname} {escape(record.name)}: {message}"
        fields = _fields(record)
        if fields:
            text += "".join(
                f" {escape(cut(str(key), limits.field_chars))}={_quoted(value, limits.field_chars)}"
                for key, value in fields.items()
            )
        extra = []
        if record.exc_info:
            extra.append(self.formatException(record.exc_info))
        if record.stack_info:
            extra.append(self.formatStack(record.stack_info))
        for block in extra:
            for line in cut(block, limits.traceback_chars).splitlines():
                text += "\n  | " + escape(line)
        return text


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


class RateLimit:
    """At most ``rate`` lines a second for each key (a peer, a source file), in bursts of at most ``burst``:
    ``allow(key)`` says whether a line may be written. What it refuses is counted
    (``pokdeng_log_suppressed_total{source}``, and per key until the next summary); every ``every``
    seconds in which it refused any, ``summary()`` makes the line that says how many, from how many keys,
    and the keys that spoke most. At most ``keys`` keys are tracked at once (the idle ones are forgotten
    first); past that, the new keys share one bucket. ``rate`` 0: no line is allowed, only the summaries.
    Registered for the log's writer thread to write its summaries (``summarize_rate_limits``)."""

    def __init__(
        self,
        source: str,
        rate: float,
        burst: float | None = None,
        *,
        logger: str = "pokdeng.log",
        keys: int = 4096,
        every: float = SUMMARY_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if rate < 0:
            raise ValueError("a rate limit's rate is 0 or more lines a second")
        self.source = source
        self.rate = rate
        self.burst = max(1.0, rate if burst is None else burst) if rate > 0 else 0.0
        self.logger = logger
        self.keys = keys
        self.every = every
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, when)
        self._suppressed: collections.Counter[str] = collections.Counter()
        self._since = clock()
        self._lock = threading.Lock()
        self._counted = LOG_SUPPRESSED.labels(source)
        _RATE_LIMITS.add(self)

    def allow(self, key: str) -> bool:
        now = self._clock()
        with self._lock:
            if key not in self._buckets and len(self._buckets) >= self.keys:
                self._forget_idle(now)
                if len(self._buckets) >= self.keys:
                    key = "(others)"
            tokens, when = self._buckets.get(key, (self.burst, now))
            tokens = min(self.burst, tokens + (now - when) * self.rate)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, now)
                return True
            self._buckets[key] = (tokens, now)
            if len(self._suppressed) < self.keys or key in self._suppressed:
                self._suppressed[key] += 1
            else:
                self._suppressed["(others)"] += 1
        self._counted.inc()
        return False

    def _forget_idle(self, now: float) -> None:
        full = [k for k, (tokens, when) in self._buckets.items() if tokens + (now - when) * self.rate >= self.burst]
        for key in full:
            del self._buckets[key]

    def summary(self, force: bool = False) -> logging.LogRecord | None:
        """The summary line of what was suppressed since the last one, once ``every`` seconds have passed
        (or at once with ``force``); None if nothing was, or it is not time yet."""
        now = self._clock()
        with self._lock:
            if not self._suppressed or (not force and now - self._since < self.every):
                return None
            suppressed, self._suppressed = self._suppressed, collections.Counter()
            seconds, self._since = now - self._since, now
        total = sum(suppressed.values())
        most = ", ".join(f"{cut(key, LIMITS.field_chars)} {count}" for key, count in suppressed.most_common(3))
        logger = logging.getLogger(self.logger)
        record = logger.makeRecord(
            logger.name, logging.WARNING, "", 0,
            "suppressed %d %s line(s) from %d source(s) in the last %.0f s (at most %g a second each); most: %s",
            (total, self.source, len(suppressed), seconds, self.rate, most), None,
        )  # fmt: skip
        record.fields = {"suppressed": total, "sources": len(suppressed), "source": self.source}
        return record


_RATE_LIMITS: weakref.WeakSet[RateLimit] = weakref.WeakSet()


def summarize_rate_limits(force: bool = False) -> None:
    """Log the summary of every rate limit that suppressed lines (``RateLimit.summary``)."""
    for limit in list(_RATE_LIMITS):
        record = limit.summary(force)
        if record is not None:
            logger = logging.getLogger(record.name)
            if logger.isEnabledFor(record.levelno):
                logger.handle(record)


# the gRPC core's lines (absl's format): severity, MMDD hh:mm:ss.micros, thread, file:line] message
_GLOG = re.compile(r"^([IWEF])(\d{4} \d\d:\d\d:\d\d\.\d+)\s+(\d+)\s+([^\s\]]+:\d+)\]\s?(.*)$", re.DOTALL)
_SEVERITY = {"I": logging.INFO, "W": logging.WARNING, "E": logging.ERROR, "F": logging.CRITICAL}
NATIVE_RATE = 10.0  # the gRPC core's lines a second, per source file (a burst of 20)
NATIVE_LINE = 16 * 1024  # bytes of a line that never ends, before it is taken as one


class StderrCapture:
    """File descriptor 2 as a pipe, read by a thread of its own: each line that C code writes there (the
    gRPC core's, through absl; BoringSSL's; any library's) becomes a record of ``logger`` (``grpc.core``)
    in the log's own stream, format and bounds. A line in the gRPC core's format keeps its severity
    (I, W, E, F: INFO, WARNING, ERROR, CRITICAL) and its source file as the ``source`` field; any other
    line is a WARNING. At most ``NATIVE_RATE`` lines a second per source file are written (``RateLimit``).

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


def configure_logging(
    log_format: str = "json",
    level: str = "INFO",
    *,
    field_chars: int | None = None,
    buffer_lines: int = 10_000,
    buffer_bytes: int = 4 * 1024 * 1024,
) -> BatchingHandler:
    """The root logger to standard error, written in batches from a thread of its own (``BatchingHandler``,
    ``buffer_lines`` and ``buffer_bytes`` its bounds); fields cut at ``field_chars`` characters. What C
    code writes to descriptor 2 joins the stream once ``capture_stderr`` is called."""
    if field_chars is not None:
        LIMITS.field_chars = field_chars
    formatter = JsonFormatter() if log_format == "json" else TextFormatter()
    handler = BatchingHandler(sys.stderr, formatter, capacity=buffer_lines, max_bytes=buffer_bytes)
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


__all__ = [
    "LIMITS",
    "LOG_DROPPED",
    "LOG_SUPPRESSED",
    "BatchingHandler",
    "JsonFormatter",
    "LogLimits",
    "RateLimit",
    "StderrCapture",
    "TextFormatter",
    "capture_stderr",
    "configure_logging",
    "cut",
    "escape",
    "quiet_grpc_core",
    "stderr_for_children",
    "summarize_rate_limits",
]
