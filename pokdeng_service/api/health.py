"""``grpc.health.v1``: the serving status of the server and of every service, and the store probe behind it.

``Health`` holds the statuses and declares ``Check`` and ``Watch`` as ``Rpc`` values, served through
the one wrapper like every other method: open (no token), capped (``Limits.streams("health")``
watches at once) and idle-limited (a watch whose status has not changed for ``idle`` seconds ends,
with OK; the client watches again).

``StoreMonitor`` is the store probe: a thread that runs a cheap query on every partition's store
every ``interval`` seconds, each with a short timeout (``store.bounded.StoreProbe``). The server's
housekeeping thread reads ``healthy`` a few times a second: a probe that failed, or none that
succeeded for ``stale_after`` seconds (a probe stuck on a store that does not answer), turns every
status NOT_SERVING and makes the wrapper refuse the methods that need the store (UNAVAILABLE, at
once); the first probe that succeeds again turns them SERVING. After a graceful shutdown began,
every status stays NOT_SERVING.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import grpc
from grpc_health.v1 import health_pb2

from pokdeng_service import server_limits
from pokdeng_service.api.rpcs import Env, Rpc
from pokdeng_service.application.errors import NotFound

log = logging.getLogger("pokdeng.health")

SERVICE_NAME = "grpc.health.v1.Health"
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
SERVICE_UNKNOWN = health_pb2.HealthCheckResponse.SERVICE_UNKNOWN


class Health:
    """The statuses of the server (``""``) and of the services named; watchers wake on every change."""

    def __init__(self, services: Sequence[str], idle: float = 60.0) -> None:
        self._status: dict[str, int] = dict.fromkeys(("", *services), SERVING)
        self._changed = threading.Condition()
        self._version = 0
        self.idle = idle
        self.shutting_down = False

    def status(self, service: str) -> int | None:
        return self._status.get(service)

    def set_all(self, status: int) -> None:
        """Every status to ``status``; ignored once a graceful shutdown began."""
        with self._changed:
            if not self.shutting_down:
                self._set(status)

    def enter_graceful_shutdown(self) -> None:
        with self._changed:
            self._set(NOT_SERVING)
            self.shutting_down = True

    def _set(self, status: int) -> None:
        if all(value == status for value in self._status.values()):
            return
        for name in self._status:
            self._status[name] = status
        self._version += 1
        self._changed.notify_all()

    def _wake(self) -> None:
        with self._changed:
            self._changed.notify_all()

    # -- the methods ----------------------------------------------------------------------------

    def check(self, _env: Env, _context: grpc.ServicerContext, request: health_pb2.HealthCheckRequest) -> Any:
        status = self.status(request.service)
        if status is None:
            raise NotFound(f"no service {request.service!r} here", service=request.service)
        return health_pb2.HealthCheckResponse(status=status)

    def watch(
        self, _env: Env, context: grpc.ServicerContext, request: health_pb2.HealthCheckRequest
    ) -> Iterator[health_pb2.HealthCheckResponse]:
        context.add_callback(self._wake)  # a client that goes away wakes its watch at once
        last = None
        while context.is_active():
            with self._changed:
                status = self.status(request.service)
                current = SERVICE_UNKNOWN if status is None else status
                version = self._version
            if current != last:
                yield health_pb2.HealthCheckResponse(status=current)
                last = current
            if not self._wait_change(version, context):
                return  # idle: the client watches again

    def _wait_change(self, version: int, context: grpc.ServicerContext) -> bool:
        """Until the statuses change or the client goes away (True), or ``idle`` seconds pass (False)."""

        def moved() -> bool:
            return self._version != version or not context.is_active()

        with self._changed:
            return self._changed.wait_for(moved, self.idle)

    def rpcs(self) -> tuple[Rpc, ...]:
        common: dict[str, Any] = {
            "package": "grpc.health.v1",
            "request_type": health_pb2.HealthCheckRequest,
            "response_type": health_pb2.HealthCheckResponse,
            "open": True,
            "store": False,
            "log_level": logging.DEBUG,
        }
        return (
            Rpc("Health", "Check", frozenset(), self.check, on_loop=True, **common),
            Rpc("Health", "Watch", frozenset(), self.watch, streaming=True, kind="health", **common),
        )


class StoreMonitor:
    """Probes every store every ``interval`` seconds on its own thread; ``healthy`` says what it found."""

    def __init__(
        self,
        probes: Sequence[Callable[[], None]],
        *,
        interval: float = server_limits.PROBE_INTERVAL,
        stale_after: float = 3.0,
        recover: Callable[[], None] | None = None,
        observe: Callable[[float, bool], None] | None = None,
    ) -> None:
        self.probes = tuple(probes)
        self.interval = interval
        self.stale_after = stale_after
        self.recover = recover
        self.observe = observe  # (seconds, ok) of every probe: metrics
        self.ok = True
        self.problem = ""
        self.last_ok = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def healthy(self) -> tuple[bool, str]:
        """Whether the last probe succeeded and one succeeded recently; else what is wrong."""
        if not self.ok:
            return False, self.problem
        if time.monotonic() - self.last_ok > self.stale_after:
            return False, f"no answer for {time.monotonic() - self.last_ok:.1f} s"
        return True, ""

    def probe_once(self) -> None:
        started = time.monotonic()
        try:
            for probe in self.probes:
                probe()
        except Exception as error:
            problem = "; ".join(line.strip() for line in str(error).splitlines() if line.strip())
            if self.ok:
                log.error("store probe failed: %s: %s", type(error).__name__, problem)
            self.ok, self.problem = False, problem or type(error).__name__
            if self.observe is not None:
                self.observe(time.monotonic() - started, False)
            return
        if self.observe is not None:
            self.observe(time.monotonic() - started, True)
        was_ok = self.ok
        self.last_ok = time.monotonic()
        self.ok, self.problem = True, ""
        if not was_ok:
            log.warning("store probe: the store answers again")
            if self.recover is not None:
                with contextlib.suppress(Exception):
                    self.recover()

    def start(self) -> None:
        if self._thread is not None or not self.probes:
            return

        def loop() -> None:
            while not self._stop.is_set():
                began = time.monotonic()
                self.probe_once()
                self._stop.wait(max(0.05, self.interval - (time.monotonic() - began)))

        self.last_ok = time.monotonic()
        self._thread = threading.Thread(target=loop, name="pokdeng-store-probe", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
