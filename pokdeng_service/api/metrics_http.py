"""The metrics endpoint's HTTP server, bounded: a fixed pool of threads, a deadline for every connection.

prometheus_client's ``start_http_server`` starts a thread for every connection and keeps it as long as
the client keeps the connection open: 600 requests left unfinished were 600 threads that stayed.
``BoundedMetricsServer`` serves the same WSGI application (``prometheus_client.make_wsgi_app``: the
text and OpenMetrics formats, gzip, ``name[]`` filters) with at most ``threads`` connections at once,
each on a thread of a fixed pool:

* a connection past those is answered ``503`` at once and closed (counted in ``refused``), never queued;
* every socket operation waits at most ``timeout`` seconds, and a connection still open ``timeout``
  seconds after it was accepted (a request sent a byte at a time, an answer not read) is cut by the
  server's reaper thread, so a slot is never held longer;
* no line is logged per request, and no name is looked up (the bound address is the server's name).

Its threads: the accepting thread, the reaper and at most ``threads`` workers, whatever the clients do.
"""

from __future__ import annotations

import contextlib
import socket
import socketserver
import threading
import time
from concurrent import futures
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from prometheus_client import REGISTRY, CollectorRegistry, make_wsgi_app

REFUSAL = b"HTTP/1.0 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


class _QuietHandler(WSGIRequestHandler):
    """A request, with the server's per-operation timeout, and no line logged for it."""

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(getattr(self.server, "timeout_seconds", None))

    def log_message(self, format: str, *args: Any) -> None:
        pass


class BoundedMetricsServer(WSGIServer):
    """A WSGI server with at most ``threads`` connections at once, each cut ``timeout`` seconds after it
    was accepted (the module's docstring)."""

    allow_reuse_address = True
    request_queue_size = 64

    def __init__(
        self,
        address: tuple[str, int],
        app: Any,
        *,
        threads: int = 4,
        timeout: float = 5.0,
        family: socket.AddressFamily = socket.AF_INET,
    ) -> None:
        if threads < 1 or timeout <= 0:
            raise ValueError("the metrics server needs at least one thread and a positive timeout")
        self.address_family = family
        self.threads = threads
        self.timeout_seconds = timeout
        self.refused = 0
        self.cut = 0
        self._slots = threading.BoundedSemaphore(threads)
        self._open: dict[socket.socket, float] = {}  # connection -> when it is cut
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._pool = futures.ThreadPoolExecutor(max_workers=threads, thread_name_prefix="pokdeng-metrics")
        self._reaper = threading.Thread(target=self._reap, name="pokdeng-metrics-reaper", daemon=True)
        self._reaper.start()
        super().__init__(address, _QuietHandler)  # (binds and listens; closes all of the above if it cannot)
        self.set_app(app)

    def server_bind(self) -> None:
        """Bind, and take the address as the server's name (``HTTPServer`` would look its name up)."""
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)
        self.setup_environ()

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.refused += 1
            with contextlib.suppress(OSError):
                request.setblocking(False)
                request.send(REFUSAL)
            self.shutdown_request(request)
            return
        with self._lock:
            self._open[request] = time.monotonic() + self.timeout_seconds
        try:
            self._pool.submit(self._work, request, client_address)
        except RuntimeError:  # (closing: the pool takes no more)
            self._done(request)

    def _work(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:  # (a client gone, a connection cut: nothing to tell)
            pass
        finally:
            self._done(request)

    def _done(self, request: Any) -> None:
        with self._lock:
            self._open.pop(request, None)
        self.shutdown_request(request)
        self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass

    def _reap(self) -> None:
        pause = max(0.05, min(1.0, self.timeout_seconds / 4))
        while not self._closing.wait(pause):
            now = time.monotonic()
            with self._lock:
                late = [connection for connection, deadline in self._open.items() if deadline <= now]
                for connection in late:
                    del self._open[connection]
            for connection in late:
                self.cut += 1
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)

    def server_close(self) -> None:
        self._closing.set()
        super().server_close()
        with self._lock:
            still = list(self._open)
        for connection in still:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        self._pool.shutdown(wait=False)
        self._reaper.join(timeout=5)


def serve_metrics(
    port: int,
    host: str = "127.0.0.1",
    registry: CollectorRegistry = REGISTRY,
    *,
    threads: int = 4,
    timeout: float = 5.0,
) -> tuple[BoundedMetricsServer, threading.Thread]:
    """A ``BoundedMetricsServer`` of ``registry`` on ``host:port`` (0: a free port), serving on a thread."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, _, _, _, address = infos[0]
    server = BoundedMetricsServer(
        (str(address[0]), port), make_wsgi_app(registry), threads=threads, timeout=timeout, family=family
    )
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.5}, daemon=True)
    thread.name = "pokdeng-metrics-accept"
    thread.start()
    return server, thread


__all__ = ["BoundedMetricsServer", "serve_metrics"]
