"""The raw-append baseline of a load run: the same transactions, appended with a minimal aggregate.

A run's server wrote, for every command, one transaction that ends with the command's request
record (``CommandRecord.Accepted``). ``LogReader`` reads a served store's notification log read
only (``StoreConfig.read_only_env``: the server may be running); ``transactions(reader, after,
upto)`` gives the number of events of each transaction in the log positions (after, upto];
``replay(store, sizes)`` appends the same numbers of events, one ``save`` a transaction, with a
minimal ``Aggregate`` (a new one every ``per_aggregate`` transactions, as a round's commands are),
to a fresh store of the same kind, and says how long it took and how much of that was CPU. The
same transactions per second on the same kind of store and disk are the store's own ceiling: a
round costs at least that.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Any

from eventsourcing.application import Application
from eventsourcing.domain import Aggregate, event
from eventsourcing.persistence import InfrastructureFactory
from eventsourcing.utils import Environment

from .server import Store

REQUEST_RECORD = ":CommandRecord.Accepted"


class Mini(Aggregate):
    @event("Created")
    def __init__(self) -> None:
        pass

    @event("Pinged")
    def ping(self) -> None:
        pass


class RawApp(Application[uuid.UUID]):
    name = "raw"


class LogReader:
    """A served store's notification log, read only (positions and topics)."""

    def __init__(self, store: Store, partition: int = 0) -> None:
        env = store.config().read_only_env(partition)
        self.factory = InfrastructureFactory.construct(Environment("pokdeng", env))
        self.recorder: Any = self.factory.application_recorder()

    def position(self) -> int:
        return int(self.recorder.max_notification_id() or 0)

    def topics(self, after: int, upto: int) -> list[str]:
        out: list[str] = []
        position = after
        while position < upto:
            page = self.recorder.select_notifications(start=position + 1, limit=1000, stop=upto)
            if not page:
                break
            out.extend(item.topic for item in page)
            position = page[-1].id
        return out

    def close(self) -> None:
        self.factory.close()


def transactions(reader: LogReader, after: int, upto: int) -> list[int]:
    """Events per command transaction in the log positions (after, upto] (each ends with its request record;
    a transaction cut by ``after`` counts from there, one cut by ``upto`` is left out)."""
    sizes: list[int] = []
    current = 0
    for topic in reader.topics(after, upto):
        current += 1
        if topic.endswith(REQUEST_RECORD):
            sizes.append(current)
            current = 0
    return sizes


def replay(env: dict[str, str], sizes: Sequence[int], per_aggregate: int = 10) -> tuple[float, float]:
    """Seconds to append ``sizes`` (events per transaction, one ``save`` each) to the store ``env``
    selects, with a fresh ``Mini`` every ``per_aggregate`` transactions, and the CPU seconds this thread
    spent in them (the rest is the disk's)."""
    app = RawApp(env)
    try:
        warm = Mini()  # the store's first write (tables, connections) is not timed
        warm.ping()
        app.save(warm)
        started, cpu = time.perf_counter(), time.thread_time()
        mini: Mini | None = None
        for index, size in enumerate(sizes):
            if index % per_aggregate == 0:
                mini = None
            if mini is None:
                mini = Mini()
                size -= 1
            for _ in range(size):
                mini.ping()
            app.save(mini)
        return time.perf_counter() - started, time.thread_time() - cpu
    finally:
        app.close()


def raw_env(store: Store) -> dict[str, str]:
    """The eventsourcing settings of a fresh store like ``store`` (SQLite: a file beside it; PostgreSQL:
    ``store`` itself must be fresh, its URL naming an empty database or schema)."""
    if store.kind == "sqlite":
        return {
            "PERSISTENCE_MODULE": "eventsourcing.sqlite",
            "SQLITE_DBNAME": store.path,
            "SQLITE_LOCK_TIMEOUT": "10",
        }
    from pokdeng_service.application.config import postgres_settings

    settings = postgres_settings(store.url)
    settings["PERSISTENCE_MODULE"] = "eventsourcing.postgres"
    return settings
