"""Group commit: the commands of one process that wait on one SQLite store are saved in one transaction.

A SQLite file has one writer, and every commit waits for the disk (``fsync``, in WAL mode with the
library's ``synchronous=FULL``). While one command's transaction commits, the commands of the other
workers wait for the writer. ``GroupCommit`` lets them wait in a queue instead: the first to arrive
writes every command queued by then in one transaction, each in its own savepoint, and commits once.

Every guarantee of one transaction per command is kept:

* a command's events are written all together or not at all: each command's rows are inserted in a
  savepoint of its own, and a command whose rows conflict (another writer's version of an aggregate,
  a request id already recorded) is rolled back to its savepoint alone, and gets the library's
  ``IntegrityError`` as it would have from its own transaction (the pipeline then looks up the
  request's record, or evicts and retries);
* nothing is half written: the commit is one, for every command of the group; if anything else fails
  (the commit itself, the disk, a lock), the whole transaction is rolled back and every command of the
  group gets that error, with none of its rows written;
* no command hears of its outcome before the commit: a conflict in the group is reported after the
  commit, so that the command that won (its record, its aggregate's version) is in the store when the
  loser reads it back;
* the notification ids returned are those of the rows, as ``insert_events`` returns them.

The leader is whoever finds no group being written: it writes the queue as it stands (it does not
wait for more), hands the next group to the first command queued meanwhile, and returns. Only the
library's ``SQLiteApplicationRecorder`` (eventsourcing 9.5.6, ``fastpaths.CHECKED_AGAINST``: its
``insert_events`` is one ``datastore.transaction(commit=True)`` around ``_insert_events``, which takes
the keyword arguments and ignores them) is grouped; any other recorder is left as it is.
Guard: ``tests/service/test_group_commit.py``.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from typing import Any

from eventsourcing.persistence import IntegrityError, StoredEvent
from eventsourcing.sqlite import SQLiteApplicationRecorder

SAVEPOINT = "pokdeng_command"


class _Waiter:
    """One command's rows, and what became of them."""

    __slots__ = ("error", "events", "kwargs", "lead", "result", "woken")

    def __init__(self, events: Sequence[StoredEvent], kwargs: dict[str, Any]) -> None:
        self.events = events
        self.kwargs = kwargs
        self.result: Sequence[int] | None = None
        self.error: BaseException | None = None
        self.lead = False  # this command writes the next group
        self.woken: threading.Event | None = None  # (only a command that waits for a leader needs one)


class GroupCommit:
    """``recorder.insert_events`` for the commands of many threads, written a group to a transaction."""

    def __init__(self, recorder: SQLiteApplicationRecorder) -> None:
        self.recorder = recorder
        self._lock = threading.Lock()
        self._queue: list[_Waiter] = []
        self._writing = False
        self.groups = 0  # transactions written (for benchmarks and tests)
        self.commands = 0  # commands written in them

    def insert_events(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> Sequence[int] | None:
        waiter = _Waiter(stored_events, kwargs)
        with self._lock:
            self._queue.append(waiter)
            lead = not self._writing
            if lead:
                self._writing = True
            else:
                woken = waiter.woken = threading.Event()
        if not lead:
            woken.wait()
            lead = waiter.lead
        if lead:
            self._lead()
        if waiter.error is not None:
            raise waiter.error
        return waiter.result

    def _lead(self) -> None:
        """Write the queue as it stands in one transaction, then hand the next group on (or stop)."""
        with self._lock:
            group, self._queue = self._queue, []
        try:
            self._write(group)
        finally:
            with self._lock:
                following = self._queue[0] if self._queue else None
                if following is None:
                    self._writing = False
                else:
                    following.lead = True
            for waiter in group:
                if waiter.woken is not None:
                    waiter.woken.set()
            if following is not None and following.woken is not None:
                following.woken.set()

    def _write(self, group: list[_Waiter]) -> None:
        recorder, everyone = self.recorder, group
        try:
            with recorder.datastore.transaction(commit=True) as cursor:
                if len(group) == 1:  # a command alone: its transaction is its savepoint
                    (waiter,) = group
                    waiter.result = recorder._insert_events(cursor, waiter.events, **waiter.kwargs)
                    group = []  # (written: a conflict left the ``with``, rolled back, as the library's error)
                for waiter in group:
                    cursor.execute(f"SAVEPOINT {SAVEPOINT}")
                    try:
                        waiter.result = recorder._insert_events(cursor, waiter.events, **waiter.kwargs)
                    except sqlite3.IntegrityError as error:
                        cursor.execute(f"ROLLBACK TO {SAVEPOINT}")
                        waiter.result, waiter.error = None, IntegrityError(error)
                        waiter.error.__cause__ = error
                    cursor.execute(f"RELEASE {SAVEPOINT}")
        except BaseException as error:  # nothing of the group is written: each of its commands fails so
            for waiter in everyone:
                waiter.result, waiter.error = None, error
        self.groups += 1
        self.commands += len(everyone)


def grouped(recorder: Any) -> Any:
    """``recorder`` with its ``insert_events`` grouped (``GroupCommit``), if it is the library's SQLite
    application recorder; any other recorder as it is."""
    if type(recorder) is not SQLiteApplicationRecorder or "insert_events" in vars(recorder):
        return recorder
    if recorder.datastore.pool.is_sqlite_memory_mode:
        return recorder  # (an in-memory database: readers and the writer take turns; left as it is)
    committer = GroupCommit(recorder)
    recorder.insert_events = committer.insert_events  # type: ignore[method-assign]
    recorder.group_commit = committer  # type: ignore[attr-defined]
    return recorder
