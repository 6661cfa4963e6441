"""Admission: the limits no caller may exceed, the workers, the open streams and the store's state.

``Limits`` are the server's caps (docs/operations.md, sizing); ``Runtime`` applies them to every
call on behalf of the one wrapper (``wrapper.wrap``): each caller's rates (``api/rates.py``), admission of
unary calls (in flight, per caller), the blocking bodies' workers, the caps on open streams by kind
(each caller's share of them, and the room a caller with fewer is made by ending one of a caller with
more) and the ending of streams idle or stalled past their limit, the store probe's verdict, and the
observer that hears how each call ended.
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

from pokdeng_service import server_limits
from pokdeng_service.api.errors import (
    ApiError,
    DeadlineExpired,
    RateLimited,
    ResourceExhausted,
    StoreDown,
    StreamIdle,
    StreamPreempted,
    StreamStalled,
    reason_of,
    status_for,
)
from pokdeng_service.api.fairness import FairWorkers
from pokdeng_service.api.rates import DEFAULT_RATES, Buckets, Rate
from pokdeng_service.application.principal import Principal, Role

log = logging.getLogger("pokdeng.api")


@dataclass(frozen=True)
class Limits:
    """What no caller, authenticated or not, may exceed (docs/operations.md, sizing)."""

    # blocking bodies running at once (one caller's: at most half, ``workers_per_caller``)
    workers: int = server_limits.SERVER_WORKERS
    max_concurrent_rpcs: int = 64  # unary calls running or waiting for a worker
    max_calls_per_caller: int = 32  # of those, one caller's (``caller_key``)
    max_streams: Mapping[str, int] = field(default_factory=dict)  # open streams by kind (one caller's: half)
    default_max_streams: int = 8  # for a kind not named
    # seconds a stream may wait on its client (a reply not taken, a request not sent), and a watch or feed may
    # have nothing but heartbeats to send (then it ends: the client calls again with its last token)
    stream_idle: float = server_limits.STREAM_IDLE
    # each caller's rate by class of methods (``api/rates.py``; a rate of 0: none); the operator has none
    rates: Mapping[str, Rate] = field(default_factory=lambda: dict(DEFAULT_RATES))
    # costly bodies (the audits, ``Rpc.costly``) running at once, whoever calls
    costly_workers: int = server_limits.COSTLY_WORKERS
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
        without one, can hold every stream of a kind. Two callers can still hold them all: then a third
        caller's stream is made room for by ending one of theirs (``Runtime.open_stream``)."""
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


NUDGE = 1.0
"""Seconds a stream told to end (``StreamWatch.end``) has to end by itself before it is cancelled."""


_PAST_IDLE: dict[type[ApiError], tuple[str, str]] = {  # what a stream ended at its idle limit did not do; what next
    StreamStalled: (  # (its client took nothing: cancelled)
        "the client took no message (or sent no request)",
        "it was ended; call again (with the last resume token) and read what it sends",
    ),
    StreamIdle: (  # (a quiet stream: told to end)
        "nothing but heartbeats to send",
        "call again with the last resume token (a feed: after its last position)",
    ),
}


def cancel_with(context: grpc.ServicerContext, error: ApiError) -> None:
    """Cancel a call, telling its client ``error``'s code and message when grpc lets us.

    A stream blocked in grpc's send (its client takes nothing) cannot end itself with a status; grpc's
    servicer context only cancels (the client sees a bare CANCELLED). Its call object can cancel with a
    status (``grpc_call_cancel_with_status``: the code and message, no details); where the context has no
    such call (another grpc, a test's stand-in), a plain cancel."""
    call = getattr(getattr(context, "_rpc_event", None), "call", None)
    if call is not None:
        try:
            call.cancel(error.code.value[0], error.message)
            return
        except Exception:  # (another grpc: the plain cancel below)
            log.debug("cancel with a status failed; cancelling plainly", exc_info=True)
    context.cancel()


