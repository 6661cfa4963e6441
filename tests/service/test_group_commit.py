"""Group commit (``store/commits.py``): commands waiting on one SQLite store share one transaction, and every
guarantee of a transaction per command holds: each command's rows all or none, conflicts reported to the
command alone (after the commit), a failed transaction failing every command of its group with nothing
written, notification ids as the library returns them."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import pytest
from eventsourcing.persistence import IntegrityError, OperationalError, StoredEvent

from pokdeng_service.application import PokdengApp
from pokdeng_service.application.principal import SYSTEM
from pokdeng_service.store import commits
from pokdeng_service.store.vault import SeedVault


@pytest.fixture
def app(tmp_path: Path) -> Iterator[PokdengApp]:
    env = {
        "PERSISTENCE_MODULE": "eventsourcing.sqlite",
        "SQLITE_DBNAME": str(tmp_path / "group.sqlite"),
        "POKDENG_SINGLE_WRITER": "y",
    }
    application = PokdengApp(env, vault=SeedVault.ephemeral())
    try:
        yield application
    finally:
        application.close()


def committer(app: PokdengApp) -> commits.GroupCommit:
    found: commits.GroupCommit = app.recorder.group_commit  # type: ignore[attr-defined]
    return found


def rows(stream: uuid.UUID, versions: range) -> list[StoredEvent]:
    return [StoredEvent(stream, v, "tests:Row", b'{"v":%d}' % v) for v in versions]


def stored(app: PokdengApp, stream: uuid.UUID) -> list[int]:
    return [r.originator_version for r in app.recorder.select_events(stream)]


def in_one_group(app: PokdengApp, calls: Sequence[Callable[..., Any]]) -> list[Any]:
    """Run ``calls`` in threads so that the first writes alone and all the others queue behind it: the next
    group is all of them."""
    group = committer(app)
    gate, entered = threading.Event(), threading.Event()
    original = app.recorder._insert_events  # type: ignore[attr-defined]
    first = [True]

    def held(*args: Any, **kwargs: Any) -> Any:
        if first[0]:
            first[0] = False
            entered.set()
            gate.wait(10)
        return original(*args, **kwargs)

    app.recorder._insert_events = held  # type: ignore[attr-defined]
    results: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        try:
            results[i] = calls[i]()
        except Exception as error:
            results[i] = error

    threads = [threading.Thread(target=run, args=(0,))]
    threads[0].start()
    assert entered.wait(10)
    threads += [threading.Thread(target=run, args=(i,)) for i in range(1, len(calls))]
    for thread in threads[1:]:
        thread.start()
    deadline = time.monotonic() + 10
    while len(group._queue) < len(calls) - 1 and time.monotonic() < deadline:
        time.sleep(0.005)
    assert len(group._queue) == len(calls) - 1, "the other commands did not queue behind the first"
    before = group.groups
    gate.set()  # the first commits alone; its leader takes the whole queue as the next group
    for thread in threads:
        thread.join(10)
    app.recorder._insert_events = original  # type: ignore[attr-defined]
    assert group.groups - before >= 2
    return results


def test_the_application_groups_its_sqlite_commits(app: PokdengApp) -> None:
    assert isinstance(committer(app), commits.GroupCommit)


def test_a_group_is_one_transaction_with_each_command_whole(app: PokdengApp) -> None:
    streams = [uuid.uuid4() for _ in range(6)]
    calls = [lambda s=s: app.recorder.insert_events(rows(s, range(1, 4))) for s in streams]
    results = in_one_group(app, calls)
    ids = [list(r) for r in results]
    assert all(len(i) == 3 for i in ids)
    flat = [n for i in ids for n in i]
    assert len(set(flat)) == len(flat)
    for stream, got in zip(streams, ids, strict=True):
        assert stored(app, stream) == [1, 2, 3]
        notes = {n.id: n for n in app.recorder.select_notifications(start=min(got), limit=3)}
        assert [notes[i].originator_version for i in got] == [1, 2, 3]  # the ids are the rows'


def test_a_conflict_fails_its_command_alone_and_leaves_nothing_of_it(app: PokdengApp) -> None:
    taken, a, b = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    app.recorder.insert_events(rows(taken, range(1, 3)))
    calls = [
        lambda: app.recorder.insert_events(rows(a, range(1, 3))),
        lambda: app.recorder.insert_events(rows(b, range(1, 3)) + rows(taken, range(2, 4))),  # version 2 is taken
        lambda: app.recorder.insert_events(rows(a, range(3, 5))),
    ]
    results = in_one_group(app, calls)
    assert isinstance(results[1], IntegrityError)
    assert stored(app, b) == []  # none of the failed command's rows, not even those that fitted
    assert stored(app, taken) == [1, 2]
    assert stored(app, a) == [1, 2, 3, 4]


def test_a_failed_transaction_fails_every_command_of_its_group(app: PokdengApp, monkeypatch: Any) -> None:
    streams = [uuid.uuid4() for _ in range(4)]
    original = app.recorder._insert_events  # type: ignore[attr-defined]
    calls = [lambda s=s: app.recorder.insert_events(rows(s, range(1, 3))) for s in streams]

    def failing(cursor: Any, events: Any, **kwargs: Any) -> Any:
        if events[0].originator_id == streams[2]:
            raise OperationalError("disk I/O error")
        return original(cursor, events, **kwargs)

    monkeypatch.setattr(app.recorder, "_insert_events", failing)
    results = in_one_group(app, calls)
    assert all(isinstance(r, Exception) for r in results[1:]), results
    assert all(stored(app, s) == [] for s in streams[1:])  # nothing of the group
    monkeypatch.setattr(app.recorder, "_insert_events", original)
    assert list(app.recorder.insert_events(rows(streams[1], range(1, 3))) or ())  # the store writes again


def test_commands_in_one_group_keep_idempotency_and_versions(app: PokdengApp) -> None:
    app.open_wallet("open-a", "a")
    app.open_wallet("open-b", "b")
    same = [lambda: app.handle(SYSTEM, "dep-1", app_command("a", 10)) for _ in range(3)]
    racing = [lambda n=n: app.handle(SYSTEM, f"dep-b-{n}", app_command("b", 1)) for n in range(4)]
    results = in_one_group(app, [*same, *racing])
    assert not any(isinstance(r, Exception) for r in results), results
    assert sorted(r.replayed for r in results[:3]) == [False, True, True]  # one deposit, two answers of it
    assert app.get_wallet("a").balance == 10
    assert app.get_wallet("b").balance == 4  # the losers of a version conflict were retried
    positions = [r.events[0].position for r in results[3:]]
    assert sorted(positions) == [2, 3, 4, 5]


def app_command(wallet: str, amount: int) -> Any:
    from pokdeng_service.application.commands import Deposit

    return Deposit(wallet, amount)


def test_grouped_inserts_are_the_librarys(app: PokdengApp, tmp_path: Path) -> None:
    """The same batches through the group (alone and queued) and through the library's own ``insert_events``:
    the same rows, the same ids returned, the same conflicts."""
    from eventsourcing.sqlite import SQLiteApplicationRecorder

    other = PokdengApp(
        {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "library.sqlite")},
        vault=SeedVault.ephemeral(),
    )
    try:
        streams = [uuid.UUID(int=n + 1) for n in range(4)]
        batches = (
            [rows(s, range(1, 3)) for s in streams] + [rows(streams[0], range(2, 4))] + [rows(streams[1], range(3, 5))]
        )
        ours: list[Any] = []
        theirs: list[Any] = []
        theirs_recorder = cast(SQLiteApplicationRecorder, other.recorder)
        for batch in batches:
            pairs: list[tuple[list[Any], Callable[..., Any]]] = [
                (ours, lambda b=batch: app.recorder.insert_events(b, tracking=None)),
                (theirs, lambda b=batch: SQLiteApplicationRecorder.insert_events(theirs_recorder, b, tracking=None)),
            ]
            for results, call in pairs:
                try:
                    results.append(list(call() or ()))
                except IntegrityError:
                    results.append("conflict")
        assert ours == theirs
        assert "conflict" in ours
        dump = [
            (n.id, n.originator_id, n.originator_version, n.topic, n.state)
            for n in app.recorder.select_notifications(1, 100)
        ]
        library = [
            (n.id, n.originator_id, n.originator_version, n.topic, n.state)
            for n in other.recorder.select_notifications(1, 100)
        ]
        assert dump == library
    finally:
        other.close()
