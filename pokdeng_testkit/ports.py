"""Free TCP ports for the test-suite and the harness: ``free_port``, never the same port twice in a process,
nor one of another parallel test worker's."""

from __future__ import annotations

import os
import socket

_GIVEN_PORTS: set[int] = set()  # the ports this process was handed so far


def _port_share() -> tuple[int, int]:
    """(index, count) of this process among the parallel workers of a test run (pytest-xdist's
    ``PYTEST_XDIST_WORKER`` gw0, gw1, ... of ``PYTEST_XDIST_WORKER_COUNT``), else (0, 1)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if worker.startswith("gw") and worker[2:].isdigit() and count.isdigit() and int(count) > 1:
        return int(worker[2:]) % int(count), int(count)
    return 0, 1


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago, and not one this process was handed before: the
    operating system may give the same free port to two binds in a row (it once gave a test's metrics port
    to its server's gRPC port as well, and the server could not listen). Parallel test workers never get the
    same port: worker k of n takes only the ports in the blocks of 16 numbered k modulo n (by blocks: Linux
    hands out even ports to binds, so a split by parity would leave a worker none)."""
    index, count = _port_share()
    for _ in range(100_000):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port: int = s.getsockname()[1]
        if (port // 16) % count == index and port not in _GIVEN_PORTS:
            _GIVEN_PORTS.add(port)
            return port
    raise RuntimeError(f"no free port of worker {index} of {count} on 127.0.0.1")
