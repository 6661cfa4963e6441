"""What operators see of the calls: Prometheus metrics, one structured log line per call, the metrics endpoint.

``CallObserver`` is the wrapper's observer (``rpcs.Observer``): for every call it counts
``pokdeng_rpcs_total{method, code}`` and observes ``pokdeng_rpc_seconds{method}``, and it writes one
line to the ``pokdeng.calls`` logger: method, role, player (a player token's), code, reason, latency,
request id, the round, table or wallet the request names, and the peer. Never a token (the line is
built from named fields only, never from the metadata), never a request's payload beyond those ids
(so never a seed), never an error's message. The formatters cut every field (``logs.cut``: 128
characters and the whole value's length and SHA-256), so a request's ids cost the log little however
long they are; and the lines of calls refused without a valid token are rate-limited per peer host
(``refusals_per_second``, 5 by default; the rest counted in ``pokdeng_log_suppressed_total
{source="unauthenticated"}`` and summed up in one line every 10 s): anyone who can reach the port can
make such calls, and a flood of them must not flood the log.

The log's formatters and its writer live in ``pokdeng_service.logs``. ``MetricsEndpoint`` serves the process's
registry (the RPC metrics here, the application's in ``application.telemetry``, the server's gauges
and the library's process collector) over HTTP on 127.0.0.1 unless told otherwise, on a bounded server
(``api.metrics_http``). ``pokdeng_build_info`` names the versions running; ``TLS_CERTIFICATE`` shows the
days left of the gRPC port's certificate (``pokdeng_tls_certificate_expiry_days``) once a server serves one.
"""

from __future__ import annotations

import logging
import platform
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import grpc
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, Info
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from pokdeng_core.catalog import ENGINE_VERSION, SHUFFLE_ALGORITHM
from pokdeng_service.api.admission import caller_key
from pokdeng_service.api.metrics_http import serve_metrics
from pokdeng_service.api.rpcs import Rpc, Runtime
from pokdeng_service.application.principal import Principal
from pokdeng_service.logs import RateLimit
from pokdeng_service.server_limits import LOG_REFUSALS_PER_SECOND
from pokdeng_service.version import __version__

CALLS = logging.getLogger("pokdeng.calls")
RPC_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

RPCS = Counter("pokdeng_rpcs", "RPCs served, by method and status code", ["method", "code"])
RPC_SECONDS = Histogram("pokdeng_rpc_seconds", "RPC latency in the server, by method", ["method"], buckets=RPC_BUCKETS)
VERIFICATION_FAILURES = Counter(
    "pokdeng_verification_failures", "Rounds that failed a verification through the API, by check", ["check"]
)
IN_FLIGHT = Gauge("pokdeng_rpcs_in_flight", "Unary calls running or waiting for a worker")
STREAMS = Gauge("pokdeng_streams_open", "Open streams, by kind", ["kind"])
STORE_UP = Gauge("pokdeng_store_up", "1 while the store probe finds every store answering, else 0")
BUILD = Info("pokdeng_build", "The versions running: the package, the engine, the shuffle, Python (value 1)")
BUILD.info(
    {
        "version": __version__,
        "engine_version": ENGINE_VERSION,
        "shuffle": SHUFFLE_ALGORITHM,
        "python_version": platform.python_version(),
    }
)


class _TlsCertificate(Collector):
    """``pokdeng_tls_certificate_expiry_days``: the days until the gRPC port's certificate expires (negative once
    it has), read when scraped; no series while no server in this process serves TLS."""

    def __init__(self) -> None:
        self.not_after: datetime | None = None

    def collect(self) -> Iterator[Metric]:
        not_after = self.not_after
        if not_after is None:
            return
        family = GaugeMetricFamily(
            "pokdeng_tls_certificate_expiry_days",
            "Days until the gRPC port's TLS certificate expires (negative: expired)",
        )
        family.add_metric([], (not_after - datetime.now(UTC)).total_seconds() / 86400)
        yield family


TLS_CERTIFICATE = _TlsCertificate()
REGISTRY.register(TLS_CERTIFICATE)

_ID_FIELDS = ("request_id", "round_id", "table_id", "wallet_id")
_STREAM_KINDS = ("events", "health", "reflection", "watch")


def _ids(request_type: Any) -> tuple[str, ...]:
    fields = getattr(getattr(request_type, "DESCRIPTOR", None), "fields_by_name", {})
    return tuple(name for name in _ID_FIELDS if name in fields)


