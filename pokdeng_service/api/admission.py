"""Admission: the limits no caller may exceed, the workers, the open streams and the store's state.

``Limits`` are the server's caps (docs/operations.md, sizing); ``Runtime`` applies them to every
call on behalf of the one wrapper (``rpcs.wrap``): admission of unary calls (in flight, per caller),
the blocking bodies' workers, the caps on open streams by kind and the reaping of idle ones, the
store probe's verdict, and the observer that hears how each call ended.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn, Protocol, TypeVar

import grpc
from grpc_status import rpc_status

from pokdeng_service.api.errors import DeadlineExpired, ResourceExhausted, StoreDown, reason_of, status_for
from pokdeng_service.api.fairness import FairWorkers
from pokdeng_service.application.principal import Principal

log = logging.getLogger("pokdeng.api")


@dataclass(frozen=True)
class Limits:
    """What no caller, authenticated or not, may exceed (docs/operations.md, sizing)."""

    workers: int = 8  # blocking bodies running at once (one caller's: at most half, ``workers_per_caller``)
    max_concurrent_rpcs: int = 64  # unary calls running or waiting for a worker
    max_calls_per_caller: int = 32  # of those, one caller's (``caller_key``)
    max_streams: Mapping[str, int] = field(default_factory=dict)  # open streams by kind (one caller's: half)
    default_max_streams: int = 8  # for a kind not named
    stream_idle: float = 60.0  # seconds a stream may wait on its client (a reply not taken, a request not sent)
    costly_workers: int = 1  # costly bodies (the audits, ``Rpc.costly``) running at once, whoever calls
    # the largest request message taken (grpc refuses a larger one, RESOURCE_EXHAUSTED, before it is read): the
    # largest of the API's requests is a few kilobytes (ids of 128 characters, reasons of 500), and every byte
    # of a request is parsed before its token is checked
    max_request_bytes: int = 64 * 1024

    def __post_init__(self) -> None:
        low = min(
            self.workers,
            self.max_concurrent_rpcs,
            self.max_calls_per_caller,
            self.costly_workers,
            self.max_request_bytes,
        )
        if low < 1 or self.default_max_streams < 0:
            raise ValueError("the limits must be positive")
        if self.stream_idle <= 0:
            raise ValueError("stream_idle must be positive")

    def streams(self, kind: str) -> int:
        return self.max_streams.get(kind, self.default_max_streams)

    def streams_per_caller(self, kind: str) -> int:
        """One caller's share of a kind's streams: half (at least one), so that no token, and no host
        without one, can hold every stream of a kind."""
        return max(1, self.streams(kind) // 2)

    @property
    def workers_per_caller(self) -> int:
        """Bodies one caller may run at once: half the workers (at least one); the rest stay for others."""
        return max(1, self.workers // 2)

    def threads(self, kinds: Iterable[str] = ()) -> int:
        """The server's threads: every admitted unary call and every stream of every kind has one, and a
        few more answer the calls refused at once."""
        kinds = set(kinds) | set(self.max_streams)
        return self.max_concurrent_rpcs + sum(self.streams(kind) for kind in kinds) + 16


class Observer(Protocol):
    """Hears how every call ended (``api/observe.py``: metrics and the call log)."""

    def finished(
        self,
        rpc: Any,  # an ``rpcs.Rpc`` (its ``name``, ``log_level`` ...)
        principal: Principal | None,
        request: Any,
        response: Any,
        code: str,
        reason: str,
        seconds: float,
        context: grpc.ServicerContext | None,
    ) -> None: ...


_CODE_NAMES = {code.value[0]: code.name for code in grpc.StatusCode}


K = TypeVar("K")
T = TypeVar("T")


def _decrement(counter: Counter[K], key: K) -> None:
    """One less of ``key``; at none, its entry goes (a counter of every caller ever seen would only grow)."""
    left = counter[key] - 1
    if left > 0:
        counter[key] = left
    else:
        del counter[key]


def _gone(context: grpc.ServicerContext) -> bool:
    """Whether a call's client is no longer waiting for it: its deadline passed, or it cancelled."""
    remaining = context.time_remaining()
    return (remaining is not None and remaining <= 0) or not context.is_active()


