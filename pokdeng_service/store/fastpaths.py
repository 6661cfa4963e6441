"""The library's code paths this service re-implements for speed, fenced in one place.

Each function here does what a piece of ``eventsourcing`` (checked against version
``CHECKED_AGAINST``) or the standard library does, for our aggregates and our stored
rows only, and leans on how that code works inside. An upgrade of the library may change
those insides without a word, so each fast path has a test in
``tests/service/test_fastpaths.py`` that runs it and the library's own code path on the
same input and compares the results; ``test_checked_library_version`` fails on any other
installed version until those tests have been re-run and ``CHECKED_AGAINST`` updated.

``collect(objs, kwargs)``
    Replaces ``eventsourcing.application.ProcessingEvent.collect_events`` as
    ``Application.save`` calls it (eventsourcing 9.5.6). The library asks of every object
    ``isinstance(obj, DomainEventProtocol)`` and ``isinstance(obj, CollectEventsProtocol)``,
    runtime ``Protocol`` checks that cost more than the rest of collecting on Python 3.11.
    Our aggregates (``eventsourcing.domain.Aggregate``) have their events collected
    directly; anything else still goes through the library's method.
    Guard: ``test_collect_matches_the_library`` (the objects of every save of real commands,
    aggregates of every class in ``store/aggregates.py``: same events in the same order,
    same aggregates, same saved keyword arguments).

``project(aggregate, domain_events)``
    Replaces ``eventsourcing.application.project_aggregate`` (eventsourcing 9.5.6), the
    default projector of ``Repository.get`` and ``Application.take_snapshot``, without its
    ``assert isinstance(domain_event, CanMutateProtocol)`` per event (a runtime ``Protocol``
    check costing more than applying the event). Used as ``projector_func`` of the
    application's loads and in its ``snapshotting_projectors``.
    Guard: ``test_project_matches_the_library`` (round, table and wallet streams, from
    nothing and from a snapshot: the same state).

``copy_aggregate(aggregate, memo)``
    Replaces ``copy.deepcopy``'s default copy of an aggregate (by ``__reduce_ex__``), which
    ``Repository.get`` (eventsourcing 9.5.6) applies to every aggregate it hands out of its
    cache (``deepcopy_from_cache``). Copying a round's frozen state field by field cost more
    than the rest of a command; values immutable all the way down (``_SHARED_TYPES``) are
    shared instead of copied. Relies on the library keeping an aggregate's state in its
    instance ``__dict__`` (no ``__slots__``, ``__getstate__`` or ``__reduce__`` of its own)
    and on its attributes (``_id``, ``_version``, ``_created_on``, ``_modified_on``,
    ``_pending_events``) being of those types or copied.
    Guard: ``test_copy_aggregate_is_a_deep_copy`` (equal to the default deep copy, sharing
    only immutable values, mutable parts independent of the original).

``with_shoe(state, shoe)``
    Replaces ``dataclasses.replace(state, shoe=shoe)`` (the standard library's) on the core's
    ``RoundState``, without re-running ``__init__`` over every field; relies on
    ``RoundState`` keeping its fields in its instance dictionary, with no ``__post_init__``.
    Guard: ``test_with_shoe_is_dataclasses_replace``.

``plain_fact(row)``, ``facts_of_rows(mapper, rows)``
    Replace ``eventsourcing.persistence.Mapper.to_domain_event`` (eventsourcing 9.5.6) then
    ``facts.fact_of`` for stored rows written by the library's ``JSONTranscoder`` with
    neither cipher nor compressor (``plain_mapper``): such a row's state is the JSON of the
    event's attributes, times as ``{"_type_": "datetime_iso", "_data_": ISO text}``, a
    ``class_version`` only above 1. orjson reads that several times faster than the
    library's decoder, which calls back into Python for every object. Any row not in that
    form (another transcoder, a cipher, a compressor, a class version to upcast, a value the
    transcoder tagged, an unknown topic) is decoded by the library's mapper instead. (Whether
    a topic's class is above version 1 is looked up once per topic, in ``_PLAIN_TOPICS``.)
    Guard: ``test_plain_fact_matches_the_mapper`` (rows of every event class a real app
    writes), ``test_rows_the_fast_path_cannot_read_go_to_the_mapper`` (a class version to
    upcast, a tagged value, an unknown topic, not JSON) and
    ``test_packed_rows_fall_back_to_the_mapper`` (compressed, encrypted).

``fastmapper.PlainMapper`` (``plain_event(row)``, ``plain_stored_event(event)``; in ``store/fastmapper.py``)
    Replaces ``eventsourcing.persistence.Mapper.to_domain_event`` (eventsourcing 9.5.6) as the
    application's mapper (``PokdengApp.construct_mapper``: every load, ``events.get``, the read
    models and the notification log decode through it) for rows in the plain form above whose
    only tagged value is the event's ``timestamp``: the state is read by orjson, the time by
    ``datetime.fromisoformat`` (the library's ``DatetimeAsISO``), the id by the library's own
    ``find_id_convertor``, and the event made as the library makes it (``object.__new__`` and
    its ``__dict__``, the row's keys in their order, then ``originator_id`` and
    ``originator_version``). A row with any other tag (counted in its bytes: ``"_type_"`` once),
    any ``\\u`` escape, a ``class_version``, a class above version 1, text orjson refuses, or a
    mapper with another transcoder, a cipher or a compressor, goes to the library's method.
    Its ``to_stored_event`` (``plain_stored_event``) writes the state of an event of class version 1
    with orjson when every value is one orjson writes as the library's ``json`` encoder does (text,
    integers, booleans, nulls, dicts with text keys, lists and tuples, and times, tagged as
    ``DatetimeAsISO`` does): the same bytes, key order kept; anything else (a float, a uuid, a
    subclass, a value orjson refuses) is written by the library's method.
    Guard: ``tests/service/test_fastpaths_mapper.py`` (every row of a real app, snapshots
    included: the same class and the same ``__dict__``, key order and value types included; rows
    it must hand over; packed rows; every event written again: the same bytes, topic and key).

``take_snapshots(app, processing_event)``
    Replaces ``Application._take_snapshots`` as ``Application.save`` calls it (eventsourcing 9.5.6):
    a snapshot due at a version the saved aggregate stands at is taken of that aggregate
    (``Snapshot.take``, as ``take_snapshot`` does of the aggregate it reads back), not of a copy
    read back from the store and folded again; any other case is the library's.
    Guard: ``test_snapshots_of_saved_aggregates_are_the_read_back_ones`` (every snapshot of a
    played store with small intervals: the same state as the library's ``take_snapshot``).

``stream_facts(recorder, mapper, uuids)``
    Replaces ``facts_of_rows(mapper, recorder.select_events(uuid))`` for each of many streams on
    the library's SQLite recorder (``SQLiteAggregateRecorder.select_events``, eventsourcing
    9.5.6): the streams' rows are read in one query per ``STREAMS_PER_QUERY`` streams, in the
    recorder's own read transaction on its own connection and table, and decoded straight from
    the rows (``plain_fact``'s way), without building a ``StoredEvent`` and a ``UUID`` per row
    first (the library's reader builds both, and they cost as much as the query). Only a row
    ``plain_fact`` cannot read gets its ``StoredEvent``, for the mapper. Any other recorder (a
    PostgreSQL one, a subclass or instance with a ``select_events`` of its own, another
    statement) is read by its ``select_events``, stream by stream (``sqlite_reader`` says which).
    Guard: ``test_stream_facts_match_select_events`` (every stream of a real app, batched and
    not, a missing stream, a stream named twice) and ``test_packed_rows_fall_back_to_the_mapper``.

``stream_rows(recorder, uuids)``
    Replaces ``list(recorder.select_events(uuid))`` for each of many streams, as ``stream_facts`` reads
    them (the same query, ``STREAMS_PER_QUERY`` streams at a time, in one read transaction on the library's
    SQLite recorder), each row a light ``StoredRow`` (below) for the application's mapper, not a decoded
    record: what a loader folds into an aggregate and keeps as its view's events from one read
    (``loading.Loading.read_rounds``). Other recorders: their own ``select_events``, stream by stream.
    Guard: ``test_stream_rows_match_select_events``.

``select_rows(recorder, reads)``
    Replaces ``recorder.select_events(uuid, gt=gt, lte=lte, limit=limit)`` for each of a few
    reads (eventsourcing 9.5.6's SQLite statement, clause by clause), all in one read
    transaction on the library's SQLite recorder, each row a light ``StoredRow`` (the
    ``StoredEvent`` fields; its ``originator_id`` the uuid asked for) rather than a
    ``StoredEvent`` with a ``UUID`` made from the row's text. Other recorders: their own
    ``select_events``, read by read. Guard: ``test_select_rows_match_select_events``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Mapping
from copy import deepcopy
from dataclasses import replace
from datetime import datetime
from typing import Any, NamedTuple

import orjson
from eventsourcing.application import ProcessingEvent
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import JSONTranscoder, Mapper, StoredEvent
from eventsourcing.sqlite import SQLiteAggregateRecorder
from eventsourcing.utils import resolve_topic

from pokdeng_core.round_state import RoundState, Shoe
from pokdeng_core.table_state import TableState
from pokdeng_service.store.facts import ENVELOPE, RecordedEvent, fact_of

# The eventsourcing version these fast paths were last checked against (tests/service/test_fastpaths.py).
CHECKED_AGAINST = "9.5.6"


# -- Application.save's collection -----------------------------------------------------------


def collect(objs: Iterable[Any], kwargs: Mapping[str, Any]) -> ProcessingEvent[uuid.UUID]:
    """``ProcessingEvent.collect_events(*objs, **kwargs)`` on a new ``ProcessingEvent``, as
    ``Application.save`` does, with our aggregates' events collected without ``Protocol`` checks."""
    processing_event: ProcessingEvent[uuid.UUID] = ProcessingEvent()
    for obj in objs:
        if isinstance(obj, Aggregate):
            processing_event.events.extend(obj.collect_events())
            processing_event.aggregates[obj.id] = obj
        elif obj is not None:
            processing_event.collect_events(obj)
    processing_event.saved_kwargs.update(kwargs)
    return processing_event