class CallObserver:
    """Counts and logs every call (the wrapper's ``Observer``); per method, its metric children are made once."""

    def __init__(self, access_log: bool = True, refusals_per_second: float = LOG_REFUSALS_PER_SECOND) -> None:
        self.access_log = access_log
        # the lines of calls refused without a valid token, per peer host (a burst of twice the rate)
        self.refusals = RateLimit("unauthenticated", refusals_per_second, 2 * refusals_per_second, logger=CALLS.name)
        self._children: dict[tuple[str, str], Any] = {}
        self._latency: dict[str, Any] = {}
        self._ids: dict[str, tuple[str, ...]] = {}

    def start(self) -> None:
        """The refusals' summaries written from now on, every 10 s (``RateLimit.register``; the server's ``start``)."""
        self.refusals.register()

    def stop(self) -> None:
        """The refusals' last summary written now, and none after (``RateLimit.unregister``; the server's
        ``stop``, once its calls have ended)."""
        self.refusals.unregister()

    def bind(self, runtime: Runtime) -> None:
        """The gauges that read the server's counters when scraped (the last server bound wins)."""
        IN_FLIGHT.set_function(lambda: runtime.in_flight)
        STORE_UP.set_function(lambda: 1.0 if runtime.store_up else 0.0)
        for kind in sorted({*_STREAM_KINDS, *runtime.limits.max_streams}):
            STREAMS.labels(kind).set_function(lambda kind=kind: runtime.streams.get(kind, 0))  # type: ignore[misc]

    def finished(
        self,
        rpc: Rpc,
        principal: Principal | None,
        request: Any,
        response: Any,
        code: str,
        reason: str,
        seconds: float,
        context: grpc.ServicerContext | None,
    ) -> None:
        name = rpc.name
        self._count(name, code, seconds)
        if not self.access_log or not CALLS.isEnabledFor(_level(rpc, code)):
            return
        if principal is None and code != "OK" and not self.refusals.allow(caller_key(None, context)):
            return  # (over its peer's rate: counted, and summed up in the next summary line)
        line = self._line(rpc, principal, request, response, code, reason, seconds)
        if context is not None:
            line["peer"] = context.peer()
        level = _level(rpc, code)
        # (a record made here, not through Logger.log: no caller lookup, no message formatting)
        record = CALLS.makeRecord(CALLS.name, level, "", 0, "%s %s %.1fms", (name, code, seconds * 1000), None)
        record.call = line
        CALLS.handle(record)

    def _count(self, name: str, code: str, seconds: float) -> None:
        """The call in the metrics: its method's calls by code, and its latency."""
        child = self._children.get((name, code))
        if child is None:
            child = self._children[(name, code)] = RPCS.labels(name, code)
        child.inc()
        latency = self._latency.get(name)
        if latency is None:
            latency = self._latency[name] = RPC_SECONDS.labels(name)
        latency.observe(seconds)

    def _line(
        self,
        rpc: Rpc,
        principal: Principal | None,
        request: Any,
        response: Any,
        code: str,
        reason: str,
        seconds: float,
    ) -> dict[str, Any]:
        """The call's log line: method, role, code, latency, the player, the reason, and the ids it names (the
        request's, else the round of its reply)."""
        name = rpc.name
        line: dict[str, Any] = {
            "method": name,
            "role": principal.role.value if principal is not None else "none",
            "code": code,
            "latency_ms": round(seconds * 1000, 3),
        }
        if principal is not None and principal.player:
            line["player"] = principal.player
        if reason:
            line["reason"] = reason
        ids = self._ids.get(name)
        if ids is None:
            ids = self._ids[name] = _ids(rpc.request_type if rpc.request_type is not None else type(request))
        for key in ids:
            value = getattr(request, key, "")
            if value:
                line[key] = value
        if "round_id" not in line and response is not None:
            round_ = getattr(response, "round", None)
            round_id = getattr(round_, "round_id", "") if round_ is not None else ""
            if round_id:
                line["round_id"] = round_id
        return line


_WARN = frozenset({"UNAVAILABLE", "RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED", "ABORTED"})
_ERROR = frozenset({"INTERNAL", "DATA_LOSS", "UNKNOWN"})


def _level(rpc: Rpc, code: str) -> int:
    if code in _ERROR:
        return logging.ERROR
    if code in _WARN:
        return max(rpc.log_level, logging.WARNING)
    return rpc.log_level


def verification_failed(check: str) -> None:
    VERIFICATION_FAILURES.labels(check).inc()


class MetricsEndpoint:
    """The Prometheus endpoint (``/metrics``) on threads of its own; ``port`` 0 picks a free one. Bounded
    (``api.metrics_http``): at most ``threads`` connections at once, each cut after ``timeout`` seconds."""

    def __init__(
        self,
        port: int,
        host: str = "127.0.0.1",
        registry: CollectorRegistry = REGISTRY,
        *,
        threads: int = 4,
        timeout: float = 5.0,
    ) -> None:
        try:
            self._server, self._thread = serve_metrics(port, host, registry, threads=threads, timeout=timeout)
        except OSError as error:
            raise OSError(f"cannot serve metrics on {host}:{port}: {error.strerror or error}") from None
        self.host = host
        self.port = int(self._server.server_port)

    @property
    def server(self) -> Any:
        """The HTTP server (``metrics_http.BoundedMetricsServer``: its ``refused`` and ``cut`` connections)."""
        return self._server

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


__all__ = [
    "BUILD",
    "CALLS",
    "TLS_CERTIFICATE",
    "CallObserver",
    "MetricsEndpoint",
    "verification_failed",
]
