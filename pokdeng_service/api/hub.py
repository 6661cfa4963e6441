"""Wakes event subscribers when this server records something, and bounds how many there are."""

from __future__ import annotations

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

    @property
    def generation(self) -> int:
        return self._generation

    def notify(self) -> None:
        with self._condition:
            self._generation += 1
            self._condition.notify_all()

    def wait(self, generation: int, timeout: float) -> None:
        with self._condition:
            self._condition.wait_for(lambda: self._generation != generation or self.closing.is_set(), timeout)

    def close(self) -> None:
        self.closing.set()
        self.notify()

    def enter(self, wait: float = 0.0) -> None:
        """Count a subscriber, waiting up to ``wait`` seconds for a place (a subscription whose place the
        wrapper gave to this one, ``Runtime.open_stream``, leaves within its poll); else RESOURCE_EXHAUSTED."""
        with self._condition:
            if not self._condition.wait_for(lambda: self._subscribers < self.max_subscribers, wait):
                raise ResourceExhausted(
                    f"this server serves at most {self.max_subscribers} event subscriptions at once",
                    limit=str(self.max_subscribers),
                )
            self._subscribers += 1

    def leave(self) -> None:
        with self._condition:
            self._subscribers -= 1
            self._condition.notify_all()
