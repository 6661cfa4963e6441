"""``RateLimit``: at most so many lines a second per key, the rest counted (``pokdeng_log_suppressed_total``)
and summed up in one line every ``SUMMARY_SECONDS``.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable

from prometheus_client import Counter

from pokdeng_service.logs.formats import LIMITS, cut

SUMMARY_SECONDS = 10.0  # how often a rate limit's summary line is written (when it suppressed any)


LOG_SUPPRESSED = Counter(
    "pokdeng_log_suppressed",
    "Log lines not written: their source spoke over its rate (unauthenticated: calls refused without a "
    "valid token, per peer; grpc.core: the gRPC core's lines, per source file)",
    ["source"],
)


class RateLimit:
    """At most ``rate`` lines a second for each key (a peer, a source file), in bursts of at most ``burst``:
    ``allow(key)`` says whether a line may be written. What it refuses is counted
    (``pokdeng_log_suppressed_total{source}``, and per key until the next summary); every ``every``
    seconds in which it refused any, ``summary()`` makes the line that says how many, from how many keys,
    and the keys that spoke most. At most ``keys`` keys are tracked at once (the idle ones are forgotten
    first); past that, the new keys share one bucket. ``rate`` 0: no line is allowed, only the summaries.
    Its owner registers it while it runs (``register``: the log's writer threads then write its summaries,
    ``summarize_rate_limits``) and unregisters it when it stops (``unregister``: its last summary written
    at once); an unregistered rate limit never sums up on its own."""

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

    def register(self) -> None:
        """From now on the log's writer threads write this rate limit's summaries (``summarize_rate_limits``)."""
        with _REGISTERED_LOCK:
            _REGISTERED[self] = None

    def unregister(self) -> None:
        """No more summaries by the writer threads; the last one (what was suppressed since the previous,
        if anything was) is written now. Safe twice, and for a rate limit never registered."""
        with _REGISTERED_LOCK:
            _REGISTERED.pop(self, None)
        _write(self.summary(force=True))

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


_REGISTERED: dict[RateLimit, None] = {}  # the registered rate limits, in the order registered
_REGISTERED_LOCK = threading.Lock()


def _write(record: logging.LogRecord | None) -> None:
    if record is not None:
        logger = logging.getLogger(record.name)
        if logger.isEnabledFor(record.levelno):
            logger.handle(record)


def registered_rate_limits() -> tuple[RateLimit, ...]:
    """The rate limits registered now (``RateLimit.register``), whose summaries the writer threads write."""
    with _REGISTERED_LOCK:
        return tuple(_REGISTERED)


def summarize_rate_limits(force: bool = False) -> None:
    """Log the summary of every registered rate limit that suppressed lines (``RateLimit.summary``)."""
    for limit in registered_rate_limits():
        _write(limit.summary(force))


__all__ = ["LOG_SUPPRESSED", "SUMMARY_SECONDS", "RateLimit", "registered_rate_limits", "summarize_rate_limits"]
