"""Wakes event subscribers when this server records something, and bounds how many there are.

``notify`` is called from the worker that ran a command; subscribers wait on the server's event
loop (``wait_async``), each woken through the loop it waits on.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading

from pokdeng_service.api.errors import ResourceExhausted


class EventHub:
    """Wakes event subscribers when this server records something; subscribers also poll (other writers)."""

    def __init__(self, max_subscribers: int) -> None:
        self._condition = threading.Condition()
        self._generation = 0
        self._subscribers = 0
        self.max_subscribers = max_subscribers
        self.closing = threading.Event()
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()

    @property
    def generation(self) -> int:
        return self._generation

    def notify(self) -> None:
        with self._condition:
            self._generation += 1
            self._condition.notify_all()
            waiters = list(self._waiters)
        for loop, event in waiters:
            with contextlib.suppress(RuntimeError):  # its loop has closed
                loop.call_soon_threadsafe(event.set)

    def wait(self, generation: int, timeout: float) -> None:
        with self._condition:
            self._condition.wait_for(lambda: self._generation != generation or self.closing.is_set(), timeout)

    async def wait_async(self, generation: int, timeout: float) -> None:
        """Until something is recorded after ``generation``, the hub closes, or ``timeout`` seconds pass."""
        waiter = (asyncio.get_running_loop(), asyncio.Event())
        with self._condition:
            if self._generation != generation or self.closing.is_set():
                return
            self._waiters.add(waiter)
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(waiter[1].wait(), timeout)
        finally:
            with self._condition:
                self._waiters.discard(waiter)

    def close(self) -> None:
        self.closing.set()
        self.notify()

    def enter(self) -> None:
        with self._condition:
            if self._subscribers >= self.max_subscribers:
                raise ResourceExhausted(
                    f"this server serves at most {self.max_subscribers} event subscriptions at once",
                    limit=str(self.max_subscribers),
                )
            self._subscribers += 1

    def leave(self) -> None:
        with self._condition:
            self._subscribers -= 1
