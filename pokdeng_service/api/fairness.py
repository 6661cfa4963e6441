"""The workers, shared fairly between callers: no caller's flood holds them all or goes first.

A plain semaphore serves its waiters roughly in arrival order, so one token that keeps many calls
in flight (within its admission cap) holds every worker and queues ahead of everyone else: another
caller's one call waits behind the whole flood. ``FairWorkers`` instead

* lets one caller run at most ``per_caller`` bodies at once (the other workers stay for the others);
* queues each caller's waiting calls in their own line, in arrival order, and gives a freed worker
  to the lines in turn (round robin), so a caller with one call waits for at most one call of
  each other waiting caller.

A wait ends at its deadline without the body running (``acquire`` returns False).
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict, deque

_FOREVER = 86_400.0 * 365


class _Waiter:
    __slots__ = ("granted", "woken")

    def __init__(self) -> None:
        self.granted = False
        self.woken = threading.Event()


class FairWorkers:
    """``workers`` slots; at most ``per_caller`` of them held by one caller's key at once."""

    def __init__(self, workers: int, per_caller: int) -> None:
        if workers < 1 or per_caller < 1:
            raise ValueError("workers and per_caller must be positive")
        self.workers = workers
        self.per_caller = min(per_caller, workers)
        self._free = workers
        self._running: Counter[str] = Counter()
        self._lines: OrderedDict[str, deque[_Waiter]] = OrderedDict()  # the turn order: next first
        self._lock = threading.Lock()

    def acquire(self, key: str, timeout: float | None = None) -> bool:
        """A slot for ``key``'s call, waiting at most ``timeout`` seconds (None: as long as it takes; a call
        without a deadline has a remaining time of centuries, which a wait cannot take)."""
        if timeout is not None and timeout > _FOREVER:
            timeout = None
        with self._lock:
            if self._free > 0 and self._running[key] < self.per_caller and key not in self._lines:
                self._take(key)
                return True
            waiter = _Waiter()
            line = self._lines.get(key)
            if line is None:
                line = self._lines[key] = deque()
            line.append(waiter)
            self._dispatch()
        if waiter.woken.wait(timeout):
            return True
        with self._lock:
            if waiter.granted:  # granted as the wait ended
                return True
            line = self._lines.get(key)
            if line is not None:
                line.remove(waiter)
                if not line:
                    del self._lines[key]
            self._dispatch()  # (the line's next call may now go)
        return False

    def release(self, key: str) -> None:
        with self._lock:
            self._free += 1
            left = self._running[key] - 1
            if left > 0:
                self._running[key] = left
            else:
                del self._running[key]
            self._dispatch()

    def running(self, key: str) -> int:
        with self._lock:
            return self._running.get(key, 0)

    def waiting(self) -> int:
        with self._lock:
            return sum(len(line) for line in self._lines.values())

    def _take(self, key: str) -> None:
        self._free -= 1
        self._running[key] += 1

    def _dispatch(self) -> None:
        """Give free slots to the lines in turn: each line's first call, if its caller is under its cap."""
        while self._free > 0:
            chosen = next((k for k in self._lines if self._running[k] < self.per_caller), None)
            if chosen is None:
                return
            line = self._lines[chosen]
            waiter = line.popleft()
            if line:
                self._lines.move_to_end(chosen)  # its next call waits for the other lines' turns
            else:
                del self._lines[chosen]
            self._take(chosen)
            waiter.granted = True
            waiter.woken.set()
