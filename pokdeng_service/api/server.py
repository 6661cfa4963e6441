"""The gRPC server: pokdeng.v1 services, health, reflection, bearer-token auth, graceful shutdown.

``create_server(address, app) -> (server, port)`` builds and binds a server (port 0
picks a free port) without starting it; ``serve(...)`` runs one until SIGTERM or
SIGINT. The returned server's ``stop(grace)`` shuts down gracefully: health turns
NOT_SERVING for every service, event subscriptions end with UNAVAILABLE (clients
resume from their last position), new calls are refused, and calls in flight get
``grace`` seconds to finish. A command is one transaction in the store, so a
stopped server leaves nothing half written.

Concurrency is bounded: ``max_workers`` threads run calls, at most
``max_concurrent_rpcs`` calls are accepted at once (more get RESOURCE_EXHAUSTED),
and event subscriptions, which each hold a thread while they last, are limited to
half the workers. A call whose deadline has passed is not started.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable, Sequence
from concurrent import futures
from pathlib import Path
from types import FrameType
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from pokdeng_service.api.auth import Authenticator, TokenStore
from pokdeng_service.api.hub import EventHub
from pokdeng_service.api.methods import RPCS
from pokdeng_service.api.rpcs import Env, RecentRounds, Service, generic_handlers
from pokdeng_service.api.v1 import pokdeng_pb2 as pb

log = logging.getLogger("pokdeng.server")

DEFAULT_HOST = "127.0.0.1"
SERVICE_NAMES: tuple[str, ...] = tuple(s.full_name for s in pb.DESCRIPTOR.services_by_name.values())


def bind_address(address: str) -> str:
    """``host:port`` to bind: a bare port (``"50051"``, ``":50051"``) binds the loopback interface only."""
    text = address.strip()
    if text.isdigit():
        return f"{DEFAULT_HOST}:{text}"
    if text.startswith(":"):
        return f"{DEFAULT_HOST}{text}"
    if ":" not in text:
        raise ValueError(f"not an address: {address!r} (expected host:port)")
    return text


def _token_store(tokens: TokenStore | str | os.PathLike[str] | None) -> TokenStore:
    if isinstance(tokens, TokenStore):
        return tokens
    if tokens is None:
        return TokenStore.development()
    return TokenStore.from_file(Path(tokens))


class PokdengServer(grpc.Server):
    """A ``grpc.Server`` whose ``stop`` shuts down gracefully (health, subscriptions, then the server)."""

    def __init__(
        self,
        server: grpc.Server,
        health_servicer: health.HealthServicer,
        hub: EventHub,
        tokens: TokenStore,
        executors: Sequence[futures.ThreadPoolExecutor],
    ) -> None:
        self._server = server
        self.health = health_servicer
        self.hub = hub
        self.tokens = tokens
        self._executors = executors
        self.port = 0

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
        self._server.start()

    def stop(self, grace: float | None) -> threading.Event:
        """Refuse new work and let calls in flight finish within ``grace`` seconds; the event is set when done."""
        self.health.enter_graceful_shutdown()
        self.hub.close()
        done: threading.Event = self._server.stop(grace)

        def release() -> None:
            done.wait()
            for executor in self._executors:
                executor.shutdown(wait=False)

        threading.Thread(target=release, name="pokdeng-grpc-release", daemon=True).start()
        return done

    def wait_for_termination(self, timeout: float | None = None) -> bool:
        result: bool = self._server.wait_for_termination(timeout)
        return result


def create_server(
    address: str,
    app: Service,
    *,
    tokens: TokenStore | str | os.PathLike[str] | None = None,
    max_workers: int = 8,
    max_concurrent_rpcs: int | None = None,
    max_subscriptions: int | None = None,
    poll_interval: float = 0.2,
    heartbeat: float = 15.0,
    read_models: RecentRounds | None = None,
) -> tuple[PokdengServer, int]:
    """A bound, not yet started server for ``app`` and the port it is bound to.

    ``address`` is ``host:port``; port 0 picks a free port; a bare port binds
    127.0.0.1. ``tokens`` is a ``TokenStore``, the path of a token file, or None for
    development mode (a random operator token, printed once and kept as
    ``server.tokens.development_token``). ``read_models`` (``readmodels.ReadModels``, kept
    up to date by its owner) answers ListRecentRounds for any table or player; without it
    ListRecentRounds needs a table id and walks that table's rounds.
    """
    if max_workers < 2:
        raise ValueError("max_workers must be at least 2")
    store = _token_store(tokens)
    authenticator = Authenticator(store)
    workers = futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="pokdeng-grpc")
    health_pool = futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="pokdeng-health")
    server = grpc.server(
        workers,
        maximum_concurrent_rpcs=max_concurrent_rpcs or max_workers * 16,
        options=[("grpc.so_reuseport", 0)],
    )
    hub = EventHub(max_subscriptions or max(1, max_workers // 2))
    env = Env(app, hub, read_models, poll_interval, heartbeat)
    server.add_generic_rpc_handlers(generic_handlers(RPCS, env, authenticator))
    health_servicer = health.HealthServicer(experimental_non_blocking=True, experimental_thread_pool=health_pool)
    for name in ("", *SERVICE_NAMES):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection((*SERVICE_NAMES, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
    target = bind_address(address)
    try:
        port = server.add_insecure_port(target)
    except RuntimeError as error:
        raise OSError(f"cannot listen on {target}: {error}") from None
    if not port:
        raise OSError(f"cannot listen on {target}")
    wrapped = PokdengServer(server, health_servicer, hub, store, (workers, health_pool))
    wrapped.port = port
    return wrapped, port


def serve(
    address: str,
    app: Service,
    *,
    tokens: TokenStore | str | os.PathLike[str] | None = None,
    max_workers: int = 8,
    grace: float = 10.0,
    ready: Callable[[PokdengServer, int], None] | None = None,
    stop: threading.Event | None = None,
    read_models: RecentRounds | None = None,
) -> int:
    """Serve until SIGTERM or SIGINT (or ``stop`` is set), then shut down gracefully. Returns an exit code.

    ``ready(server, port)`` is called once the server listens. Signal handlers are
    installed only when called from the main thread.
    """
    server, port = create_server(address, app, tokens=tokens, max_workers=max_workers, read_models=read_models)
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
        log.info("pokdeng gRPC listening on %s (port %d)", bind_address(address), port)
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
