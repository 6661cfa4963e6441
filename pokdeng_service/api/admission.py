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
from typing import Any, NoReturn, Protocol

import grpc
from grpc_status import rpc_status

from pokdeng_service.api.errors import DeadlineExpired, ResourceExhausted, StoreDown, reason_of, status_for
from pokdeng_service.application.principal import Principal

log = logging.getLogger("pokdeng.api")


@dataclass(frozen=True)
class Limits:
    """What no caller, authenticated or not, may exceed (docs/operations.md, sizing)."""

    workers: int = 8  # blocking bodies running at once
    max_concurrent_rpcs: int = 64  # unary calls running or waiting for a worker
    max_calls_per_caller: int = 32  # of those, one principal's (every unauthenticated caller counts as one)
    max_streams: Mapping[str, int] = field(default_factory=dict)  # open streams by kind
    default_max_streams: int = 8  # for a kind not named
    stream_idle: float = 60.0  # seconds a stream may wait on its client (a reply not taken, a request not sent)

    def __post_init__(self) -> None:
        if min(self.workers, self.max_concurrent_rpcs, self.max_calls_per_caller) < 1 or self.default_max_streams < 0:
            raise ValueError("the limits must be positive")
        if self.stream_idle <= 0:
            raise ValueError("stream_idle must be positive")

    def streams(self, kind: str) -> int:
        return self.max_streams.get(kind, self.default_max_streams)

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


class StreamWatch:
    """One open stream, as the reaper sees it: since when it waits on its client (None: it does not)."""

    __slots__ = ("context", "idle", "reaped", "waiting_since")

    def __init__(self, context: grpc.ServicerContext, idle: float) -> None:
        self.context = context
        self.idle = idle
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
        self._lock = threading.Lock()
        self._workers = threading.BoundedSemaphore(self.limits.workers)
        self._watches: set[StreamWatch] = set()

    def admit(self, principal: Principal | None) -> str:
        limits = self.limits
        key = principal.scope if principal is not None else "anonymous"
        with self._lock:
            if self.in_flight >= limits.max_concurrent_rpcs:
                raise ResourceExhausted(
                    f"the server has {limits.max_concurrent_rpcs} calls in flight: try again shortly",
                    limit=str(limits.max_concurrent_rpcs),
                )
            if self.callers[key] >= limits.max_calls_per_caller:
                who = principal.describe() if principal is not None else "an unauthenticated caller"
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
            left = self.callers[key] - 1
            if left > 0:
                self.callers[key] = left
            else:
                del self.callers[key]

    def run(self, context: grpc.ServicerContext, body: Callable[[], Any]) -> Any:
        """``body()`` once a worker is free; a call whose deadline passes while it waits is not started."""
        remaining = context.time_remaining()
        if not self._workers.acquire(timeout=remaining):  # (None: no deadline, wait)
            raise DeadlineExpired("the call's deadline passed while it waited for a worker")
        try:
            return body()
        finally:
            self._workers.release()

    def open_stream(self, kind: str, context: grpc.ServicerContext) -> StreamWatch:
        cap = self.limits.streams(kind)
        with self._lock:
            if self.streams[kind] >= cap:
                raise ResourceExhausted(f"this server serves at most {cap} {kind} streams at once", limit=str(cap))
            self.streams[kind] += 1
            watch = StreamWatch(context, self.limits.stream_idle)
            self._watches.add(watch)
        return watch

    def close_stream(self, kind: str, watch: StreamWatch) -> None:
        with self._lock:
            self._watches.discard(watch)
            left = self.streams[kind] - 1
            if left > 0:
                self.streams[kind] = left
            else:
                del self.streams[kind]

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