class StreamWatch:
    """One open stream, as the reaper sees it.

    ``waiting_since``: since when it waits on its client (a reply not taken, a request not sent; None: it
    does not). ``progressed``: when it last sent something other than a heartbeat (or opened). ``quiet``:
    the idle limit also ends it when it has had nothing else to send for that long (its body stops when
    ``end`` is set: ``rpcs.Call.active``). ``end``: the error it ends with, once told to; ``handed``: its
    place in the kind's count was given to another caller's stream (``Runtime.open_stream``)."""

    __slots__ = (
        "cancelled",
        "context",
        "end",
        "ended_at",
        "handed",
        "idle",
        "key",
        "kind",
        "progressed",
        "quiet",
        "reaped",
        "waiting_since",
    )

    def __init__(
        self, context: grpc.ServicerContext, idle: float, key: str = "", kind: str = "", quiet: bool = False
    ) -> None:
        self.context = context
        self.idle = idle
        self.key = key  # whose share of the kind's streams it counts against (``caller_key``)
        self.kind = kind
        self.quiet = quiet
        self.waiting_since: float | None = None
        self.progressed = time.monotonic()
        self.end: ApiError | None = None
        self.ended_at = 0.0
        self.handed = False
        self.cancelled = False
        self.reaped = False  # ended by the server: idle, stalled or preempted

    def waiting(self) -> None:
        self.waiting_since = time.monotonic()

    def working(self) -> None:
        self.waiting_since = None

    def progress(self) -> None:
        """The client took something other than a heartbeat (or sent a request)."""
        self.progressed = time.monotonic()

    @property
    def active(self) -> bool:
        return self.end is None

    def _tell(self, error: ApiError, now: float) -> None:
        self.end, self.ended_at, self.reaped = error, now, True

    def _must_cancel(self) -> bool:
        """Whether the stream cannot end by itself: a body that does not look (one blocked on its client
        does not either: it is cancelled when it has not ended within ``NUDGE``)."""
        return not self.quiet