def caller_key(principal: Principal | None, context: grpc.ServicerContext | None) -> str:
    """Whose share of the limits a call counts against: its principal's request-id namespace, or, for a
    call without a token (health checks and watches), the host it comes from."""
    if principal is not None:
        return principal.scope
    peer = context.peer() if context is not None else ""
    return f"anonymous@{_peer_host(peer)}"


def _peer_host(peer: str) -> str:
    """``ipv4:127.0.0.1:5000`` -> ``127.0.0.1``; ``ipv6:[::1]:5000`` -> ``::1``; anything else as given."""
    family, _, address = peer.partition(":")
    if family in ("ipv4", "ipv6"):
        host = address.rpartition(":")[0] or address
        return host.strip("[]")
    return peer


class StreamWatch:
    """One open stream, as the reaper sees it: since when it waits on its client (None: it does not)."""

    __slots__ = ("context", "idle", "key", "reaped", "waiting_since")

    def __init__(self, context: grpc.ServicerContext, idle: float, key: str = "") -> None:
        self.context = context
        self.idle = idle
        self.key = key  # whose share of the kind's streams it counts against (``caller_key``)
        self.waiting_since: float | None = None
        self.reaped = False

    def waiting(self) -> None:
        self.waiting_since = time.monotonic()

    def working(self) -> None:
        self.waiting_since = None