# -- the repository's projector ----------------------------------------------------------------


def project(aggregate: Any, domain_events: Iterable[Any]) -> Any:
    """eventsourcing's ``project_aggregate`` without its per-event ``isinstance`` check against a
    runtime Protocol (an assertion that costs more than applying the event on Python 3.11)."""
    for domain_event in domain_events:
        aggregate = domain_event.mutate(aggregate)
    return aggregate


# -- copies --------------------------------------------------------------------------------------

# Values an aggregate may share with its copies: immutable all the way down (the core's
# states are frozen dataclasses of tuples, frozensets, frozen profiles and named tuples).
_SHARED_TYPES = frozenset({str, int, bool, float, bytes, type(None), uuid.UUID, datetime, RoundState, TableState})


def copy_aggregate(aggregate: Aggregate, memo: dict[int, Any]) -> Any:
    """``copy.deepcopy`` of an aggregate that shares its immutable values instead of copying them.

    The repository hands each command a deep copy of the cached aggregate; copying a round's
    frozen state field by field cost more than the rest of a command. (An aggregate class
    uses it as its ``__deepcopy__``.)"""
    copy = object.__new__(type(aggregate))
    memo[id(aggregate)] = copy
    copy.__dict__.update(
        {k: v if type(v) in _SHARED_TYPES else deepcopy(v, memo) for k, v in aggregate.__dict__.items()}
    )
    return copy


