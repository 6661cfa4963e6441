"""``fastmapper.PlainMapper`` (the application's mapper) against the library's ``Mapper`` on the same rows.

The rows are real: the app of ``test_fastpaths`` (every profile, a void, an open round, a
withdrawal, a checkpoint, the log of closed rounds) plus snapshots taken of its wallets and
tables. For every row, the fast path and the library's own ``Mapper.to_domain_event`` must make
the same event: the same class, the same ``__dict__`` (keys in the same order, values of the same
types all the way down). Rows the fast path must not read go to the library, with the same result.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator
from typing import Any
from uuid import UUID

import orjson
import pytest
from eventsourcing.persistence import Mapper, StoredEvent

from pokdeng_service.store import aggregates as ag
from pokdeng_service.store import fastmapper, fastpaths

from . import play
from .test_fastpaths import Played, play_store


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Played]:
    folder = tmp_path_factory.mktemp("fastmapper")
    app = play.make_app({"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(folder / "m.sqlite")})
    try:
        result = play_store(app)
        for table_id in result.tables:
            app.take_snapshot(ag.table_uuid(table_id))
        for wallet_id in result.wallets:
            app.take_snapshot(ag.wallet_uuid(wallet_id))
        yield result
    finally:
        app.close()


def library(app: Any) -> Mapper[Any]:
    return Mapper(app.mapper.transcoder, app.mapper.compressor, app.mapper.cipher)


def same_values(ours: Any, theirs: Any, where: str) -> None:
    assert type(ours) is type(theirs), f"{where}: {type(ours)} is not {type(theirs)}"
    if isinstance(theirs, dict):
        assert list(ours) == list(theirs), f"{where}: keys {list(ours)} are not {list(theirs)}"
        for key in theirs:
            same_values(ours[key], theirs[key], f"{where}.{key}")
    elif isinstance(theirs, list | tuple):
        assert len(ours) == len(theirs), where
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            same_values(a, b, f"{where}[{i}]")
    else:
        assert ours == theirs, f"{where}: {ours!r} != {theirs!r}"


def same_event(ours: Any, theirs: Any) -> None:
    assert type(ours) is type(theirs)
    same_values(ours.__dict__, theirs.__dict__, type(theirs).__qualname__)


def every_row(app: Any) -> tuple[list[Any], list[Any]]:
    events = list(app.recorder.select_notifications(start=1, limit=1_000_000))
    snapshots = []
    for row in events:
        snapshots.extend(app.snapshots.recorder.select_events(row.originator_id))
    return events, list({(s.originator_id, s.originator_version): s for s in snapshots}.values())


def test_the_application_decodes_with_the_plain_mapper(played: Played) -> None:
    mapper = played.app.mapper
    assert type(mapper) is fastmapper.PlainMapper and mapper.plain
    assert played.app.snapshots is not None and played.app.snapshots.mapper is mapper


def test_plain_mapper_matches_the_library(played: Played) -> None:
    app = played.app
    reference = library(app)
    events, snapshots = every_row(app)
    assert len(events) > 300 and snapshots, (len(events), len(snapshots))
    classes = set()
    for row in events:
        fast = fastmapper.plain_event(row)
        assert fast is not None, f"{row.topic} (version {row.originator_version}) is not decoded by the fast path"
        theirs = reference.to_domain_event(row)
        same_event(fast, theirs)
        same_event(app.mapper.to_domain_event(row), theirs)
        classes.add(type(theirs))
    assert len(classes) >= 25, len(classes)  # facts of rounds and tables, wallets, seeds, records, the log
    for row in snapshots:  # a snapshot holds tagged values (ids, the table's state): the library decodes it
        assert fastmapper.plain_event(row) is None
        same_event(app.mapper.to_domain_event(row), reference.to_domain_event(row))
    # Through the loaders: the same aggregates as the library's mapper gives.
    for uuid in [ag.wallet_uuid(w) for w in played.wallets] + [ag.round_uuid(r) for r in played.rounds]:
        loaded = [e.__dict__ for e in app.events.get(uuid)]
        decoded = [reference.to_domain_event(r).__dict__ for r in app.recorder.select_events(uuid)]
        assert loaded == decoded


def test_rows_the_plain_mapper_cannot_read_go_to_the_library(played: Played, monkeypatch: pytest.MonkeyPatch) -> None:
    app = played.app
    reference = library(app)
    (row,) = app.recorder.select_events(ag.wallet_uuid("classic-t-p1"), lte=2, gt=1)  # a deposit
    assert fastmapper.plain_event(row) is not None
    state = orjson.loads(row.state)
    extra = {"_type_": "uuid_hex", "_data_": ag.NAMESPACE.hex}
    cases = {
        "another tagged value": dataclasses.replace(row, state=orjson.dumps({**state, "extra": extra})),
        "an escape": dataclasses.replace(row, state=orjson.dumps(state).replace(b'"amount"', b'"\\u0061mount"')),
        "a class version in the row": dataclasses.replace(row, state=orjson.dumps({**state, "class_version": 1})),
        "not JSON": dataclasses.replace(row, state=b'{"_type_": not json'),
        "a plain timestamp": dataclasses.replace(
            row, state=orjson.dumps({**state, "timestamp": "x", "t": {"_type_": "datetime_iso", "_data_": "x"}})
        ),
        "a memoryview": StoredEvent(row.originator_id, row.originator_version, row.topic, row.state),
    }
    cases["a memoryview"] = dataclasses.replace(row, state=memoryview(row.state))  # type: ignore[arg-type]
    for name, case in cases.items():
        assert fastmapper.plain_event(case) is None, name
        try:
            theirs = reference.to_domain_event(case)
        except Exception as error:
            with pytest.raises(type(error)):
                app.mapper.to_domain_event(case)
            continue
        same_event(app.mapper.to_domain_event(case), theirs)
    assert fastmapper.plain_event(dataclasses.replace(row, topic="nowhere:Nothing")) is None
    # A class above version 1: rows without a class version are upcast by the library.
    monkeypatch.setattr(fastpaths, "_PLAIN_TOPICS", {})
    monkeypatch.setattr(ag.Wallet.Deposited, "class_version", 2, raising=False)
    monkeypatch.setattr(
        ag.Wallet.Deposited, "upcast_v1_v2", staticmethod(lambda s: s.update(note="upcast")), raising=False
    )
    assert fastmapper.plain_event(row) is None
    assert app.mapper.to_domain_event(row).note == "upcast"  # type: ignore[attr-defined]


@pytest.mark.parametrize("stored_as", ["zlib", "aes"])
def test_packed_stores_decode_with_the_library(tmp_path: Any, stored_as: str) -> None:
    from eventsourcing.cryptography import AESCipher

    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "packed.sqlite")}
    if stored_as == "zlib":
        env["COMPRESSOR_TOPIC"] = "eventsourcing.compressor:ZlibCompressor"
    else:
        env["CIPHER_TOPIC"] = "eventsourcing.cryptography:AESCipher"
        env["CIPHER_KEY"] = AESCipher.create_key(num_bytes=32)
    app = play.make_app(env)
    try:
        assert not app.mapper.plain  # type: ignore[attr-defined]
        d = play.Driver(app, chooser=play.Chooser(random.Random(3)))
        play.open_wallets(d, ["a", "b"])
        reference = library(app)
        for row in app.recorder.select_notifications(start=1, limit=1000):
            same_event(app.mapper.to_domain_event(row), reference.to_domain_event(row))
    finally:
        app.close()


# -- the notification log: the same notifications as validated pydantic views of the library's events -------


def _validated(position: int, item: Any) -> Any:
    """The notification as ``notifications.notification`` made it before it skipped validation and the JSON trip."""
    import json

    from pokdeng_service.application import notifications
    from pokdeng_service.application.views import Notification
    from pokdeng_service.store.facts import payload_of

    owner = type(item).__qualname__.split(".")[0]
    stream = notifications.STREAM_OF.get(owner, owner)
    stream_id = getattr(item, "stream_id", "")
    data = getattr(item, "data", None)
    if data is None:
        data = {k: v for k, v in payload_of(item).items() if k not in ("sealed", "nonce", "digest")}
        key = {"round": "round_id", "table": "table_id", "wallet": "wallet_id", "seed": "round_id"}.get(stream, "")
        stream_id = str(data.get(key, "")) if key else ""
    if stream == "request":
        data = {"request_id": data.get("request_id", "")}
    return Notification(
        position=position,
        stream=stream,
        stream_id=stream_id or str(item.originator_id),
        stream_version=item.originator_version,
        kind=getattr(item, "kind", None) or type(item).__name__,
        data=json.loads(json.dumps(data, default=str)),
        timestamp=item.timestamp.isoformat(),
    )


def test_notifications_are_the_validated_ones(played: Played) -> None:
    app = played.app
    reference = library(app)
    ours = app.read_notifications(0, 10_000)
    rows = app.recorder.select_notifications(start=1, limit=10_000)
    assert len(ours) == len(rows) > 300
    for note, row in zip(ours, rows, strict=True):
        theirs = _validated(row.id, reference.to_domain_event(row))
        if theirs.stream == "wallet" and theirs.stream_id == str(row.originator_id):
            theirs = theirs.model_copy(update={"stream_id": app._wallet_name(UUID(str(row.originator_id)))})
        assert note == theirs
        same_values(note.model_dump(), theirs.model_dump(), f"notification {row.id}")
        assert note.model_dump_json() == theirs.model_dump_json()
    # Values that are not plain JSON (a time, a uuid, a tuple) go through the JSON round trip as before.
    from pokdeng_service.application.notifications import notification

    (stored,) = app.recorder.select_events(ag.wallet_uuid("classic-t-p1"), lte=2, gt=1)
    event = reference.to_domain_event(stored)
    event.__dict__["extra"] = (ag.NAMESPACE, event.__dict__["timestamp"])
    same_values(notification(7, event).model_dump(), _validated(7, event).model_dump(), "extra")


def test_log_activity_is_the_notifications_without_their_data(played: Played) -> None:
    app = played.app
    notes = app.read_notifications(0, 10_000)
    addresses = [(n.position, n.stream, n.stream_id, n.kind, n.timestamp) for n in notes]
    assert addresses == list(app.log_activity(0, 10_000))
    assert list(app.log_activity(5, 7)) == [tuple(a) for a in app.log_activity(0, 10_000)[5:12]]


def test_plain_writes_are_the_librarys(played: Played) -> None:
    """Every event of the played store (and snapshots) written again: the same stored event as the library's."""
    from datetime import UTC, datetime

    app = played.app
    reference = library(app)
    events, snapshots = every_row(app)
    written = 0
    for row in [*events, *snapshots]:
        event = reference.to_domain_event(row)
        ours, theirs = app.mapper.to_stored_event(event), reference.to_stored_event(event)
        assert ours == theirs, (row.topic, ours.state, theirs.state)
        assert theirs.state == row.state  # (and as the row was stored)
        written += fastmapper.plain_stored_event(event) is not None
    assert written >= len(events)  # every event the fast way (a snapshot too, unless it holds a uuid or a state)
    (row,) = app.recorder.select_events(ag.wallet_uuid("classic-t-p1"), lte=2, gt=1)
    event = reference.to_domain_event(row)

    class Text(str):
        pass

    odd = {
        "a float": 1.0e16,
        "a uuid": ag.NAMESPACE,
        "a text subclass": Text("x"),
        "a big integer": 2**70,
        "an integer key": {1: "one"},
        "a lone surrogate": "\ud800",
        "a naive time in a list": [datetime(2025, 1, 1)],
        "a control character": 'a\x00\x1f\n\t"\\\u2028é',
        "a time": datetime(2025, 1, 1, 1, 2, 3, 4, tzinfo=UTC),
    }
    for name, value in odd.items():
        event.__dict__["extra"] = value
        try:
            theirs = reference.to_stored_event(event)
        except Exception as error:
            with pytest.raises(type(error)):
                app.mapper.to_stored_event(event)
            continue
        assert app.mapper.to_stored_event(event) == theirs, name