class Runtime:
    """The server's side of every call: the limits, the workers, the store's state and the observer.

    Admission counters are kept under one lock. ``store_up`` is set by the store probe
    (``api/health.py``); while it is False, methods that need the store are refused at once. ``reap``
    (run by the server's housekeeping thread) cancels the streams that waited on their client longer
    than their idle limit: a reply the client does not take, a request it does not send."""

    def __init__(self, limits: Limits | None = None, observer: Observer | None = None) -> None:
        self.limits = limits or Limits()
        self.observer = observer
        self.in_flight = 0
        self.callers: Counter[str] = Counter()
        self.streams: Counter[str] = Counter()
        self.store_up = True
        self.store_problem = ""
        self.caller_streams: Counter[tuple[str, str]] = Counter()  # (kind, caller_key)
        self._lock = threading.Lock()
        self._workers = FairWorkers(self.limits.workers, self.limits.workers_per_caller)
        # the costly slots, taken before a worker: one a caller, the waiting callers in turn
        self._costly = FairWorkers(min(self.limits.costly_workers, self.limits.workers), 1)
        self._watches: set[StreamWatch] = set()

    def admit(self, principal: Principal | None, context: grpc.ServicerContext | None = None) -> str:
        """Count a unary call in flight against the server's cap and its caller's (``caller_key``); the
        key to ``run`` it with and to ``release``."""
        limits = self.limits
        key = caller_key(principal, context)
        with self._lock:
            if self.in_flight >= limits.max_concurrent_rpcs:
                raise ResourceExhausted(
                    f"the server has {limits.max_concurrent_rpcs} calls in flight: try again shortly",
                    limit=str(limits.max_concurrent_rpcs),
                )
            if self.callers[key] >= limits.max_calls_per_caller:
                who = principal.describe() if principal is not None else "an unauthenticated caller of this host"
                raise ResourceExhausted(
                    f"{who} has {limits.max_calls_per_caller} calls in flight: try again shortly",
                    limit=str(limits.max_calls_per_caller),
                )
            self.in_flight += 1
            self.callers[key] += 1
        return key

    def release(self, key: str) -> None:
        with self._lock:
            self.in_flight -= 1
            _decrement(self.callers, key)

    def run(self, key: str, context: grpc.ServicerContext, body: Callable[[], T], *, costly: bool = False) -> T:
        """``body()`` once a worker is free for caller ``key`` (``FairWorkers``: at most half the workers
        for one caller, the waiting callers served in turn); a ``costly`` body first waits for one of the
        costly slots (``Limits.costly_workers``, one a caller, the callers in turn), so that however many
        audits are asked for, only that many share the interpreter with everyone's cheap calls. A call
        whose deadline passes while it waits is not started."""
        if costly:
            if not self._costly.acquire(key, context.time_remaining()):
                raise DeadlineExpired("the call's deadline passed while it waited for a costly slot")
            try:
                return self.run(key, context, body)
            finally:
                self._costly.release(key)
        remaining = context.time_remaining()
        if not self._workers.acquire(key, remaining):  # (None: no deadline, wait)
            raise DeadlineExpired("the call's deadline passed while it waited for a worker")
        try:
            if _gone(context):  # granted as the deadline passed, or after the client gave up: not started
                raise DeadlineExpired("the call's deadline passed while it waited for a worker")
            return body()
        finally:
            self._workers.release(key)

    def open_stream(self, kind: str, context: grpc.ServicerContext, key: str = "") -> StreamWatch:
        """Count an open stream of ``kind`` for caller ``key`` (``caller_key``): within the kind's cap,
        and within the caller's share of it (``Limits.streams_per_caller``)."""
        cap = self.limits.streams(kind)
        share = self.limits.streams_per_caller(kind)
        with self._lock:
            if self.streams[kind] >= cap:
                raise ResourceExhausted(f"this server serves at most {cap} {kind} streams at once", limit=str(cap))
            if self.caller_streams[kind, key] >= share:
                raise ResourceExhausted(
                    f"one caller may hold at most {share} of this server's {cap} {kind} streams at once",
                    limit=str(share),
                )
            self.streams[kind] += 1
            self.caller_streams[kind, key] += 1
            watch = StreamWatch(context, self.limits.stream_idle, key)
            self._watches.add(watch)
        return watch

    def close_stream(self, kind: str, watch: StreamWatch) -> None:
        with self._lock:
            self._watches.discard(watch)
            _decrement(self.streams, kind)
            _decrement(self.caller_streams, (kind, watch.key))

    def reap(self) -> int:
        """Cancel the streams that waited on their client longer than their idle limit; how many."""
        now = time.monotonic()
        with self._lock:
            idle = [
                w
                for w in self._watches
                if w.waiting_since is not None and now - w.waiting_since > w.idle and not w.reaped
            ]
        for watch in idle:
            watch.reaped = True
            watch.context.cancel()
        return len(idle)

    def require_store(self) -> None:
        if not self.store_up:
            raise StoreDown(f"the event store is unreachable ({self.store_problem or 'no answer'}): try again")

    def done(
        self,
        rpc: Any,  # an ``rpcs.Rpc`` (its ``name``, ``log_level`` ...)
        principal: Principal | None,
        request: Any,
        response: Any,
        code: str,
        reason: str,
        started: float,
        context: grpc.ServicerContext | None,
    ) -> None:
        if self.observer is not None:
            seconds = time.perf_counter() - started
            self.observer.finished(rpc, principal, request, response, code, reason, seconds, context)

    def fail(
        self,
        rpc: Any,  # an ``rpcs.Rpc`` (its ``name``, ``log_level`` ...)
        principal: Principal | None,
        request: Any,
        error: BaseException,
        started: float,
        context: grpc.ServicerContext,
    ) -> NoReturn:
        """End the call with the status that reports ``error`` (raises, as ``abort`` does)."""
        status = status_for(error)
        code = _CODE_NAMES.get(status.code, "UNKNOWN")
        if code != "INTERNAL":  # an INTERNAL error is logged with its traceback by status_for
            log.debug("refused (%s): %s", code, status.message)
        self.done(rpc, principal, request, None, code, reason_of(status), started, context)
        context.abort_with_status(rpc_status.to_status(status))
        raise AssertionError("unreachable: abort_with_status raises")  # pragma: no cover
