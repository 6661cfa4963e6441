"""The log's two formats: ``JsonFormatter`` (one JSON object a record) and ``TextFormatter`` (``asctime level
logger: message key=value ...``, every control character escaped, values quoted), and the bounds of a
logged value (``LIMITS``, ``cut``).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson


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


__all__ = ["LIMITS", "JsonFormatter", "LogLimits", "TextFormatter", "cut", "escape"]
