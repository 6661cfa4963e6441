"""The read models of several partitions merged and paged across (``PartitionedReadModels``), and
properties of the paging: cursors over partitions' logs give every round once, in one order;
stored times compare as text, and the time bounds of the list queries are read as stored times.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pokdeng_core.errors import InvalidCommand
from pokdeng_service.application.config import StoreConfig
from pokdeng_service.application.partitions import PartitionedPokdeng, partition_of
from pokdeng_service.readmodels import RoundSummary
from pokdeng_service.readmodels.paging import check_cursor, instant, merge_rounds
from pokdeng_service.readmodels.partitioned import PartitionedReadModels
from pokdeng_testkit.keys import VAULT_KEY

from . import play
from .play import Chooser, Driver
from .test_readmodel_lists import ids, rounds_by_cursor, rounds_by_position, tables_by_position, wallets_by_id

# --- partitions ------------------------------------------------------------------------------------


def _shard(partition: int) -> str:
    return next(s for s in (f"s{n}" for n in range(100)) if partition_of(f"{s}/x", 2) == partition)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def two_partitions(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[PartitionedPokdeng, StoreConfig]]:
    if request.param == "sqlite":
        config = StoreConfig(kind="sqlite", sqlite_path=str(tmp_path / "p.sqlite"), partitions=2, vault_key=VAULT_KEY)
    else:
        info = request.getfixturevalue("postgres_database")
        config = StoreConfig(kind="postgres", postgres_url=info.url, partitions=2, vault_key=VAULT_KEY)
    service = PartitionedPokdeng.open(config)
    try:
        yield service, config
    finally:
        service.close()


def test_partitions_are_merged_and_paged_across(two_partitions: tuple[PartitionedPokdeng, StoreConfig]) -> None:
    service, config = two_partitions
    home = _shard(1)
    people = {0: ["alice", "bob", "Carl", "dora"], 1: [f"{home}/{p}" for p in ("alice", "bob", "Carl", "dora")]}
    tables = {0: ["t0", "m0"], 1: [f"{home}/t1", f"{home}/m1"]}
    drivers = {k: Driver(service.apps[k], prefix=f"p{k}", chooser=Chooser(random.Random(k))) for k in (0, 1)}
    for k, d in drivers.items():
        assert {service.partition(t) for t in tables[k]} == {service.partition(w, "wallet") for w in people[k]} == {k}
        play.open_wallets(d, people[k])
        for n, table_id in enumerate(tables[k]):  # alice and bob at the first table, Carl and dora at the other
            play.open_table(d, table_id, "classic", list(enumerate(people[k][2 * n : 2 * n + 2], start=1)))
    for n in range(7):  # interleaved, so that the closing times interleave across the logs
        for k in (n % 2, 1 - n % 2):
            d = drivers[k]
            round_id = play.start_round(d, tables[k][n % 2])
            play.seat_bets(d, round_id, 100)
            if n == 3:
                d.call("void_round", round_id, "power cut")
            else:
                play.drive_round(d, round_id)
    models = PartitionedReadModels(service, config)
    try:
        assert models.catch_up() > 0
        every = [s for m in models.models for s in m.last_rounds(limit=1000)]
        newest = sorted(every, key=lambda s: (s.closed_at, s.round_id), reverse=True)
        assert len(newest) == 14

        all_tables = sorted(t for k in (0, 1) for t in tables[k])
        all_wallets = sorted(w for k in (0, 1) for w in people[k])
        assert [t.table_id for t in models.list_tables(limit=1000)] == all_tables
        assert [w.wallet_id for w in models.list_wallets(limit=1000)] == all_wallets
        for limit in (1, 2, 3, 1000):
            assert ids(tables_by_position(models, limit)) == all_tables
            assert ids(wallets_by_id(models, limit)) == all_wallets
            assert rounds_by_cursor(models, limit) == newest  # every round once, newest first
            assert rounds_by_cursor(models, limit, outcome="voided") == [s for s in newest if s.outcome == "voided"]
            for k in (0, 1):  # routed: the table's (the player's) partition alone
                table_id, player = tables[k][0], people[k][0]
                want = [s for s in newest if s.table_id == table_id]
                assert rounds_by_cursor(models, limit, table_id=table_id) == want
                assert rounds_by_position(models, limit, table_id=table_id) == want
                mine = [s for s in newest if player in {p.player for p in s.players}]
                assert rounds_by_cursor(models, limit, player=player) == mine
        middle = newest[5].closed_at
        assert rounds_by_cursor(models, 2, closed_from=middle) == newest[:6]
        assert rounds_by_cursor(models, 4, closed_to=middle) == newest[6:]

        assert models.last_rounds(limit=5) == tuple(reversed(newest[:5]))  # as it was: merged, oldest first
        page = models.page_rounds(limit=3)
        assert page.rounds == tuple(newest[:3]) and page.next_cursor is not None and len(page.next_cursor) == 2
        assert models.list_rounds(limit=3) == page.rounds  # the first page, merged
        with pytest.raises(InvalidCommand):  # a position of which log?
            models.list_rounds(before_position=page.rounds[-1].closed_position)
        with pytest.raises(InvalidCommand):
            models.page_rounds(cursor=(5,))  # one entry per partition
        last = models.page_rounds(limit=14)
        assert last.rounds == tuple(newest) and last.next_cursor is None  # a full last page says so
    finally:
        models.stop()
        for m in models.models:
            m.close()


# --- properties of the paging ----------------------------------------------------------------------

_T0 = datetime(2026, 5, 1, tzinfo=UTC)


def _round(round_id: str, position: int, closed_at: datetime) -> RoundSummary:
    return RoundSummary(
        round_id=round_id,
        table_id=round_id.rsplit("#", 1)[0],
        round_no=position,
        profile="classic",
        profile_version=1,
        outcome="settled",
        banker=None,
        players=(),
        house_net=0,
        commission=0,
        opened_at=closed_at.isoformat(),
        closed_at=closed_at.isoformat(),
        opened_position=position,
        closed_position=position,
    )


@st.composite
def partition_logs(draw: st.DrawFn) -> list[list[RoundSummary]]:
    """1 to 4 logs of closed rounds (positions growing with gaps), with times that mostly grow too
    but may tie or step back (commits of concurrent writers)."""
    logs: list[list[RoundSummary]] = []
    for k in range(draw(st.integers(1, 4))):
        rounds: list[RoundSummary] = []
        position, at = 0, _T0
        for n in range(draw(st.integers(0, 12))):
            position += draw(st.integers(1, 3))
            at += timedelta(microseconds=draw(st.integers(-2, 5)))
            rounds.append(_round(f"p{k}t#{n + 1}", position, at))
        logs.append(rounds)
    return logs


@settings(max_examples=200, deadline=None)
@given(logs=partition_logs(), limit=st.integers(1, 5))
def test_paging_partitions_with_a_cursor_gives_each_round_once(logs: list[list[RoundSummary]], limit: int) -> None:
    def select(k: int, before: int, most: int) -> list[RoundSummary]:
        return [s for s in reversed(logs[k]) if not before or s.closed_position < before][:most]

    def page(cursor: tuple[int, ...] | None, size: int) -> Any:
        bounds = check_cursor(cursor, len(logs))
        return merge_rounds([select(k, b, size + 1) for k, b in enumerate(bounds)], bounds, size)

    whole = page(None, 1000)
    assert whole.next_cursor is None
    seen: list[RoundSummary] = []
    cursor = None
    while True:
        got = page(cursor, limit)
        seen.extend(got.rounds)
        if got.next_cursor is None:
            break
        assert len(got.rounds) == limit
        cursor = got.next_cursor
    assert seen == list(whole.rounds)  # pages resume the merge exactly: each round once, one order
    assert sorted(s.round_id for s in seen) == sorted(s.round_id for log in logs for s in log)
    for k, log in enumerate(logs):  # each log is taken newest position first
        mine = [s for s in seen if s.round_id.startswith(f"p{k}t")]
        assert mine == list(reversed(log))
    if all(a.closed_at < b.closed_at for log in logs for a, b in itertools.pairwise(log)):
        assert seen == sorted(seen, key=lambda s: (s.closed_at, s.round_id), reverse=True)


_TIMES = st.datetimes(min_value=datetime(1000, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC))


@given(_TIMES, _TIMES, st.integers(-14 * 60, 14 * 60))
def test_stored_times_compare_as_text_and_bounds_are_read_as_them(one: datetime, other: datetime, minutes: int) -> None:
    assert (one.isoformat() < other.isoformat()) == (one < other)  # closed_at as stored: text order is time order
    zone = timezone(timedelta(minutes=minutes))
    for text in (one.isoformat(), one.isoformat().replace("+00:00", "Z"), one.astimezone(zone).isoformat()):
        assert instant(text, "closed_from") == one.isoformat()
