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
  summed up in one line every ``SUMMARY_SECONDS`` (written by the log's writer thread while its owner
  has it registered: a server from its start to its stop, which writes the last summary);
* ``StderrCapture`` (``pokdeng serve``, ``capture_stderr``): what C code writes to file descriptor 2
  (the gRPC core's lines, ``I1207 12:00:00.000000 123 ssl_transport_security.cc:2563] Handshake
  failed ...``) is read from a pipe by a thread and becomes records of the ``grpc.core`` logger, in
  the same stream and format as the rest, cut, escaped and rate-limited like them.

The package: ``formats`` (the two formats and the bounds of a value), ``writer`` (``BatchingHandler``),
``ratelimit`` (``RateLimit``), ``capture`` (``StderrCapture``); ``configure_logging`` here.
"""

from __future__ import annotations

import atexit
import logging
import sys

from pokdeng_service.logs.capture import StderrCapture, capture_stderr, quiet_grpc_core, stderr_for_children
from pokdeng_service.logs.formats import LIMITS, JsonFormatter, LogLimits, TextFormatter, cut, escape
from pokdeng_service.logs.ratelimit import LOG_SUPPRESSED, RateLimit, registered_rate_limits, summarize_rate_limits
from pokdeng_service.logs.writer import LOG_DROPPED, BatchingHandler


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
    "registered_rate_limits",
    "stderr_for_children",
    "summarize_rate_limits",
]
