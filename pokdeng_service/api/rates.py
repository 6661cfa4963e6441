"""Rates: a token bucket per caller and class of methods, so that no caller's flood of cheap calls is served.

The caps on calls in flight bound how many of a caller's calls run at once, not how many it sends: a
player sending GetRound as fast as 16 connections allow stays within them and still takes most of the
interpreter. Each caller (``admission.caller_key``: its principal, or for a call without a token the host
it comes from) therefore has one bucket per class of methods (``Rpc.rate_class``: ``reads``, ``commands``,
``streams``, the last counting the streams it opens). A bucket holds at most ``Rate.burst`` tokens and
gains ``Rate.per_second`` a second; every call takes one, and a call that finds none is refused at once
(``Runtime.throttle``: ``RateLimited``, RESOURCE_EXHAUSTED, its RetryInfo the time until the bucket holds
one again). A refused call takes nothing. This module imports nothing of grpc: the settings read its
defaults. The operator's token (the platform's own back end, which runs every table) has no
bucket. The rates are ``Limits.rates`` (``pokdeng serve --rate-*``); a rate of 0 is no limit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass

from pokdeng_service import server_limits

RATE_CLASSES = ("reads", "commands", "streams")
"""The classes of methods that have a rate: unary reads (and health checks), commands, streams opened."""


@dataclass(frozen=True)
class Rate:
    """A bucket's refill (tokens a second; 0: no limit) and its depth (the calls a caller may send at once)."""

    per_second: float
    burst: int

    def __post_init__(self) -> None:
        if self.per_second < 0 or self.burst < 0:
            raise ValueError("a rate and its burst are not negative")
        if self.per_second > 0 and self.burst < 1:
            raise ValueError("a rate needs a burst of at least one call")

    @property
    def on(self) -> bool:
        return self.per_second > 0

    def describe(self) -> str:
        return f"{self.per_second:g}/s (burst {self.burst})" if self.on else "off"


DEFAULT_RATES: Mapping[str, Rate] = {
    # far above what a person at a table sends; each declared once in ``pokdeng_service.server_limits``
    "reads": Rate(server_limits.RATE_READS, server_limits.RATE_READS_BURST),
    "commands": Rate(server_limits.RATE_COMMANDS, server_limits.RATE_COMMANDS_BURST),
    "streams": Rate(server_limits.RATE_STREAMS, server_limits.RATE_STREAMS_BURST),
}


class Buckets:
    """The callers' buckets (one lock): ``wait`` takes one token or says how long until there is one."""

    def __init__(self, rates: Mapping[str, Rate]) -> None:
        unknown = set(rates) - set(RATE_CLASSES)
        if unknown:
            raise ValueError(f"no such class of methods: {', '.join(sorted(unknown))} (classes: {RATE_CLASSES})")
        self.rates = {name: rate for name, rate in rates.items() if rate.on}
        self._buckets: dict[tuple[str, str], tuple[float, float]] = {}  # (key, class) -> (tokens, as of)
        self._lock = threading.Lock()

    def wait(self, key: str, rate_class: str, now: float | None = None) -> float:
        """Take a token of ``key``'s bucket of ``rate_class``: 0.0 if taken, else the seconds until one is there."""
        rate = self.rates.get(rate_class)
        if rate is None:
            return 0.0
        now = time.monotonic() if now is None else now
        with self._lock:
            tokens, since = self._buckets.get((key, rate_class), (float(rate.burst), now))
            tokens = min(float(rate.burst), tokens + max(0.0, now - since) * rate.per_second)
            if tokens >= 1.0:
                self._buckets[key, rate_class] = (tokens - 1.0, now)
                return 0.0
            self._buckets[key, rate_class] = (tokens, now)
        return (1.0 - tokens) / rate.per_second

    def forget_full(self, now: float | None = None) -> int:
        """Drop the buckets that have filled up again (a caller not heard from lately); how many. A full bucket
        is what a caller not yet seen gets, so nothing changes for anyone, and the map holds the recent
        callers only."""
        now = time.monotonic() if now is None else now
        with self._lock:
            full = [
                pair
                for pair, (tokens, since) in self._buckets.items()
                if tokens + (now - since) * self.rates[pair[1]].per_second >= self.rates[pair[1]].burst
            ]
            for pair in full:
                del self._buckets[pair]
        return len(full)

    def __len__(self) -> int:
        with self._lock:
            return len(self._buckets)


__all__ = ["DEFAULT_RATES", "RATE_CLASSES", "Buckets", "Rate"]