_PLAIN_ROUND_STATE = not hasattr(RoundState, "__slots__") and not hasattr(RoundState, "__post_init__")


def with_shoe(state: RoundState, shoe: Shoe | None) -> RoundState:
    """``dataclasses.replace(state, shoe=shoe)``, without re-running ``__init__`` over every field
    (``RoundState`` keeps its fields in its instance dictionary and has no ``__post_init__``)."""
    if not _PLAIN_ROUND_STATE:
        return replace(state, shoe=shoe)
    fresh = object.__new__(RoundState)
    values = state.__dict__.copy()
    values["shoe"] = shoe
    object.__setattr__(fresh, "__dict__", values)
    return fresh


# -- stored rows ---------------------------------------------------------------------------------


def plain_mapper(mapper: Mapper[Any]) -> bool:
    """Whether the mapper writes rows ``plain_fact`` can read: the library's JSON, neither ciphered nor compressed."""
    return type(mapper.transcoder) is JSONTranscoder and mapper.cipher is None and mapper.compressor is None


def facts_of_rows(mapper: Mapper[Any], rows: Iterable[Any]) -> list[RecordedEvent]:
    """Stored rows (``recorder.select_events``) as ``RecordedEvent`` records, decoded straight from their JSON.

    With the library's JSON transcoder and neither compression nor encryption (the
    default), a row's state is the JSON of the event's attributes, times written as
    ``{"_type_": "datetime_iso", "_data_": ISO text}``; orjson reads that several times
    faster than the library's decoder, which calls back into Python for every object.
    The time is kept as the ISO text stored (the same text ``datetime.isoformat`` gives
    back for anything this service wrote). Any row not in that form (another transcoder, a
    cipher, a compressor, an older class version to upcast, an unexpected time) is decoded
    by the library's mapper instead, so both ways give the same record.
    """
    plain = plain_mapper(mapper)
    out: list[RecordedEvent] = []
    for row in rows:
        fact = plain_fact(row) if plain else None
        if fact is None:
            stored = row if isinstance(row, StoredEvent) else StoredEvent(*row)  # (a ``StoredRow``)
            fact = fact_of(mapper.to_domain_event(stored))
        out.append(fact)
    return out


