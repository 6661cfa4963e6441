"""What the application counts for the operators' metrics (``prometheus_client``; served by ``api.observe``).

The pipeline tells ``saved`` of every command it saved (how long the store took, and the events:
a round that closed counts by profile and outcome) and ``retried`` of every attempt lost to another
writer's version conflict. The metrics live in the process's default registry, as the library's
own process and platform collectors do; the server's metrics endpoint serves that registry.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from prometheus_client import Counter, Histogram

STORE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)

ROUNDS_CLOSED = Counter(
    "pokdeng_rounds_closed_total", "Rounds closed by this process, by profile and outcome", ["profile", "outcome"]
)
COMMANDS_RETRIED = Counter(
    "pokdeng_commands_retried_total",
    "Command attempts lost to another writer's version conflict and tried again, by command",
    ["command"],
)
STORE_SECONDS = Histogram(
    "pokdeng_store_seconds",
    "Time the event store took, by operation (save: a command's one transaction; probe: the health probe)",
    ["operation"],
    buckets=STORE_BUCKETS,
)
_SAVE = STORE_SECONDS.labels("save")


def saved(target: Any, events: Iterable[Any], seconds: float) -> None:
    """A command's transaction committed in ``seconds``; ``events`` are what it recorded on ``target``."""
    _SAVE.observe(seconds)
    for event in events:
        if getattr(event, "kind", "") == "round_closed":
            state = getattr(target, "state", None)
            profile = getattr(getattr(state, "profile", None), "name", "") or "unknown"
            outcome = str(getattr(event, "data", {}).get("outcome", "") or "unknown")
            ROUNDS_CLOSED.labels(profile, outcome).inc()


def retried(command: str) -> None:
    """An attempt at ``command`` conflicted with another writer and is tried again."""
    COMMANDS_RETRIED.labels(command).inc()


__all__ = ["COMMANDS_RETRIED", "ROUNDS_CLOSED", "STORE_SECONDS", "retried", "saved"]
