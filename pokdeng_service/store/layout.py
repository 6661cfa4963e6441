"""A store's place in its deployment, recorded at its first start: partition ``partition`` of ``partitions``.

A store laid out as one partition and then served as two would answer NOT_FOUND for the wallets and tables
whose shard now maps to the other partition, and let them be opened a second time there. So the first server
to start on a store records the layout it was given (``StoreLayout``, one stream per store), and every server
and tool after it must be given the same layout (``layout_problem``), or it refuses to start. A store made
before layouts were recorded gets the layout of the first server that starts on it (docs/operations.md).
"""

from __future__ import annotations

import uuid

from eventsourcing.domain import Aggregate, event

from pokdeng_service.store.aggregates import NAMESPACE

LAYOUT_UUID = uuid.uuid5(NAMESPACE, "store-layout")
"""The one layout stream of a store."""


class StoreLayout(Aggregate):
    """The store is partition ``partition`` (0-based) of a deployment of ``partitions`` stores."""

    class Recorded(Aggregate.Created):
        partitions: int
        partition: int

    @staticmethod
    def create_id(partitions: int, partition: int) -> uuid.UUID:
        return LAYOUT_UUID

    @event(Recorded)
    def __init__(self, partitions: int, partition: int) -> None:
        self.partitions = partitions
        self.partition = partition


def layout_problem(recorded: StoreLayout | None, partitions: int, partition: int) -> str | None:
    """Why a store recorded as ``recorded`` may not be served as partition ``partition`` of ``partitions``
    (None: it may; no record yet: any layout may be recorded)."""
    if recorded is None or (recorded.partitions, recorded.partition) == (partitions, partition):
        return None
    return (
        f"this store is partition {recorded.partition} of {recorded.partitions} (recorded at its first start), "
        f"and was given as partition {partition} of {partitions}: serve it with --partitions {recorded.partitions} "
        "(changing the number of partitions moves shards between stores: docs/operations.md)"
    )


__all__ = ["LAYOUT_UUID", "StoreLayout", "layout_problem"]
