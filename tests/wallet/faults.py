"""Faults between pokdeng and the platform's wallet: a gRPC server interceptor in front of the reference ledger.

Each call to Debit, Credit or Rollback may get one fault, drawn from a seeded random generator
with the given rates (``FaultPlan``), or forced for the next calls of a method (``force``):

* ``drop``: the request is lost: nothing applied, the caller waits out its deadline;
* ``timeout``: applied, but the answer comes after the caller's deadline;
* ``unavailable``: refused at once with UNAVAILABLE, nothing applied;
* ``lost_reply``: applied, then UNAVAILABLE (the answer is lost);
* ``duplicate``: the request is delivered twice (the ledger must answer both alike);
* ``delayed``: UNAVAILABLE now, and the request delivered later, after the calls that follow it
  (a reordered request: a debit may arrive after its own rollback);
* ``stale_reply``: applied, but answered with an earlier reply of the same method (for another tx
  id: a reordered reply, which the caller must not take as its own);
* ``kill``: the test's ``on_kill`` is called (it SIGKILLs pokdeng): a Debit is applied first (the
  platform has taken the money, pokdeng has no record of the answer), a Credit after it (the
  settlement is recorded, its credit applied, its answer never heard).

``counts`` tallies the faults injected by kind; ``mismatched`` the duplicated deliveries that were
not answered alike (the ledger's idempotency failing: must stay 0).
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import grpc

KINDS = ("drop", "timeout", "unavailable", "lost_reply", "duplicate", "delayed", "stale_reply", "kill")
MONEY_METHODS = ("Debit", "Credit", "Rollback")


@dataclass
class FaultPlan:
    rates: dict[str, float] = field(default_factory=dict)  # kind -> probability per call
    seed: int = 17
    hold: float = 0.5  # seconds a "drop" or "timeout" holds the call (beyond the caller's deadline)
    delay: tuple[float, float] = (0.2, 0.8)  # seconds a "delayed" request waits before it is delivered
    kill_methods: tuple[str, ...] = ("Debit", "Credit")


class Faults(grpc.ServerInterceptor):
    def __init__(self, plan: FaultPlan | None = None, on_kill: Callable[[], None] | None = None) -> None:
        self.plan = plan or FaultPlan()
        self.random = random.Random(self.plan.seed)
        self.on_kill = on_kill
        self.enabled = True
        self.counts: Counter[str] = Counter()
        self.by_method: Counter[str] = Counter()
        self.mismatched = 0
        self.calls = 0
        self._forced: dict[str, list[str]] = {}
        self._last_reply: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._timers: list[threading.Timer] = []

    def force(self, method: str, *kinds: str) -> None:
        """The next calls of ``method`` get these faults, in order."""
        with self._lock:
            self._forced.setdefault(method, []).extend(kinds)

    def _choose(self, method: str) -> str | None:
        with self._lock:
            self.calls += 1
            forced = self._forced.get(method)
            if forced:
                return forced.pop(0)
            if not self.enabled:
                return None
            roll = self.random.random()
            for kind in KINDS:
                rate = self.plan.rates.get(kind, 0.0)
                if kind == "kill" and (self.on_kill is None or method not in self.plan.kill_methods):
                    continue
                if roll < rate:
                    return kind
                roll -= rate
            return None

    def intercept_service(self, continuation: Any, details: Any) -> Any:
        handler = continuation(details)
        method = details.method.rsplit("/", 1)[-1]
        if handler is None or handler.unary_unary is None or method not in MONEY_METHODS:
            return handler
        inner = handler.unary_unary

        def call(request: Any, context: Any) -> Any:
            kind = self._choose(method)
            if kind is None:
                return self._remember(method, inner(request, context))
            with self._lock:
                self.counts[kind] += 1
                self.by_method[f"{method}:{kind}"] += 1
            return self._inject(kind, method, inner, request, context)

        return grpc.unary_unary_rpc_method_handler(
            call, request_deserializer=handler.request_deserializer, response_serializer=handler.response_serializer
        )

    def _remember(self, method: str, reply: Any) -> Any:
        with self._lock:
            self._last_reply[method] = reply
        return reply

    def _inject(self, kind: str, method: str, inner: Any, request: Any, context: Any) -> Any:
        if kind == "drop":
            time.sleep(self.plan.hold)
            context.abort(grpc.StatusCode.UNAVAILABLE, "dropped")
        if kind == "unavailable":
            context.abort(grpc.StatusCode.UNAVAILABLE, "injected")
        if kind == "delayed":
            wait = self.random.uniform(*self.plan.delay)
            timer = threading.Timer(wait, lambda: inner(request, None))
            timer.daemon = True
            self._timers.append(timer)
            timer.start()
            context.abort(grpc.StatusCode.UNAVAILABLE, "delayed")
        if kind == "kill":
            if method == "Debit":
                inner(request, context)  # the platform took the money; pokdeng dies before it hears so
            assert self.on_kill is not None
            self.on_kill()
            if method != "Debit":
                inner(request, context)
            context.abort(grpc.StatusCode.UNAVAILABLE, "killed")
        reply = inner(request, context)
        if kind == "timeout":
            time.sleep(self.plan.hold)
            return reply
        if kind == "lost_reply":
            context.abort(grpc.StatusCode.UNAVAILABLE, "reply lost")
        if kind == "duplicate":
            again = inner(request, context)
            if not _alike(reply, again):
                with self._lock:
                    self.mismatched += 1
            return self._remember(method, again)
        if kind == "stale_reply":
            with self._lock:
                stale = self._last_reply.get(method)
                self._last_reply[method] = reply
            return stale if stale is not None else reply
        return reply

    def wait_delayed(self) -> None:
        """Every delayed request delivered (before the final checks)."""
        for timer in list(self._timers):
            timer.join(timeout=5)


def _alike(first: Any, again: Any) -> bool:
    """Whether a request delivered twice was answered alike: the same answer (version 1), or (version 2) a DUPLICATE
    of what the first delivery was answered, the rest the same."""
    if "original" not in first.DESCRIPTOR.fields_by_name:
        return bool(first == again)
    duplicate = first.DESCRIPTOR.file.enum_types_by_name["Status"].values_by_name["STATUS_DUPLICATE"].number
    status = first.original if first.status == duplicate else first.status
    if again.status != duplicate or again.original != status:
        return False
    same = type(first)()
    same.CopyFrom(first)
    same.status, same.original = again.status, again.original
    return bool(same == again)
