"""``grpc.health.v1``: the serving status of the server and of every service, and the store probe behind it.

``Health`` holds the statuses (on the server's event loop) and declares ``Check`` and ``Watch`` as
``Rpc`` values, served through the one wrapper like every other method: open (no token), capped
(``Limits.streams("health")`` watches at once) and idle-limited (a watch whose status has not
changed for ``Limits.stream_idle`` seconds ends, with OK; the client watches again).

``StoreMonitor`` is the store probe: a thread that runs a cheap query on every partition's store
every ``interval`` seconds, each with a short timeout (``store.probe``). The server reads
``healthy`` on its loop a few times a second: a probe that failed, or none that succeeded for
``stale_after`` seconds (a probe stuck on a store that does not answer), turns every status
NOT_SERVING and makes the wrapper refuse the methods that need the store (UNAVAILABLE, at once);
the first probe that succeeds again turns them SERVING. After a graceful shutdown began, every
status stays NOT_SERVING.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from grpc_health.v1 import health_pb2

from pokdeng_service.api.rpcs import CallContext, Env, Rpc
from pokdeng_service.application.errors import NotFound

log = logging.getLogger("pokdeng.health")

SERVICE_NAME = "grpc.health.v1.Health"
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
SERVICE_UNKNOWN = health_pb2.HealthCheckResponse.SERVICE_UNKNOWN


class Health:
    """The statuses of the server (``""``) and of the services named; touched on the event loop only."""

    def __init__(self, services: Sequence[str], idle: float = 60.0) -> None:
        self._status: dict[str, int] = dict.fromkeys(("", *services), SERVING)
        self._changed: asyncio.Event | None = None
        self.idle = idle
        self.shutting_down = False

    def status(self, service: str) -> int | None:
        return self._status.get(service)

    def _event(self) -> asyncio.Event:
        if self._changed is None:
            self._changed = asyncio.Event()
        return self._changed

    def set_all(self, status: int) -> None:
        """Every status to ``status`` (on the loop); ignored once a graceful shutdown began."""
        if self.shutting_down:
            return
        self._set(status)

    def enter_graceful_shutdown(self) -> None:
        self._set(NOT_SERVING)
        self.shutting_down = True

    def _set(self, status: int) -> None:
        if all(value == status for value in self._status.values()):
            return
        for name in self._status:
            self._status[name] = status
        changed, self._changed = self._changed, None
        if changed is not None:
            changed.set()

    # -- the methods ----------------------------------------------------------------------------

    def check(self, _env: Env, _context: CallContext, request: health_pb2.HealthCheckRequest) -> Any:
        status = self.status(request.service)
        if status is None:
            raise NotFound(f"no service {request.service!r} here", service=request.service)
        return health_pb2.HealthCheckResponse(status=status)

    async def watch(
        self, _env: Env, _context: CallContext, request: health_pb2.HealthCheckRequest
    ) -> AsyncIterator[health_pb2.HealthCheckResponse]:
        last = None
        while True:
            status = self.status(request.service)
            current = SERVICE_UNKNOWN if status is None else status
            if current != last:
                yield health_pb2.HealthCheckResponse(status=current)
                last = current
            try:
                await asyncio.wait_for(self._event().wait(), self.idle)
            except TimeoutError:
                return  # idle: the client watches again

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
        interval: float = 1.0,
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