def plain_fact(row: Any) -> RecordedEvent | None:
    """A row's ``RecordedEvent`` from its JSON, or None if the row is not in the plain form."""
    return _plain_fact(row.originator_version, row.topic, row.state)


def _plain_fact(version: int, topic: str, stored: bytes) -> RecordedEvent | None:
    """``plain_fact`` of the row (``version``, ``topic``, ``stored``): its fields as the recorder reads them."""
    try:
        state = orjson.loads(stored)
        stamp = state["timestamp"]
        text = stamp["_data_"]
        kind = state.get("kind")
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
        return None
    if len(stamp) != 2 or stamp["_type_"] != "datetime_iso" or type(text) is not str or "class_version" in state:
        return None
    plain = _PLAIN_TOPICS.get(topic)
    if plain is None:
        plain = _plain_topic(topic)
    if not plain:  # stored before its class's version (the library upcasts it), or an unknown topic
        return None
    if kind is None:  # a stream's creation or another plain event: named after its class
        name = topic.rpartition(":")[2].rpartition(".")[2]
        payload = {k: v for k, v in state.items() if k not in ENVELOPE}
        if any(type(v) is dict and "_type_" in v for v in payload.values()):
            return None  # a transcoded value: the library knows its type
        chained = payload.pop("digest", "")  # a wallet movement's link in its wallet's chain
        if type(chained) is not str:
            return None
        return RecordedEvent(version, name, payload, "", text, chained)
    data, command_id, digest = state.get("data"), state.get("command_id"), state.get("digest")
    if type(kind) is not str or type(data) is not dict or type(command_id) is not str or type(digest) is not str:
        return None
    return RecordedEvent(version, kind, data, command_id, text, digest)


# Per topic, whether its rows without a ``class_version`` are of the class's version (1): no upcast.
_PLAIN_TOPICS: dict[str, bool] = {}


def _plain_topic(topic: str) -> bool:
    """Whether a row of ``topic`` without a ``class_version`` needs no upcasting (False for an unknown topic)."""
    try:
        cls = resolve_topic(topic)
    except Exception:
        return False  # (not remembered: the library says what is wrong)
    plain = getattr(cls, "class_version", 1) == 1
    _PLAIN_TOPICS[topic] = plain
    return plain