class Runtime:
    """The server's side of every call: the limits, the workers, the store's state and the observer.

    Admission counters are kept under one lock. ``store_up`` is set by the store probe
    (``api/health.py``); while it is False, methods that need the store are refused at once. ``reap``
    (run by the server's housekeeping thread) ends the streams that waited on their client longer
    than their idle limit (a reply the client does not take, a request it does not send) and the
    quiet ones that had nothing but heartbeats to send for that long."""

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
        self.buckets = Buckets(self.limits.rates)
        # wakes the quiet streams' bodies from their wait for a change, to look at ``Call.active`` (the
        # server sets it: ``EventHub.notify``)
        self.wake: Callable[[], None] | None = None

    def throttle(self, rate_class: str, principal: Principal | None, context: grpc.ServicerContext | None) -> None:
        """A token of the caller's bucket of ``rate_class`` (``api/rates.py``), or ``RateLimited``
        (RESOURCE_EXHAUSTED with RetryInfo). The operator has no bucket."""
        if principal is not None and principal.role is Role.OPERATOR:
            return
        delay = self.buckets.wait(caller_key(principal, context), rate_class)
        if delay > 0:
            rate = self.buckets.rates[rate_class]
            who = principal.describe() if principal is not None else "an unauthenticated caller of this host"
            raise RateLimited(
                f"{who} sends more {rate_class} than its rate, {rate.describe()}: try again in {delay:.3f} s",
                retry_after=delay,
                **{"class": rate_class, "rate": f"{rate.per_second:g}", "burst": str(rate.burst)},
            )

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

    def open_stream(self, kind: str, context: grpc.ServicerContext, key: str = "", quiet: bool = False) -> StreamWatch:
        """Count an open stream of ``kind`` for caller ``key`` (``caller_key``): within the caller's share
        of the kind (``Limits.streams_per_caller``) and within the kind's cap. At the cap, a caller that
        holds at least two streams fewer than the caller holding the most gets the place of one of that
        caller's streams (the one that got nowhere for the longest: blocked on its client, or quiet), which
        ends with RESOURCE_EXHAUSTED (``StreamPreempted``): two callers' shares cannot shut a third out.
        ``quiet``: the stream's body ends itself when told (``StreamWatch.quiet``)."""
        cap = self.limits.streams(kind)
        share = self.limits.streams_per_caller(kind)
        victim = None
        with self._lock:
            if self.caller_streams[kind, key] >= share:
                raise ResourceExhausted(
                    f"one caller may hold at most {share} of this server's {cap} {kind} streams at once",
                    limit=str(share),
                )
            if self.streams[kind] >= cap:
                victim = self._victim(kind, key)
                if victim is None:
                    raise ResourceExhausted(f"this server serves at most {cap} {kind} streams at once", limit=str(cap))
                held = self.caller_streams[kind, victim.key]
                victim._tell(
                    StreamPreempted(
                        f"this server's {cap} {kind} streams were all open and this caller held {held} of them: "
                        "this one was ended to make room for a caller that held fewer; try again later",
                        limit=str(cap),
                    ),
                    time.monotonic(),
                )
                victim.handed = True  # its place is the newcomer's from now
                _decrement(self.streams, kind)
                _decrement(self.caller_streams, (kind, victim.key))
            self.streams[kind] += 1
            self.caller_streams[kind, key] += 1
            watch = StreamWatch(context, self.limits.stream_idle, key, kind, quiet)
            self._watches.add(watch)
        if victim is not None:
            log.info("a %s stream of %s was ended to make room for %s", kind, victim.key, key)
            if victim._must_cancel():
                victim.cancelled = True
                assert victim.end is not None
                cancel_with(victim.context, victim.end)
            elif self.wake is not None:
                self.wake()
        return watch

    def _victim(self, kind: str, key: str) -> StreamWatch | None:
        """(Under the lock.) The stream that makes room for ``key``: one of a caller holding the most streams of
        ``kind``, if it holds at least two more than ``key`` (then ``key`` never holds more than it after)."""
        holders = {k: n for (each, k), n in self.caller_streams.items() if each == kind and k != key}
        most = max(holders.values(), default=0)
        if most < self.caller_streams[kind, key] + 2:
            return None
        top = {k for k, n in holders.items() if n == most}
        theirs = [w for w in self._watches if w.kind == kind and w.key in top and w.end is None]
        if not theirs:
            return None
        # the one that got nowhere for the longest: blocked on its client, or quiet
        return min(theirs, key=lambda w: min(w.progressed, w.waiting_since or w.progressed))

    def close_stream(self, kind: str, watch: StreamWatch) -> None:
        with self._lock:
            self._watches.discard(watch)
            if not watch.handed:
                _decrement(self.streams, kind)
                _decrement(self.caller_streams, (kind, watch.key))

    def reap(self) -> int:
        """End the streams past their idle limit; how many. A stream that waited on its client longer than
        its limit is cancelled (``StreamStalled``: its thread is blocked in grpc's send, or waits for a
        request); a quiet one (``StreamWatch.quiet``) that had nothing but heartbeats to send for that long
        is told to end (``StreamIdle``: its body, woken by ``wake``, stops and the wrapper answers the status);
        one told to end that has not within ``NUDGE`` seconds is cancelled. Also forgets the rate buckets
        that filled up again."""
        now = time.monotonic()
        ended, told, cancel = 0, False, []
        with self._lock:
            for w in self._watches:
                if w.end is None:
                    if w.waiting_since is not None and now - w.waiting_since > w.idle:
                        w._tell(self._past_idle(w, StreamStalled), now)
                        cancel.append(w)
                        ended += 1
                    elif w.quiet and now - w.progressed > w.idle:
                        w._tell(self._past_idle(w, StreamIdle), now)
                        ended += 1
                        told = True
                elif not w.cancelled and now - w.ended_at > NUDGE:
                    cancel.append(w)
            for w in cancel:
                w.cancelled = True
        for w in cancel:
            assert w.end is not None
            cancel_with(w.context, w.end)
        if told and self.wake is not None:
            self.wake()  # (the bodies told to end look now, not at their next poll)
        self.buckets.forget_full(now)
        return ended

    @staticmethod
    def _past_idle(watch: StreamWatch, why: type[StreamStalled | StreamIdle]) -> ApiError:
        """The error that ends ``watch`` at its idle limit (``_PAST_IDLE``: what it did not do, and what next)."""
        idle = f"{watch.idle:g}"
        did_not, then = _PAST_IDLE[why]
        return why(f"{did_not} for {idle} s, this server's idle limit for a stream: {then}", seconds=idle)

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
