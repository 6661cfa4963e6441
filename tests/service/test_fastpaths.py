"""The library fast paths (``pokdeng_service.store.fastpaths``) against the library's own code paths.

Each fast path re-implements a piece of ``eventsourcing`` (or of the standard library) for
speed and leans on how it works inside. Every test here runs the fast path and the code it
replaces on the same input and compares the results, so that an upgrade of the library
that changes those insides fails here, by name, rather than somewhere downstream.

The inputs are real: one app (SQLite in a tmp dir) plays rounds of every profile, voids one,
leaves one open with bets reserved, withdraws, checkpoints a table; every ``save`` it makes
is recorded (on copies) for the collection test.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib.metadata
import random
from collections.abc import Iterator
from typing import Any
from uuid import UUID

import orjson
import pytest
from eventsourcing.application import ProcessingEvent, project_aggregate
from eventsourcing.domain import Aggregate

from pokdeng_core.round_state import Phase, RoundState, attach_shoe
from pokdeng_service.application import PokdengApp, views
from pokdeng_service.application.principal import SYSTEM
from pokdeng_service.store import aggregates as ag
from pokdeng_service.store import facts, fastpaths
from pokdeng_service.store.facts import RecordedEvent, fact_of

from . import play

# Every aggregate class of store/aggregates.py (the collection test needs each in a real save).
AGGREGATE_CLASSES = sorted(
    (
        c
        for c in vars(ag).values()
        if isinstance(c, type)
        and issubclass(c, Aggregate)
        and c.__module__ == ag.__name__
        and c not in (ag.ChainedStream, ag.FoldedStream)  # (bases of the chained streams, never stored themselves)
    ),
    key=lambda c: c.__name__,
)


def library_deepcopy(obj: Any, memo: dict[int, Any] | None = None) -> Any:
    """``copy.deepcopy`` as it copies an object without a ``__deepcopy__`` of its own (by ``__reduce_ex__``):
    what the repository's copy of a cached aggregate would be without ``fastpaths.copy_aggregate``."""
    memo = {} if memo is None else memo
    if id(obj) in memo:
        return memo[id(obj)]
    if not isinstance(obj, Aggregate):
        return copy.deepcopy(obj, memo)
    result = copy._reconstruct(obj, memo, *obj.__reduce_ex__(4))  # type: ignore[attr-defined]
    return result


class Played:
    """The app, what it played, and a copy of what each of its saves was given."""

    def __init__(self, app: PokdengApp) -> None:
        self.app = app
        self.saves: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        self.rounds: list[str] = []
        self.tables: list[str] = []
        self.wallets: list[str] = []
        self.open_round = ""


