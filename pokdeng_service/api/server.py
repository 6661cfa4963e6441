"""The gRPC server: pokdeng.v1 services, health, reflection, bearer-token auth, limits, TLS, graceful shutdown.

``create_server(address, app) -> (server, port)`` builds and binds a server (port 0 picks a free
port) without starting it; ``serve(...)`` runs one until SIGTERM or SIGINT. Every method, health
and reflection included, passes through the one wrapper (``api/wrapper.py``). The returned server's
``stop(grace)`` shuts down gracefully: health turns NOT_SERVING for every service, event
subscriptions end with UNAVAILABLE (clients resume from their last position), new calls are
refused, and calls in flight get ``grace`` seconds to finish. A command is one transaction in the
store, so a stopped server leaves nothing half written.

Nobody can exhaust it (``rpcs.Limits``): each caller's calls are held to a rate by class of methods
(RESOURCE_EXHAUSTED with RetryInfo beyond; the operator has none); unary calls in flight are bounded,
overall and per caller (RESOURCE_EXHAUSTED beyond), and their blocking bodies run on at most
``max_workers`` at a time; every kind of stream has its cap, one caller's share of it (and room made
for a caller with fewer), and its idle limit; the server's threads are sized so that every
admitted call and every stream within its cap has one, and a few more answer refused calls at once;
connections with no call are closed after ``connection_idle`` seconds; reflection needs a token
outside development mode. The store probe (``api.health.StoreMonitor``) turns health NOT_SERVING
within seconds of the store becoming unreachable, and the calls that need it then fail at once
with UNAVAILABLE.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import signal
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent import futures
from pathlib import Path
from types import FrameType
from typing import Any

import grpc

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_service import server_limits
from pokdeng_service.api.auth import Authenticator, TokenStore
from pokdeng_service.api.health import NOT_SERVING, SERVING, Health, StoreMonitor
from pokdeng_service.api.health import SERVICE_NAME as HEALTH_SERVICE
from pokdeng_service.api.hub import EventHub
from pokdeng_service.api.listening import DEFAULT_HOST, TlsFiles, bind_address
from pokdeng_service.api.methods import RPCS
from pokdeng_service.api.observe import TLS_CERTIFICATE, CallObserver, MetricsEndpoint
from pokdeng_service.api.rates import DEFAULT_RATES, Rate
from pokdeng_service.api.rpcs import READERS, Env, Limits, RecentRounds, Rpc, Runtime, Service
from pokdeng_service.api.wrapper import generic_handlers
from pokdeng_service.application.telemetry import STORE_SECONDS
from pokdeng_service.store.vault import VaultError

log = logging.getLogger("pokdeng.server")

SERVICE_NAMES: tuple[str, ...] = tuple(s.full_name for s in pb.DESCRIPTOR.services_by_name.values())
REFLECTION_SERVICE = "grpc.reflection.v1alpha.ServerReflection"
HOUSEKEEPING = 0.2  # seconds between two rounds of the housekeeping thread (the streams' reaper, the store's state)


def _token_store(tokens: TokenStore | str | os.PathLike[str] | None) -> TokenStore:
    if isinstance(tokens, TokenStore):
        return tokens
    if tokens is None:
        return TokenStore.development()
    return TokenStore.from_file(Path(tokens))


class PokdengServer(grpc.Server):
    """A ``grpc.Server`` whose ``stop`` shuts down gracefully (health, subscriptions, then the server) and
    releases everything: the threads, the store probe, the housekeeping thread, the metrics endpoint, the
    observer's rate limit of refused calls (registered from ``start`` to ``stop``, its last summary written
    at the stop: a stopped server's limit never sums up again).

    Its housekeeping thread, a few times a second (``HOUSEKEEPING`` seconds apart), ends the streams
    idle or stalled past their limit (``Runtime.reap``) and turns health and the wrapper's refusals by
    what the store probe found."""

    def __init__(
        self,
        server: grpc.Server,
        health: Health,
        hub: EventHub,
        tokens: TokenStore,
        runtime: Runtime,
        executor: futures.ThreadPoolExecutor,
        monitor: StoreMonitor | None = None,
        metrics: MetricsEndpoint | None = None,
        observer: CallObserver | None = None,
    ) -> None:
        self._server = server
        self.health = health
        self.hub = hub
        self.tokens = tokens
        self.runtime = runtime
        self.monitor = monitor
        self.metrics = metrics
        self.observer = observer
        self._executor = executor
        self.port = 0
        self._stopping = threading.Event()
        self._housekeeping: threading.Thread | None = None
        self._done: threading.Event | None = None

    def add_generic_rpc_handlers(self, generic_rpc_handlers: Any) -> None:
        self._server.add_generic_rpc_handlers(generic_rpc_handlers)

    def add_registered_method_handlers(self, service_name: str, method_handlers: Any) -> None:
        self._server.add_registered_method_handlers(service_name, method_handlers)

    def add_insecure_port(self, address: str) -> int:
        port: int = self._server.add_insecure_port(address)
        return port

    def add_secure_port(self, address: str, server_credentials: grpc.ServerCredentials) -> int:
        port: int = self._server.add_secure_port(address, server_credentials)
        return port

    def start(self) -> None:
        if self.observer is not None:
            self.observer.start()
        self._server.start()
        if self.monitor is not None:
            self.monitor.start()
        self._housekeeping = threading.Thread(target=self._keep_house, name="pokdeng-housekeeping", daemon=True)
        self._housekeeping.start()

    def _keep_house(self) -> None:
        while not self._stopping.wait(HOUSEKEEPING):
            try:
                self.runtime.reap()
                if self.monitor is not None:
                    ok, problem = self.monitor.healthy()
                    if ok != self.runtime.store_up:
                        state = "back" if ok else "unreachable"
                        log.warning("the event store is %s%s", state, f": {problem}" if problem else "")
                    self.runtime.store_up, self.runtime.store_problem = ok, problem
                    self.health.set_all(SERVING if ok else NOT_SERVING)
            except Exception:  # pragma: no cover - keep the house kept
                log.exception("housekeeping failed")

    def stop(self, grace: float | None) -> threading.Event:
        """Refuse new work and let calls in flight finish within ``grace`` seconds; the event is set when done.

        Health turns NOT_SERVING and event subscriptions end (UNAVAILABLE, with the position to resume
        after) before the server stops taking calls."""
        if self._done is not None:
            return self._done
        self.health.enter_graceful_shutdown()
        self.hub.close()
        stopped: threading.Event = self._server.stop(grace)
        done = self._done = threading.Event()

        def release() -> None:
            stopped.wait()
            self._stopping.set()
            if self._housekeeping is not None:
                self._housekeeping.join(timeout=5)
            if self.monitor is not None:
                self.monitor.stop()
            if self.metrics is not None:
                with contextlib.suppress(Exception):
                    self.metrics.close()
            if self.observer is not None:
                self.observer.stop()  # (the refusals' last summary: no call of this server logs after it)
            self._executor.shutdown(wait=False)
            done.set()

        threading.Thread(target=release, name="pokdeng-grpc-release", daemon=True).start()
        return done

    def wait_for_termination(self, timeout: float | None = None) -> bool:
        result: bool = self._server.wait_for_termination(timeout)
        return result


def _reflection(names: Sequence[str], development: bool) -> Rpc:
    """Server reflection through the one wrapper: it needs a token outside development mode."""
    from grpc_reflection.v1alpha import reflection, reflection_pb2

    servicer: Any = reflection.ReflectionServicer(names)

    def body(_env: Env, context: Any, requests: Any) -> Any:
        return servicer.ServerReflectionInfo(requests, context)

    return Rpc(
        "ServerReflection",
        "ServerReflectionInfo",
        READERS,
        body,
        streaming=True,
        client_streaming=True,
        package="grpc.reflection.v1alpha",
        request_type=reflection_pb2.ServerReflectionRequest,
        response_type=reflection_pb2.ServerReflectionResponse,
        open=development,
        store=False,
        kind="reflection",
    )


def default_probes(app: Service) -> tuple[list[Callable[[], None]], Callable[[], None]]:
    """One ``StoreProbe`` per partition, and what recovers them all (the pools' connections renewed)."""
    from pokdeng_service.store.bounded import StoreProbe

    probes = [StoreProbe(partition) for partition in app.apps]

    def recover() -> None:
        for probe in probes:
            probe.recover()

    return list(probes), recover


def _token_key(app: Service) -> bytes:
    """The key of page and resume tokens: the vault's (shared by every replica); without a readable vault
    key, one for this process alone (its tokens then work only here)."""
    try:
        return app.apps[0].vault.token_key
    except VaultError as error:
        log.warning("page and resume tokens work on this server only (no vault key: %s)", error)
        return secrets.token_bytes(32)


def create_server(
    address: str,
    app: Service,
    *,
    tokens: TokenStore | str | os.PathLike[str] | None = None,
    max_workers: int = server_limits.SERVER_WORKERS,
    max_concurrent_rpcs: int | None = None,
    max_calls_per_caller: int | None = None,
    max_subscriptions: int | None = None,
    max_streams: Mapping[str, int] | None = None,
    costly_workers: int = server_limits.COSTLY_WORKERS,
    stream_idle: float = server_limits.STREAM_IDLE,
    rates: Mapping[str, Rate] | None = None,
    connection_idle: float = server_limits.CONNECTION_IDLE,
    poll_interval: float = server_limits.POLL_INTERVAL,
    heartbeat: float = server_limits.HEARTBEAT,
    read_models: RecentRounds | None = None,
    tls: TlsFiles | None = None,
    metrics_port: int | None = None,
    metrics_host: str = DEFAULT_HOST,
    metrics_threads: int = server_limits.METRICS_THREADS,
    metrics_timeout: float = server_limits.METRICS_TIMEOUT,
    access_log: bool = True,
    log_refusals_per_second: float = server_limits.LOG_REFUSALS_PER_SECOND,
    probe: bool = True,
    probe_interval: float = server_limits.PROBE_INTERVAL,
    probes: Sequence[Callable[[], None]] | None = None,
    recover: Callable[[], None] | None = None,
) -> tuple[PokdengServer, int]:
    """A bound, not yet started server for ``app`` and the port it is bound to.

    ``address`` is ``host:port``; port 0 picks a free port; a bare port binds 127.0.0.1. ``tokens``
    is a ``TokenStore``, the path of a token file, or None for development mode (a random operator
    token, printed once and kept as ``server.tokens.development_token``; reflection then needs no
    token). ``read_models`` (``readmodels.ReadModels``, kept up to date by its owner) answers
    ListTables, ListWallets and ListRounds for any table or player; without it ListTables and ListWallets
    are refused (FAILED_PRECONDITION) and ListRounds needs a table id and walks that table's rounds.

    Limits (docs/operations.md, sizing): ``max_workers`` threads run the blocking bodies; at most
    ``max_concurrent_rpcs`` unary calls in flight (default 8 a worker), ``max_calls_per_caller`` of
    them for one principal (default half); streams by kind (``max_streams``: ``events`` default
    ``max_subscriptions`` or half the workers, ``health`` 32, ``reflection`` 8, ``watch`` the workers), each
    ended when its client keeps it waiting ``stream_idle`` seconds (a watch or feed also when it had
    nothing but heartbeats to send that long); ``rates``: each caller's rate by class of methods
    (``api/rates.py``: ``reads``, ``commands``, ``streams``; a class not named keeps its default,
    ``DEFAULT_RATES``; ``Rate(0, 0)``: none); a connection with no call for ``connection_idle``
    seconds is closed. ``tls``: TLS (mutual with a client CA) instead of plaintext; its certificate must be
    valid now (``TlsFiles.check``), and ``pokdeng_tls_certificate_expiry_days`` shows its days left.
    ``metrics_port``: the Prometheus endpoint (0: a free port; None: none) on ``metrics_host``, with at most
    ``metrics_threads`` connections at once, each cut after ``metrics_timeout`` seconds. The call log
    writes at most ``log_refusals_per_second`` lines a second of the calls a peer host makes without a valid
    token (``observe.CallObserver``). ``probe``: the store probe (``probes``, default one ``StoreProbe`` per
    partition) every ``probe_interval`` seconds.
    """
    if max_workers < 2:
        raise ValueError("max_workers must be at least 2")
    store = _token_store(tokens)
    limits = _limits(
        max_workers,
        max_concurrent_rpcs,
        max_calls_per_caller,
        max_subscriptions,
        max_streams,
        stream_idle,
        rates,
        costly_workers,
    )
    not_after = tls.check() if tls is not None else None  # (before anything starts: a bad certificate stops here)
    runtime, observer, hub = _runtime(limits, access_log, log_refusals_per_second)
    env = Env(app, hub, read_models, poll_interval, heartbeat, token_key=_token_key(app), runtime=runtime)
    health = Health(SERVICE_NAMES, idle=stream_idle)
    names = (*SERVICE_NAMES, HEALTH_SERVICE, REFLECTION_SERVICE)
    rpcs = (*RPCS, *health.rpcs(), _reflection(names, store.development_token is not None))
    monitor = _store_monitor(app, probes, recover, probe_interval) if probe else None
    threads = limits.threads(rpc.stream_kind for rpc in rpcs if rpc.streaming)
    workers = futures.ThreadPoolExecutor(max_workers=threads, thread_name_prefix="pokdeng-grpc")
    server = _grpc_server(
        workers, generic_handlers(rpcs, env, Authenticator(store), runtime), threads, limits, connection_idle
    )
    port, metrics = _open(server, workers, address, tls, metrics_port, metrics_host, metrics_threads, metrics_timeout)
    if not_after is not None:
        TLS_CERTIFICATE.not_after = not_after
    wrapped = PokdengServer(server, health, hub, store, runtime, workers, monitor, metrics, observer)
    wrapped.port = port
    return wrapped, port


def _limits(
    max_workers: int,
    max_concurrent_rpcs: int | None,
    max_calls_per_caller: int | None,
    max_subscriptions: int | None,
    max_streams: Mapping[str, int] | None,
    stream_idle: float,
    rates: Mapping[str, Rate] | None,
    costly_workers: int,
) -> Limits:
    """The server's limits from ``create_server``'s settings, each unset one at its default."""
    concurrent = max_concurrent_rpcs or max_workers * server_limits.CALLS_A_WORKER
    streams = {
        "events": max_subscriptions or max(1, max_workers // 2),
        "health": server_limits.HEALTH_WATCHES,
        "reflection": server_limits.REFLECTION_STREAMS,
        "watch": max(server_limits.MIN_WATCHES, max_workers),
        **(max_streams or {}),
    }
    return Limits(
        workers=max_workers,
        max_concurrent_rpcs=concurrent,
        max_calls_per_caller=max_calls_per_caller or max(1, concurrent // 2),
        max_streams=streams,
        stream_idle=stream_idle,
        rates={**DEFAULT_RATES, **(rates or {})},
        costly_workers=costly_workers,
    )


def _runtime(limits: Limits, access_log: bool, refusals_per_second: float) -> tuple[Runtime, CallObserver, EventHub]:
    """Admission within ``limits``, its observer (the metrics and the call log) and the event hub it wakes."""
    observer = CallObserver(access_log=access_log, refusals_per_second=refusals_per_second)
    runtime = Runtime(limits, observer)
    observer.bind(runtime)
    hub = EventHub(limits.max_streams["events"])
    runtime.wake = hub.notify  # (a stream told to end looks at once: ``Runtime.reap``, ``open_stream``)
    return runtime, observer, hub


def _store_monitor(
    app: Service, probes: Sequence[Callable[[], None]] | None, recover: Callable[[], None] | None, interval: float
) -> StoreMonitor:
    """The store probe: ``probes`` (default one ``StoreProbe`` per partition) every ``interval`` seconds."""
    found, recovers = (list(probes), recover) if probes is not None else default_probes(app)
    return StoreMonitor(
        found, interval=interval, stale_after=max(3.0, 3 * interval), recover=recovers, observe=_observe_probe
    )


def _grpc_server(
    workers: futures.ThreadPoolExecutor,
    handlers: list[grpc.GenericRpcHandler],
    threads: int,
    limits: Limits,
    connection_idle: float,
) -> grpc.Server:
    """grpc's server on ``workers``, with every declared method's handler and grpc's own bounds."""
    return grpc.server(
        workers,
        handlers=handlers,
        maximum_concurrent_rpcs=threads + 256,  # grpc's own bound on every call at once, queued ones too
        options=[
            ("grpc.so_reuseport", 0),
            ("grpc.max_concurrent_streams", 100),  # per connection
            ("grpc.max_receive_message_length", limits.max_request_bytes),
            ("grpc.max_connection_idle_ms", int(connection_idle * 1000)),
        ],
    )


def _open(
    server: grpc.Server,
    workers: futures.ThreadPoolExecutor,
    address: str,
    tls: TlsFiles | None,
    metrics_port: int | None,
    metrics_host: str,
    metrics_threads: int,
    metrics_timeout: float,
) -> tuple[int, MetricsEndpoint | None]:
    """The Prometheus endpoint opened (None: none) and ``server`` bound to ``address``: the port and the
    endpoint; if either fails, the endpoint closed and the workers shut down before the error goes on."""
    metrics = None
    try:
        if metrics_port is not None:
            metrics = MetricsEndpoint(metrics_port, metrics_host, threads=metrics_threads, timeout=metrics_timeout)
        return _listen(server, address, tls), metrics
    except BaseException:
        if metrics is not None:
            metrics.close()
        workers.shutdown(wait=False)
        raise


def _listen(server: grpc.Server, address: str, tls: TlsFiles | None) -> int:
    """Bind ``server`` to ``address`` (plaintext, or TLS); the port bound. ``OSError`` if it cannot listen."""
    target = bind_address(address)
    try:
        port: int = (
            server.add_insecure_port(target) if tls is None else server.add_secure_port(target, tls.credentials())
        )
    except RuntimeError as error:
        raise OSError(f"cannot listen on {target}: {error}") from None
    if not port:
        raise OSError(f"cannot listen on {target}")
    return port


def _observe_probe(seconds: float, _ok: bool) -> None:
    STORE_SECONDS.labels("probe").observe(seconds)


def serve(
    address: str,
    app: Service,
    *,
    tokens: TokenStore | str | os.PathLike[str] | None = None,
    max_workers: int = server_limits.SERVER_WORKERS,
    grace: float = server_limits.SHUTDOWN_GRACE,
    ready: Callable[[PokdengServer, int], None] | None = None,
    stop: threading.Event | None = None,
    read_models: RecentRounds | None = None,
    **options: Any,
) -> int:
    """Serve until SIGTERM or SIGINT (or ``stop`` is set), then shut down gracefully within ``grace``
    seconds. Returns an exit code. ``options``: ``create_server``'s.

    ``ready(server, port)`` is called once the server listens. Signal handlers are
    installed only when called from the main thread.
    """
    server, port = create_server(
        address, app, tokens=tokens, max_workers=max_workers, read_models=read_models, **options
    )
    stopping = stop or threading.Event()
    previous: dict[signal.Signals, Any] = {}

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("received %s: shutting down (grace %.1fs)", signal.Signals(signum).name, grace)
        stopping.set()

    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            previous[signum] = signal.signal(signum, on_signal)
    try:
        server.start()
        scheme = "TLS" if options.get("tls") is not None else "plaintext"
        log.info("pokdeng gRPC listening on %s (port %d, %s)", bind_address(address), port, scheme)
        if server.metrics is not None:
            log.info("metrics on %s", server.metrics.url)
        if ready is not None:
            ready(server, port)
        while not stopping.wait(0.5):
            pass
    finally:
        server.stop(grace).wait()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        log.info("pokdeng gRPC stopped")
    return 0