def fact_of_row(mapper: Mapper[Any], row: Any) -> RecordedEvent:
    """One stored row as a ``RecordedEvent`` (``facts_of_rows`` for a single row)."""
    return facts_of_rows(mapper, (row,))[0]


# -- reading streams -------------------------------------------------------------------------------

STREAMS_PER_QUERY = 100
"""Streams whose rows ``stream_facts`` reads in one query (SQLite)."""


def sqlite_reader(recorder: Any) -> bool:
    """Whether ``stream_facts`` reads ``recorder``'s rows itself: the library's SQLite recorder, reading
    its table as ``SQLiteAggregateRecorder.select_events`` (eventsourcing 9.5.6) does."""
    return (
        isinstance(recorder, SQLiteAggregateRecorder)
        and type(recorder).select_events is SQLiteAggregateRecorder.select_events
        and "select_events" not in vars(recorder)
        and recorder.select_events_statement == f"SELECT * FROM {recorder.events_table_name} WHERE originator_id=? "
    )


def stream_facts(recorder: Any, mapper: Mapper[Any], uuids: Iterable[Any]) -> dict[Any, list[RecordedEvent]]:
    """Each stream's stored rows as ``RecordedEvent`` records (``facts_of_rows(mapper,
    recorder.select_events(uuid))``, a stream without rows: ``[]``), by uuid.

    On the library's SQLite recorder (``sqlite_reader``) the rows of ``STREAMS_PER_QUERY``
    streams are read at a time, in one query of the recorder's own read transaction, and
    decoded as they come (a row ``plain_fact`` cannot read goes to the mapper as the
    ``StoredEvent`` the recorder would have made of it); any other recorder is asked
    stream by stream."""
    wanted = list(dict.fromkeys(uuids))
    if not sqlite_reader(recorder):
        return {u: facts_of_rows(mapper, recorder.select_events(u)) for u in wanted}
    out: dict[Any, list[RecordedEvent]] = {u: [] for u in wanted}  # (not `uuid`: the module; 3.12.1 breaks)
    plain = plain_mapper(mapper)
    for keys, rows in _batched_rows(recorder, wanted):
        for key, version, topic, state in rows:
            fact = _plain_fact(version, topic, state) if plain else None
            if fact is None:
                stored = StoredEvent(recorder.convert_originator_id(key), version, topic, state)
                fact = fact_of(mapper.to_domain_event(stored))
            out[keys[key]].append(fact)
    return out


def stream_rows(recorder: Any, uuids: Iterable[Any]) -> dict[Any, list[Any]]:
    """Each stream's stored rows (``list(recorder.select_events(uuid))``, a stream without rows: ``[]``), by uuid.

    On the library's SQLite recorder (``sqlite_reader``) the rows of ``STREAMS_PER_QUERY`` streams are
    read at a time, as ``stream_facts`` reads them, each a ``StoredRow`` whose ``originator_id`` is the
    uuid asked for; any other recorder is asked stream by stream (its ``select_events``' rows)."""
    wanted = list(dict.fromkeys(uuids))
    if not sqlite_reader(recorder):
        return {u: list(recorder.select_events(u)) for u in wanted}
    out: dict[Any, list[Any]] = {u: [] for u in wanted}
    for keys, rows in _batched_rows(recorder, wanted):
        for key, version, topic, state in rows:
            asked = keys[key]
            out[asked].append(StoredRow(asked, version, topic, state))
    return out