def play_store(app: PokdengApp) -> Played:
    played = Played(app)
    save = app.save

    def recording_save(*objs: Any, **kwargs: Any) -> Any:
        memo: dict[int, Any] = {}
        played.saves.append((tuple(library_deepcopy(o, memo) for o in objs), dict(kwargs)))
        return save(*objs, **kwargs)

    app.save = recording_save  # type: ignore[method-assign]
    d = play.Driver(app, chooser=play.Chooser(random.Random(7), side_bet=0.7, reveal=0.7))
    for profile in ("classic", "ante", "room", "kingmaker"):
        table_id = f"{profile}-t"
        names = [f"{table_id}-p{i}" for i in range(1, 4)]
        play.open_wallets(d, names)
        played.wallets += names
        if profile == "ante":
            play.open_table(d, table_id, profile, min_stake=100, max_stake=1000)
        elif profile == "room":
            banker = f"{table_id}-banker"
            play.open_wallets(d, [banker], 10_000_000)
            played.wallets.append(banker)
            play.open_table(d, table_id, profile, [(1, names[0]), (2, names[1]), (3, banker)])
            play.hold_banker_bid(d, table_id, [(banker, 10), (names[0], 0), (names[1], 0)])
        else:
            play.open_table(d, table_id, profile, [(i + 1, n) for i, n in enumerate(names)])
        played.tables.append(table_id)
        for n in range(2):
            round_id = play.start_round(d, table_id, f"client-{profile}-{n}")
            if profile == "ante":
                play.place_bets(d, round_id, [(1, names[0], 200), (3, names[1], 400)])
            else:
                play.seat_bets(d, round_id, 200)
            if profile == "classic" and n == 1:
                d.call("void_round", round_id, "a test void")
            else:
                play.drive_round(d, round_id)
            played.rounds.append(round_id)
    d.call("withdraw", "classic-t-p1", 500)
    d.call("checkpoint_table", "classic-t", "day 1")
    # A round left open, its bets reserved in the wallets.
    round_id = play.start_round(d, "kingmaker-t", "client-open")
    play.seat_bets(d, round_id, 300)
    assert app.round_state(round_id).phase is Phase.BETTING
    played.open_round = round_id
    app.save = save  # type: ignore[method-assign]
    return played


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Played]:
    folder = tmp_path_factory.mktemp("fastpaths")
    app = play.make_app({"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(folder / "fast.sqlite")})
    try:
        yield play_store(app)
    finally:
        app.close()


def _streams(p: Played) -> dict[str, list[UUID]]:
    return {
        "round": [ag.round_uuid(r) for r in [*p.rounds, p.open_round]],
        "table": [ag.table_uuid(t) for t in p.tables],
        "wallet": [ag.wallet_uuid(w) for w in p.wallets],
    }


def _fresh(app: PokdengApp, uuid: UUID) -> Any:
    """The aggregate as the library's own projector builds it from the stored events."""
    return project_aggregate(None, app.events.get(uuid))


# -- the version the fences were checked against ---------------------------------------------------


def test_checked_library_version() -> None:
    installed = importlib.metadata.version("eventsourcing")
    assert installed == fastpaths.CHECKED_AGAINST, (
        f"eventsourcing {installed} is installed, but the fast paths in pokdeng_service/store/fastpaths.py "
        f"were checked against {fastpaths.CHECKED_AGAINST}: re-run tests/service/test_fastpaths.py, compare "
        "each fast path with the library code its docstring names, and then update fastpaths.CHECKED_AGAINST"
    )


# -- Application.save's collection -----------------------------------------------------------------


def _compare_collections(objs: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    """Collect two copies of ``objs``, one by ``fastpaths.collect`` and one by the library: the same result."""
    memo_a: dict[int, Any] = {}
    memo_b: dict[int, Any] = {}
    ours = [library_deepcopy(o, memo_a) for o in objs]
    theirs = [library_deepcopy(o, memo_b) for o in objs]
    fast = fastpaths.collect(ours, kwargs)
    library: ProcessingEvent[UUID] = ProcessingEvent()
    library.collect_events(*theirs, **kwargs)  # what Application.save does
    assert [type(e) for e in fast.events] == [type(e) for e in library.events]
    assert fast.events == library.events, "fastpaths.collect collects other events than the library"
    assert list(fast.aggregates) == list(library.aggregates)
    for mine, its in zip(ours, theirs, strict=True):  # the very objects given, by id
        if isinstance(mine, Aggregate):
            assert fast.aggregates[mine.id] is mine and library.aggregates[its.id] is its
    assert [vars(a) for a in fast.aggregates.values()] == [vars(a) for a in library.aggregates.values()]
    assert fast.saved_kwargs == library.saved_kwargs and fast.tracking is library.tracking is None
    assert all(not a.pending_events for a in ours if isinstance(a, Aggregate))
    return len(library.events)


def test_collect_matches_the_library(played: Played) -> None:
    assert played.saves, "the app's commands no longer go through app.save: what does the collecting now?"
    saved = {type(o) for objs, _ in played.saves for o in objs if isinstance(o, Aggregate)}
    assert saved >= set(AGGREGATE_CLASSES), f"no save of {set(AGGREGATE_CLASSES) - saved}"
    collected = sum(_compare_collections(objs, kwargs) for objs, kwargs in played.saves)
    assert collected > len(played.saves)
    # What the application never passes but save takes: None, a bare event, an aggregate twice.
    wallet = ag.Wallet("w-collect")
    wallet.deposit(100, "r-1")
    other = ag.Wallet("w-other")
    (bare,) = other.collect_events()
    assert _compare_collections((None, wallet, bare, wallet), {"note": 1}) == 3


# -- the repository's projector -------------------------------------------------------------------


@pytest.mark.parametrize("stream", ["round", "table", "wallet"])
def test_project_matches_the_library(played: Played, stream: str) -> None:
    app = played.app
    for uuid in _streams(played)[stream]:
        ours = fastpaths.project(None, app.events.get(uuid))
        library: Any = project_aggregate(None, app.events.get(uuid))
        assert type(ours) is type(library) and vars(ours) == vars(library)
        # Through the repository (a version bypasses the cache), as the application loads.
        for version in sorted({1, 2, library.version // 2, library.version} - {0}):
            ours = app.repository.get(uuid, version=version, projector_func=fastpaths.project)
            library = app.repository.get(uuid, version=version)  # its default projector
            assert vars(ours) == vars(library), (stream, version)
        # From a snapshot (tables and wallets are snapshotted, with fastpaths.project).
        if stream != "round":
            middle = max(1, library.version // 2)
            app.take_snapshot(uuid, version=middle, projector_func=project_aggregate)

            ours = fastpaths.project(None, _from_snapshot(app, uuid, middle))
            library = project_aggregate(None, _from_snapshot(app, uuid, middle))
            assert vars(ours) == vars(library) == vars(_fresh(app, uuid))


def _from_snapshot(app: PokdengApp, uuid: UUID, version: int) -> list[Any]:
    """The stream's last snapshot (taken at ``version``) and the events after it, read afresh
    (a snapshot lends its state's dicts to the aggregate made from it)."""
    (snapshot,) = app.snapshots.get(uuid, desc=True, limit=1)  # type: ignore[union-attr]
    assert snapshot.originator_version == version
    return [snapshot, *app.events.get(uuid, gt=version)]


# -- copies ---------------------------------------------------------------------------------------


def _originals(p: Played) -> list[Any]:
    app = p.app
    out: list[Any] = []
    for uuids in _streams(p).values():
        out += [_fresh(app, uuids[0]), _fresh(app, uuids[-1])]
    open_round = _fresh(app, ag.round_uuid(p.open_round))
    shoe = attach_shoe(open_round.state, app.server_seed(p.open_round)).shoe
    assert shoe is not None
    open_round.state = fastpaths.with_shoe(open_round.state, shoe)
    out.append(open_round)
    wallet = _fresh(app, ag.wallet_uuid("kingmaker-t-p1"))
    assert wallet.reservations, "the open round reserves nothing?"
    wallet.deposit(5, "pending")  # with a pending event
    out.append(wallet)
    out.append(_fresh(app, ag.seed_uuid(p.rounds[0])))
    out.append(_fresh(app, ag.command_uuid("req-1", SYSTEM.scope)))
    assert {type(o) for o in out} == set(AGGREGATE_CLASSES)
    return out


def test_copy_aggregate_is_a_deep_copy(played: Played) -> None:
    for original in _originals(played):
        library = library_deepcopy(original)
        for ours in (fastpaths.copy_aggregate(original, {}), copy.deepcopy(original)):
            assert type(ours) is type(original)
            assert vars(ours) == vars(library) == vars(original)
            if isinstance(original, ag.RoundRecord):
                assert ours.state.shoe == library.state.shoe == original.state.shoe  # (not compared by RoundState)
            for name, value in vars(original).items():
                mine = vars(ours)[name]
                if mine is value:  # shared: only values immutable all the way down
                    assert type(value) in fastpaths._SHARED_TYPES, name
                    hash(value)
                    if isinstance(value, RoundState):
                        hash(value.shoe)
            # The mutable parts are the copy's own.
            assert ours._pending_events is not original._pending_events
            pending = len(original.pending_events)
            if isinstance(ours, ag.Wallet):
                ours.reserve("r-copy", 7)
                assert "r-copy" not in original.reservations and ours.reservations != original.reservations
            assert len(original.pending_events) == pending
    # The memo: an aggregate met twice is copied once.
    wallet = _fresh(played.app, ag.wallet_uuid(played.wallets[0]))
    twice = copy.deepcopy([wallet, wallet])
    assert twice[0] is twice[1] and twice[0] is not wallet


def test_with_shoe_is_dataclasses_replace(played: Played) -> None:
    assert fastpaths._PLAIN_ROUND_STATE, "RoundState grew __slots__ or __post_init__: with_shoe takes its slow path"
    app = played.app
    open_state = _fresh(app, ag.round_uuid(played.open_round)).state
    shoe = attach_shoe(open_state, app.server_seed(played.open_round)).shoe
    assert shoe is not None
    states = [RoundState(), _fresh(app, ag.round_uuid(played.rounds[0])).state, open_state]
    for state in states:
        for new_shoe in (shoe, None):
            before = dict(vars(state))
            ours = fastpaths.with_shoe(state, new_shoe)
            library = dataclasses.replace(state, shoe=new_shoe)
            assert type(ours) is RoundState and ours is not state
            assert vars(ours) == vars(library) and ours == library and ours.shoe is new_shoe
            assert vars(state) == before  # the original is untouched
            assert fastpaths.with_shoe(ours, state.shoe) == state


# -- stored rows ----------------------------------------------------------------------------------


def _library_fact(app: PokdengApp, row: Any) -> RecordedEvent:
    return fact_of(app.mapper.to_domain_event(row))


def _same(ours: Any, library: RecordedEvent) -> None:
    assert type(ours) is RecordedEvent
    assert ours == library
    assert [type(v) for v in ours] == [type(v) for v in library]
    assert orjson.dumps(ours.data, option=orjson.OPT_SORT_KEYS) == orjson.dumps(
        library.data, option=orjson.OPT_SORT_KEYS
    )


def test_plain_fact_matches_the_mapper(played: Played) -> None:
    app = played.app
    assert fastpaths.plain_mapper(app.mapper), "the app's default mapper is not plain: the fast path is never taken"
    rows = app.recorder.select_notifications(start=1, limit=1_000_000)
    for row in rows:
        ours = fastpaths.plain_fact(row)
        assert ours is not None, f"{row.topic} (version {row.originator_version}) is not decoded by the fast path"
        _same(ours, _library_fact(app, row))
    written = {type(app.mapper.to_domain_event(row)) for row in rows}
    expected = {
        ag.RoundRecord.Started,
        ag.TableRecord.Opened,
        ag.SealedSeed.Sealed,
        ag.CommandRecord.Accepted,
        *(getattr(ag.Wallet, name) for name in ("Opened", "Deposited", "Withdrawn", "FundsReserved")),
        *(getattr(ag.Wallet, name) for name in ("RoundSettled", "ReservationReleased")),
    }
    assert written >= expected, f"not written: {expected - written}"
    assert len({c for c in written if issubclass(c, ag.RoundRecord.Fact)}) >= 10  # of len(ag.ROUND_FACTS)
    assert len({c for c in written if issubclass(c, ag.TableRecord.Fact)}) >= 5
    # Stream by stream, as audits read them.
    for uuids in _streams(played).values():
        for uuid in uuids:
            ours_all = fastpaths.facts_of_rows(app.mapper, app.recorder.select_events(uuid))
            library_all = [fact_of(e) for e in app.events.get(uuid)]
            assert len(ours_all) == len(library_all)
            for ours, library in zip(ours_all, library_all, strict=True):
                _same(ours, library)


def test_rows_the_fast_path_cannot_read_go_to_the_mapper(played: Played, monkeypatch: pytest.MonkeyPatch) -> None:
    app = played.app
    (row,) = app.recorder.select_events(ag.wallet_uuid("classic-t-p1"), lte=2, gt=1)  # a deposit
    assert fastpaths.plain_fact(row) is not None
    # A class version above the row's: the library upcasts it.
    monkeypatch.setattr(fastpaths, "_PLAIN_TOPICS", {})  # (what it learnt of the topic's class version)
    monkeypatch.setattr(ag.Wallet.Deposited, "class_version", 2, raising=False)
    monkeypatch.setattr(
        ag.Wallet.Deposited, "upcast_v1_v2", staticmethod(lambda state: state.update(note="upcast")), raising=False
    )
    assert fastpaths.plain_fact(row) is None
    (upcast,) = fastpaths.facts_of_rows(app.mapper, [row])
    assert upcast.data["note"] == "upcast" and upcast == _library_fact(app, row)
    monkeypatch.undo()
    state = orjson.loads(row.state)
    # A value the transcoder tagged: the library knows its type.
    tagged = dataclasses.replace(
        row, state=orjson.dumps({**state, "extra": {"_type_": "uuid_hex", "_data_": ag.NAMESPACE.hex}})
    )
    assert fastpaths.plain_fact(tagged) is None
    (fact,) = fastpaths.facts_of_rows(app.mapper, [tagged])
    assert fact.data["extra"] == ag.NAMESPACE and fact == _library_fact(app, tagged)
    # A class version written with the row, an unknown topic, not JSON at all.
    assert fastpaths.plain_fact(dataclasses.replace(row, state=orjson.dumps({**state, "class_version": 2}))) is None
    assert fastpaths.plain_fact(dataclasses.replace(row, topic="nowhere:Nothing")) is None
    assert fastpaths.plain_fact(dataclasses.replace(row, state=b"\x78\x9c not json")) is None


@pytest.mark.parametrize("stored_as", ["zlib", "aes"])
def test_packed_rows_fall_back_to_the_mapper(tmp_path: Any, stored_as: str) -> None:
    from eventsourcing.cryptography import AESCipher

    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "packed.sqlite")}
    if stored_as == "zlib":
        env["COMPRESSOR_TOPIC"] = "eventsourcing.compressor:ZlibCompressor"
    else:
        env["CIPHER_TOPIC"] = "eventsourcing.cryptography:AESCipher"
        env["CIPHER_KEY"] = AESCipher.create_key(num_bytes=32)
    app = play.make_app(env)
    try:
        assert not fastpaths.plain_mapper(app.mapper)
        d = play.Driver(app, chooser=play.Chooser(random.Random(3)))
        play.open_wallets(d, ["a", "b"])
        play.open_table(d, "packed", "classic", [(1, "a"), (2, "b")])
        round_id = play.start_round(d, "packed")
        play.seat_bets(d, round_id, 200)
        play.drive_round(d, round_id)
        rows = app.recorder.select_notifications(start=1, limit=1_000_000)
        assert rows and all(fastpaths.plain_fact(row) is None for row in rows)  # packed: not JSON
        uuids = (ag.round_uuid(round_id), ag.table_uuid("packed"), ag.wallet_uuid("a"))
        read = fastpaths.stream_facts(app.recorder, app.mapper, uuids)  # each row to the mapper
        for uuid in uuids:
            (rows,) = fastpaths.select_rows(app.recorder, [(uuid, None, None, None)])
            library_all = [fact_of(e) for e in app.events.get(uuid)]
            for ours_all in (
                fastpaths.facts_of_rows(app.mapper, app.recorder.select_events(uuid)),
                read[uuid],
                fastpaths.facts_of_rows(app.mapper, rows),  # light rows, given to the mapper
            ):
                assert len(ours_all) == len(library_all)
                for ours, library in zip(ours_all, library_all, strict=True):
                    _same(ours, library)
    finally:
        app.close()


# -- reading streams ------------------------------------------------------------------------------


def _every_stream(app: PokdengApp) -> list[Any]:
    streams: dict[Any, None] = {}
    for row in app.recorder.select_notifications(start=1, limit=1_000_000):
        streams.setdefault(row.originator_id)
    return list(streams)


def _library_rows(app: PokdengApp, uuid: UUID, gt: int | None, lte: int | None, limit: int | None) -> list[Any]:
    rows = app.recorder.select_events(uuid, gt=gt, lte=lte, limit=limit)
    return [(r.originator_id, r.originator_version, r.topic, r.state) for r in rows]


def _reading_its_own_way(app: PokdengApp, monkeypatch: pytest.MonkeyPatch) -> list[UUID]:
    """The app's recorder given a select_events of its own (the library's, counting), so that the fast paths no
    longer read it (undone by ``monkeypatch``: removed again); the streams it is asked, in order."""
    asked: list[UUID] = []
    select = app.recorder.select_events

    def own_select(uuid: UUID, **kwargs: Any) -> Any:
        asked.append(uuid)
        return select(uuid, **kwargs)

    monkeypatch.setitem(vars(app.recorder), "select_events", own_select)
    assert not fastpaths.sqlite_reader(app.recorder)
    return asked


def test_stream_facts_match_select_events(played: Played, monkeypatch: pytest.MonkeyPatch) -> None:
    app = played.app
    assert fastpaths.sqlite_reader(app.recorder), "the app's recorder is not read by the fast path"
    missing = ag.round_uuid("no-such-table#1")
    uuids = [*_every_stream(app), missing]
    assert len(uuids) > fastpaths.STREAMS_PER_QUERY  # more than one query's worth
    library = {uuid: fastpaths.facts_of_rows(app.mapper, app.recorder.select_events(uuid)) for uuid in uuids}
    assert not library[missing] and all(library[u] for u in uuids if u != missing)
    for per_query in (fastpaths.STREAMS_PER_QUERY, 1, 7):
        monkeypatch.setattr(fastpaths, "STREAMS_PER_QUERY", per_query)
        ours = fastpaths.stream_facts(app.recorder, app.mapper, [*reversed(uuids), uuids[0]])  # one named twice
        assert set(ours) == set(uuids)
        for uuid in uuids:
            assert len(ours[uuid]) == len(library[uuid])
            for mine, its in zip(ours[uuid], library[uuid], strict=True):
                _same(mine, its)
    # A row the fast decoder leaves to the mapper (a class version to upcast), read with the others.
    wallet = ag.wallet_uuid("classic-t-p1")
    monkeypatch.setattr(fastpaths, "_PLAIN_TOPICS", {})
    monkeypatch.setattr(ag.Wallet.Deposited, "class_version", 2, raising=False)
    monkeypatch.setattr(
        ag.Wallet.Deposited, "upcast_v1_v2", staticmethod(lambda state: state.update(note="upcast")), raising=False
    )
    upcast = fastpaths.stream_facts(app.recorder, app.mapper, [wallet])[wallet]
    assert next(f for f in upcast if f.kind == "Deposited").data["note"] == "upcast"
    assert upcast == [fact_of(e) for e in app.events.get(wallet)]
    monkeypatch.undo()
    # A recorder that reads its own way is asked stream by stream, through its select_events.
    asked = _reading_its_own_way(app, monkeypatch)
    assert fastpaths.stream_facts(app.recorder, app.mapper, uuids[:5]) == {u: library[u] for u in uuids[:5]}
    assert asked == uuids[:5]


def test_stream_rows_match_select_events(played: Played, monkeypatch: pytest.MonkeyPatch) -> None:
    app = played.app
    assert fastpaths.sqlite_reader(app.recorder)
    missing = ag.round_uuid("no-such-table#1")
    uuids = [*_every_stream(app), missing]
    assert len(uuids) > fastpaths.STREAMS_PER_QUERY  # more than one query's worth
    library = {uuid: _library_rows(app, uuid, None, None, None) for uuid in uuids}
    assert not library[missing] and all(library[u] for u in uuids if u != missing)
    for per_query in (fastpaths.STREAMS_PER_QUERY, 1, 7):
        monkeypatch.setattr(fastpaths, "STREAMS_PER_QUERY", per_query)
        ours = fastpaths.stream_rows(app.recorder, [*reversed(uuids), uuids[0]])  # one named twice
        assert set(ours) == set(uuids)
        for uuid in uuids:
            assert all(type(row) is fastpaths.StoredRow and row.originator_id is uuid for row in ours[uuid])
            assert [tuple(row) for row in ours[uuid]] == library[uuid], uuid
    monkeypatch.undo()
    # The application's mapper makes of them the events it makes of the library's rows (what a load folds).
    for uuid in uuids[:40]:
        mine = [app.mapper.to_domain_event(row) for row in fastpaths.stream_rows(app.recorder, [uuid])[uuid]]
        theirs = list(app.events.get(uuid))
        assert [(type(e), e.__dict__) for e in mine] == [(type(e), e.__dict__) for e in theirs]
    # A recorder that reads its own way is asked stream by stream, through its select_events.
    asked = _reading_its_own_way(app, monkeypatch)
    by_library = fastpaths.stream_rows(app.recorder, uuids[:5])
    assert {
        u: [(r.originator_id, r.originator_version, r.topic, r.state) for r in rows] for u, rows in by_library.items()
    } == {u: library[u] for u in uuids[:5]}
    assert asked == uuids[:5]


def test_select_rows_match_select_events(played: Played, monkeypatch: pytest.MonkeyPatch) -> None:
    app = played.app
    assert fastpaths.sqlite_reader(app.recorder)
    table, wallet, missing = ag.table_uuid(played.tables[0]), ag.wallet_uuid(played.wallets[0]), ag.table_uuid("none")
    reads: list[fastpaths.Read] = [
        (uuid, gt, lte, limit)
        for uuid in (table, wallet, missing)
        for gt in (None, 0, 1, 3, 10_000)
        for lte in (None, 1, 4)
        for limit in (None, 1, 2, 64)
    ]
    ours = fastpaths.select_rows(app.recorder, reads)
    assert len(ours) == len(reads) and any(ours) and not all(ours)
    for (uuid, gt, lte, limit), rows in zip(reads, ours, strict=True):
        assert all(type(row) is fastpaths.StoredRow for row in rows)
        assert [tuple(row) for row in rows] == _library_rows(app, uuid, gt, lte, limit), (uuid, gt, lte, limit)
        theirs = fastpaths.facts_of_rows(app.mapper, app.recorder.select_events(uuid, gt=gt, lte=lte, limit=limit))
        assert fastpaths.facts_of_rows(app.mapper, rows) == theirs
    monkeypatch.setitem(vars(app.recorder), "select_events", app.recorder.select_events)  # one of its own
    assert not fastpaths.sqlite_reader(app.recorder)
    for (uuid, gt, lte, limit), rows in zip(reads, fastpaths.select_rows(app.recorder, reads), strict=True):
        assert [(r.originator_id, r.originator_version, r.topic, r.state) for r in rows] == _library_rows(
            app, uuid, gt, lte, limit
        )


# -- the one record type --------------------------------------------------------------------------


def test_one_record_type_in_views(played: Played) -> None:
    assert views.RecordedEvent is facts.RecordedEvent is facts.Fact
    view = played.app.get_round(played.rounds[0])
    assert view.events and all(type(e) is RecordedEvent for e in view.events)
    again = type(view)(**{**dict(view), "events": view.events})
    assert all(a is b for a, b in zip(again.events, view.events, strict=True))  # held, not rebuilt
    dumped = orjson.loads(view.model_dump_json())["events"]
    assert dumped == [orjson.loads(orjson.dumps(e._asdict())) for e in view.events]  # by field name, as before
    assert type(view).model_validate_json(view.model_dump_json()) == view
