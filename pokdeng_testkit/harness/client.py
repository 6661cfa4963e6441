"""``HarnessClient``: a ``PokdengClient`` that keeps retrying one request until it gets an answer.

A call that fails with UNAVAILABLE (the server was killed or is restarting), DEADLINE_EXCEEDED
or ABORTED (a concurrency conflict) is sent again, the same message with the same request id,
until it succeeds or fails with another code, or its patience (seconds, and attempts) runs out.
The channel reconnects fast (backoff 50-250 ms) so that a restarted server is found at once.

Every attempt is counted in ``Stats``: the latency of each successful call per RPC, every error
by RPC and code, and every answer the server flagged as a replay (``pokdeng-replayed: true``: the
request id had been carried out before, by this client or another one, on any replica).
"""

from __future__ import annotations

import copy
import random
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.rpc import error_details_pb2  # type: ignore[import-untyped]
from grpc_status import rpc_status

from pokdeng_client import PokdengClient
from pokdeng_client.v1 import pokdeng_pb2 as pb

from .server import FAST_RECONNECT

RETRY = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.ABORTED})
REPLAYED = "pokdeng-replayed"


@dataclass
class Stats:
    latency: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))  # seconds, successes
    errors: Counter[tuple[str, str]] = field(default_factory=Counter)  # (rpc, code) -> attempts that failed
    replayed: Counter[str] = field(default_factory=Counter)
    gave_up: Counter[tuple[str, str]] = field(default_factory=Counter)  # (rpc, code) raised to the caller
    retried_calls: int = 0  # calls that succeeded only after a retry (a reconnect, a conflict)

    def clear(self) -> None:
        """Forget everything counted so far (in place: every client sharing these stats starts again)."""
        self.latency.clear()
        self.errors.clear()
        self.replayed.clear()
        self.gave_up.clear()
        self.retried_calls = 0

    def merge(self, other: Stats) -> None:
        for name, values in other.latency.items():
            self.latency[name].extend(values)
        self.errors.update(other.errors)
        self.replayed.update(other.replayed)
        self.gave_up.update(other.gave_up)
        self.retried_calls += other.retried_calls

    @property
    def calls(self) -> int:
        return sum(len(v) for v in self.latency.values())

    def error_count(self, *codes: str) -> int:
        return sum(n for (_rpc, code), n in self.errors.items() if not codes or code in codes)

    def table(self) -> list[dict[str, Any]]:
        """Per RPC: calls, p50 and p99 latency (ms), errors by code."""
        rows = []
        for name in sorted(set(self.latency) | {rpc for rpc, _ in self.errors}):
            values = sorted(self.latency.get(name, []))
            errors = {code: n for (rpc, code), n in sorted(self.errors.items()) if rpc == name}
            rows.append(
                {
                    "rpc": name,
                    "calls": len(values),
                    "p50_ms": round(1000 * percentile(values, 50), 2) if values else None,
                    "p99_ms": round(1000 * percentile(values, 99), 2) if values else None,
                    "errors": errors,
                    "replayed": self.replayed.get(name, 0),
                }
            )
        return rows


def percentile(ordered: list[float], q: float) -> float:
    if not ordered:
        return float("nan")
    if len(ordered) == 1:
        return ordered[0]
    return statistics.quantiles(ordered, n=100, method="inclusive")[max(0, min(98, round(q) - 1))]


class GaveUp(RuntimeError):
    """A retryable error outlasted the request's patience."""


class HarnessClient(PokdengClient):
    """A ``PokdengClient`` with a fast-reconnecting channel, shared by the tokens of one driver."""

    def __init__(
        self,
        target: str,
        token: str | None = None,
        *,
        timeout: float = 15.0,
        patience: float = 90.0,
        max_attempts: int = 5000,
        stats: Stats | None = None,
    ) -> None:
        super().__init__(target, token, timeout=timeout, retries=0)
        self.channel.close()  # the base class's channel (never connected): ours reconnects faster
        self.channel = grpc.insecure_channel(target, options=FAST_RECONNECT)
        self.stubs = {name: type(stub)(self.channel) for name, stub in self.stubs.items()}
        self.patience = patience
        self.max_attempts = max_attempts
        self.stats = stats if stats is not None else Stats()
        self._rng = random.Random()

    def as_token(self, token: str) -> HarnessClient:
        """The same channel and stats with another bearer token."""
        other = copy.copy(self)
        other.token = token
        return other

    def send(self, service: str, method: str, **fields: Any) -> Any:
        """One call, retried with the same message (the same request id) while the error is retryable."""
        message = self.request(service, method, **fields)
        stub = getattr(self.stubs[service], method)
        give_up = time.monotonic() + self.patience
        pause = 0.02
        for attempt in range(1, self.max_attempts + 1):
            started = time.perf_counter()
            try:
                response, call = stub.with_call(message, metadata=self.metadata, timeout=self.timeout)
            except grpc.RpcError as error:
                code = error.code() if isinstance(error, grpc.Call) else grpc.StatusCode.UNKNOWN
                self.stats.errors[(method, code.name)] += 1
                if code not in RETRY:
                    self.stats.gave_up[(method, code.name)] += 1
                    raise
                if time.monotonic() + pause > give_up or attempt == self.max_attempts:
                    self.stats.gave_up[(method, code.name)] += 1
                    raise GaveUp(f"{method}: {code.name} for {self.patience:.0f}s ({attempt} attempts)") from error
                time.sleep(pause * (0.5 + self._rng.random()))
                pause = min(0.25, pause * 1.5)
                continue
            self.stats.latency[method].append(time.perf_counter() - started)
            if attempt > 1:
                self.stats.retried_calls += 1
            if dict(call.trailing_metadata() or ()).get(REPLAYED) == "true":
                self.stats.replayed[method] += 1
            return response
        raise AssertionError("unreachable")  # pragma: no cover


def stream_name(kind: pb.StreamKind.ValueType) -> str:
    """A notification's stream kind as the store names it: "wallet", "table", "round", "request", ..."""
    return pb.StreamKind.Name(kind).removeprefix("STREAM_KIND_").lower()


def command_names(commands: Iterable[pb.LegalCommand]) -> list[str]:
    """GetLegalCommands' commands as the engine names them: "place_bet", "draw", "void_round", ..."""
    return [pb.CommandKind.Name(c.kind).removeprefix("COMMAND_KIND_").lower() for c in commands]


def code_of(error: BaseException) -> str:
    if isinstance(error, grpc.Call):
        return str(error.code().name)
    return type(error).__name__


def reason_of(error: grpc.RpcError) -> str:
    """The ``google.rpc.ErrorInfo`` reason of a refused call ("" when it carries none)."""
    status = rpc_status.from_call(error) if isinstance(error, grpc.Call) else None
    packed: Any
    for packed in status.details if status is not None else ():
        if packed.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            packed.Unpack(info)
            return str(info.reason)
    return ""
