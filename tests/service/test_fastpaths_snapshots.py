"""``fastpaths.take_snapshots``: snapshots taken of the aggregates a save just wrote are the ones the library's
``take_snapshot`` takes of the same aggregates read back from the store (the same state, version, topic)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, ClassVar

from eventsourcing.persistence import Mapper

from pokdeng_service.application import PokdengApp
from pokdeng_service.store import aggregates as ag
from pokdeng_service.store import fastpaths
from pokdeng_service.store.roundlog import RoundLog
from pokdeng_service.store.vault import SeedVault

from . import play


class OftenSnapshotted(PokdengApp):
    snapshotting_intervals: ClassVar[dict[type[Any], int]] = {ag.Wallet: 3, ag.TableRecord: 4, RoundLog: 2}


def test_snapshots_of_saved_aggregates_are_the_read_back_ones(tmp_path: Path, monkeypatch: Any) -> None:
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "snap.sqlite")}
    app = OftenSnapshotted(env, vault=SeedVault.ephemeral())
    taken: list[Any] = []
    library_path: list[Any] = []
    put = app.snapshots.put  # type: ignore[union-attr]
    take_snapshot = app.take_snapshot

    def put_noted(snapshots: Any, **kw: Any) -> Any:
        taken.extend(snapshots)
        return put(snapshots, **kw)

    def take_noted(*a: Any, **kw: Any) -> Any:
        library_path.append(a)
        return take_snapshot(*a, **kw)

    monkeypatch.setattr(app.snapshots, "put", put_noted)
    monkeypatch.setattr(app, "take_snapshot", take_noted)
    try:
        d = play.Driver(app, chooser=play.Chooser(random.Random(4), side_bet=0.7))
        for profile in ("classic", "kingmaker", "room"):
            names = [f"{profile}-s{i}" for i in range(3)]
            play.open_wallets(d, names)
            if profile == "room":
                banker = f"{profile}-banker"
                play.open_wallets(d, [banker], 10_000_000)
                play.open_table(d, profile, profile, [(1, names[0]), (2, names[1]), (3, banker)])
                play.hold_banker_bid(d, profile, [(banker, 10), (names[0], 0), (names[1], 0)])
            else:
                play.open_table(d, profile, profile, [(i + 1, n) for i, n in enumerate(names)])
            for n in range(4):
                round_id = play.start_round(d, profile, f"s-{profile}-{n}")
                play.seat_bets(d, round_id, 200)
                play.drive_round(d, round_id)
        kinds = {s.topic for s in taken}
        assert len(taken) > 30 and len(taken) > 3 * len(library_path), (len(taken), len(library_path))
        assert len(kinds) == 3, kinds  # wallets, tables and the log of closed rounds
        mapper: Mapper[Any] = Mapper(app.mapper.transcoder)
        for snapshot in taken:
            aggregate = app.repository.get(
                snapshot.originator_id, version=snapshot.originator_version, projector_func=fastpaths.project
            )
            library = type(snapshot).take(aggregate)
            assert snapshot.originator_id == library.originator_id
            assert snapshot.originator_version == library.originator_version
            assert snapshot.topic == library.topic
            ours, theirs = mapper.to_stored_event(snapshot), mapper.to_stored_event(library)
            assert mapper.transcoder.decode(ours.state)["state"] == mapper.transcoder.decode(theirs.state)["state"]
    finally:
        app.close()