def _batched_rows(recorder: Any, wanted: list[Any]) -> Iterator[tuple[dict[str, Any], list[Any]]]:
    """The rows (originator id as stored, version, topic, state) of ``STREAMS_PER_QUERY`` streams at a time, each
    batch with its streams by their stored key, from the library's SQLite recorder (``sqlite_reader``)."""
    table = recorder.events_table_name
    for start in range(0, len(wanted), STREAMS_PER_QUERY):
        keys = {(u.hex if isinstance(u, uuid.UUID) else u): u for u in wanted[start : start + STREAMS_PER_QUERY]}
        statement = (
            f"SELECT originator_id, originator_version, topic, state FROM {table} "
            f"WHERE originator_id IN ({','.join('?' * len(keys))}) ORDER BY originator_id, originator_version"
        )
        with recorder.datastore.transaction(commit=False) as cursor:
            cursor.execute(statement, list(keys))
            rows = cursor.fetchall()
        yield keys, rows


class StoredRow(NamedTuple):
    """A stored row as ``select_rows`` reads it: the fields of the library's ``StoredEvent``."""

    originator_id: Any  # the uuid the row was asked for
    originator_version: int
    topic: str
    state: bytes


Read = tuple[Any, int | None, int | None, int | None]
"""One ``select_rows`` read: (uuid, gt, lte, limit), as ``select_events`` takes them."""


def select_rows(recorder: Any, reads: Iterable[Read]) -> list[list[Any]]:
    """``[recorder.select_events(uuid, gt=gt, lte=lte, limit=limit) for uuid, gt, lte, limit in reads]``
    (ascending), in one read transaction on the library's SQLite recorder (``sqlite_reader``), its
    rows ``StoredRow`` records; any other recorder is asked read by read."""
    if not sqlite_reader(recorder):
        return [list(recorder.select_events(u, gt=gt, lte=lte, limit=limit)) for u, gt, lte, limit in reads]
    out: list[list[Any]] = []
    head = f"SELECT originator_version, topic, state FROM {recorder.events_table_name} WHERE originator_id=? "
    with recorder.datastore.transaction(commit=False) as cursor:
        for u, gt, lte, limit in reads:
            statement, params = head, [u.hex if isinstance(u, uuid.UUID) else u]
            if gt is not None:
                statement += "AND originator_version>? "
                params.append(gt)
            if lte is not None:
                statement += "AND originator_version<=? "
                params.append(lte)
            statement += "ORDER BY originator_version ASC "
            if limit is not None:
                statement += "LIMIT ? "
                params.append(limit)
            cursor.execute(statement, params)
            out.append([StoredRow(u, version, topic, state) for version, topic, state in cursor.fetchall()])
    return out


# -- snapshots after a save ----------------------------------------------------------------------


def take_snapshots(app: Any, processing_event: ProcessingEvent[Any]) -> None:
    """``Application._take_snapshots(processing_event)`` (eventsourcing 9.5.6), a snapshot of an aggregate the save
    just wrote taken from that aggregate, when it stands at the version to snapshot, rather than read back from the
    store (``take_snapshot``'s ``repository.get(id, version=...)``); otherwise, and for any class without a
    projector in ``snapshotting_projectors``, the library's ``take_snapshot``."""
    if not app.snapshots or not app.snapshotting_intervals:
        return
    for event in processing_event.events:
        aggregate: Any = processing_event.aggregates.get(event.originator_id)
        if aggregate is None:
            continue
        interval = app.snapshotting_intervals.get(type(aggregate))
        if interval is None or event.originator_version % interval != 0:
            continue
        projector = app.snapshotting_projectors.get(type(aggregate))
        if projector is None:  # (the library's own checks and messages)
            app.__class__._take_snapshots(app, _only(processing_event, event, aggregate))
            continue
        snapshot_class = getattr(type(aggregate), "Snapshot", type(app).snapshot_class)
        if aggregate.version != event.originator_version or snapshot_class is None or aggregate.pending_events:
            app.take_snapshot(event.originator_id, version=event.originator_version, projector_func=projector)
            continue
        app.snapshots.put([snapshot_class.take(aggregate)])


def _only(processing_event: ProcessingEvent[Any], event: Any, aggregate: Any) -> ProcessingEvent[Any]:
    single: ProcessingEvent[Any] = ProcessingEvent()
    single.events.append(event)
    single.aggregates[event.originator_id] = aggregate
    return single
