"""The read models' list queries (tables and wallets directories, rounds with filters), their keyset
paging, the same in memory, SQLite and PostgreSQL; the views' version. (Partitions and the paging's
properties: ``test_readmodel_partitions``.)

Every store test plays one log and folds it into the store's views and into memory views: the
lists must equal each other and what the application's aggregates say; paging with any page size
must give every row once, in order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pokdeng_core.errors import InvalidCommand
from pokdeng_service.application import PokdengApp
from pokdeng_service.readmodels import ReadModels, RoundSummary, TableSummary, WalletBalance
from pokdeng_service.readmodels.recorder import MIGRATION_ROW, VIEWS_ROW, VIEWS_VERSION
from pokdeng_service.store import readonly

from . import play
from .play import Driver
from .test_readmodels import TABLES, WALLETS, notifications, play_round, play_rounds, scenario, void_a_round

pytestmark = pytest.mark.each_store  # (the store is the subject: PostgreSQL too)

USD_TABLE = "Zeta"
EXTRA_TABLES = ("b-1", "b1", "\u00f6-lounge", "A.x")  # code point order: "A.x" < "Zeta" < "b-1" < "b1" < "ö-lounge"
USD_WALLET = "\u00c9mile"
EXTRA_WALLETS = ("Zed", "a.b", "a-b")
ALL_TABLES = (*TABLES, USD_TABLE, *EXTRA_TABLES)
ALL_WALLETS = (*WALLETS, USD_WALLET, *EXTRA_WALLETS)
FILTERS: tuple[dict[str, Any], ...] = (
    {},
    {"table_id": "c1"},
    {"table_id": "room"},
    {"table_id": "nowhere"},
    {"player": "alice"},
    {"player": "frank"},
    {"player": "alice", "table_id": "c1"},
    {"player": "dave", "table_id": "c1"},
    {"outcome": "voided"},
    {"outcome": "settled", "table_id": "c1"},
)


# --- playing and the truth -------------------------------------------------------------------


def play_log(d: Driver) -> list[str]:
    """The read models' scenario (every profile, a void, a round left open), more rounds, and
    tables and wallets with no rounds (ids that sort differently by locale, a USD table and wallet)."""
    rounds = scenario(d)
    rounds += play_rounds(d, 5, ("c1", "room", "ante", "c1", "room"))
    rounds.append(void_a_round(d, "room"))
    d.call("open_table", USD_TABLE, "ante", None, min_stake=500, max_stake=5000, seats=6, currency="USD")
    for table_id in EXTRA_TABLES:
        play.open_table(d, table_id, "classic", seats=4)
    d.call("open_wallet", USD_WALLET, currency="USD")
    d.call("deposit", USD_WALLET, 777)
    for wallet_id in EXTRA_WALLETS:
        d.call("open_wallet", wallet_id)
    rounds.append(play.start_round(d, "c1"))  # bets in, not dealt: certainly open
    play.seat_bets(d, rounds[-1], 100)
    return rounds


def moment(text: str) -> datetime:
    return datetime.fromisoformat(text)


def expected_rounds(history: Sequence[RoundSummary], **query: Any) -> list[RoundSummary]:
    """The reference: the rounds of ``history`` (closing order) that match, newest first, compared as times."""
    out = []
    for s in reversed(history):
        if query.get("table_id") is not None and s.table_id != query["table_id"]:
            continue
        if query.get("player") is not None and query["player"] not in {p.player for p in s.players}:
            continue
        if query.get("closed_from") is not None and moment(s.closed_at) < moment(query["closed_from"]):
            continue
        if query.get("closed_to") is not None and moment(s.closed_at) >= moment(query["closed_to"]):
            continue
        if query.get("outcome") is not None and s.outcome != query["outcome"]:
            continue
        if query.get("before_position") is not None and s.closed_position >= query["before_position"]:
            continue
        out.append(s)
    return out


def tables_by_position(rm: Any, limit: int, profile: str | None = None) -> list[TableSummary]:
    seen: list[TableSummary] = []
    after = None
    while True:
        page = rm.list_tables(after=after, limit=limit, profile=profile)
        assert len(page) <= limit
        seen.extend(page)
        if len(page) < limit:
            return seen
        after = page[-1].table_id


def wallets_by_id(rm: Any, limit: int) -> list[WalletBalance]:
    seen: list[WalletBalance] = []
    after = None
    while True:
        page = rm.list_wallets(after=after, limit=limit)
        seen.extend(page)
        if len(page) < limit:
            return seen
        after = page[-1].wallet_id


def rounds_by_position(rm: Any, limit: int, **query: Any) -> list[RoundSummary]:
    seen: list[RoundSummary] = []
    before = None
    while True:
        page = rm.list_rounds(**query, before_position=before, limit=limit)
        seen.extend(page)
        if len(page) < limit:
            return seen
        before = page[-1].closed_position


def rounds_by_cursor(rm: Any, limit: int, **query: Any) -> list[RoundSummary]:
    seen: list[RoundSummary] = []
    cursor = None
    while True:
        page = rm.page_rounds(**query, cursor=cursor, limit=limit)
        seen.extend(page.rounds)
        if page.next_cursor is None:
            return seen
        assert len(page.rounds) == limit  # a page with more after it is full
        cursor = page.next_cursor


def ids(rows: Sequence[Any]) -> list[str]:
    return [getattr(r, "round_id", None) or getattr(r, "table_id", None) or r.wallet_id for r in rows]


def time_bounds(history: Sequence[RoundSummary]) -> list[dict[str, Any]]:
    """Ranges whose ends are rounds' own closing times (given as Z, +00:00 and another offset)."""
    times = sorted({s.closed_at for s in history})
    low, high = times[len(times) // 4], times[3 * len(times) // 4]
    shifted = moment(high).astimezone(timezone(timedelta(hours=7))).isoformat()
    return [
        {"closed_from": low.replace("+00:00", "Z")},
        {"closed_to": high},
        {"closed_from": low, "closed_to": shifted},
        {"closed_from": low, "closed_to": low},
        {"closed_from": times[0], "closed_to": (moment(times[0]) + timedelta(microseconds=1)).isoformat()},
        {"closed_from": high, "table_id": "c1"},
        {"closed_to": shifted, "player": "bob", "outcome": "settled"},
    ]


# --- fixtures ----------------------------------------------------------------------------------


@pytest.fixture
def played(
    driver: Driver, app: PokdengApp, app_env: dict[str, str]
) -> Iterator[tuple[PokdengApp, ReadModels, ReadModels]]:
    """The log played, folded into the store's views and into memory views."""
    play_log(driver)
    stored = ReadModels(app_env)
    stored.page_size = 61
    memory = ReadModels({"PERSISTENCE_MODULE": "eventsourcing.popo"})
    memory.page_size = 37
    assert stored.catch_up(app) == memory.catch_up(app) == len(notifications(app))
    yield app, stored, memory
    stored.close()
    memory.close()


# --- one store -----------------------------------------------------------------------------------


def test_the_directories_say_what_the_aggregates_say(
    played: tuple[PokdengApp, ReadModels, ReadModels], store: str
) -> None:
    app, stored, memory = played
    log = notifications(app)
    opened = {n.stream_id: n for n in log if n.stream == "table" and n.kind == "table_opened"}
    for rm in (stored, memory):
        tables = rm.list_tables(limit=1000)
        assert [t.table_id for t in tables] == sorted(ALL_TABLES)  # code point order
        for summary in tables:
            view = app.get_table(summary.table_id)
            assert summary == TableSummary(
                table_id=view.table_id,
                profile=view.profile,
                profile_version=view.profile_version,
                seats=view.seat_count,
                min_stake=view.min_stake,
                max_stake=view.max_stake,
                opened_at=opened[view.table_id].timestamp,
                opened_position=opened[view.table_id].position,
                round_no=view.round_no,
                current_round_id=view.current_round,
                rounds_closed=len(rm.last_rounds(table_id=view.table_id, limit=1000)),
                currency=view.currency,
            )
        assert rm.list_tables(limit=1000, profile="classic") == tuple(t for t in tables if t.profile == "classic")
        assert rm.list_tables(limit=1000, profile="none") == ()
        by_id = {t.table_id: t for t in tables}
        assert by_id[USD_TABLE].currency == "USD" and by_id["c1"].currency == "THB"
        playing = {t.table_id: t.current_round_id for t in tables if t.current_round_id is not None}
        assert playing == {o.table_id: o.round_id for o in rm.open_rounds()} and "c1" in playing
        assert by_id["ante"].current_round_id is None and by_id["ante"].rounds_closed > 0

        wallets = rm.list_wallets(limit=1000)
        assert [w.wallet_id for w in wallets] == sorted(ALL_WALLETS)
        for balance in wallets:
            assert balance == rm.wallet_balance(balance.wallet_id)
            wallet = app.get_wallet(balance.wallet_id)
            assert (balance.balance, balance.reserved, balance.available, balance.version, balance.currency) == (
                wallet.balance,
                wallet.reserved,
                wallet.available,
                wallet.version,
                wallet.currency,
            )
        assert {w.wallet_id: w.currency for w in wallets}[USD_WALLET] == "USD"
    assert stored.list_tables(limit=1000) == memory.list_tables(limit=1000)
    assert stored.list_wallets(limit=1000) == memory.list_wallets(limit=1000)
    if store == "postgres":  # ids and times compare by code point whatever the database's locale
        schema = stored.recorder.datastore.schema  # type: ignore[attr-defined]
        with stored.recorder._transaction(commit=False) as cursor:  # type: ignore[attr-defined]
            cursor.execute(
                "SELECT table_name, column_name, collation_name FROM information_schema.columns "
                "WHERE table_schema = %s AND column_name IN ('table_id', 'wallet_id', 'closed_at') "
                "AND table_name IN ('pokdeng_tables', 'pokdeng_wallets', 'pokdeng_round_history')",
                (schema,),
            )
            found = {(r["table_name"], r["column_name"]): r["collation_name"] for r in cursor.fetchall()}
        ordered = [
            ("pokdeng_tables", "table_id"),
            ("pokdeng_wallets", "wallet_id"),
            ("pokdeng_round_history", "closed_at"),
        ]
        assert {column: found.get(column) for column in ordered} == dict.fromkeys(ordered, "C")


def test_rounds_filtered_newest_first_the_same_everywhere(played: tuple[PokdengApp, ReadModels, ReadModels]) -> None:
    _app, stored, memory = played
    history = stored.last_rounds(limit=1000)  # closing order (checked against the app in test_readmodels)
    assert history == memory.last_rounds(limit=1000) and len(history) > 12
    assert {s.outcome for s in history} == {"settled", "voided"}
    for query in (*FILTERS, *time_bounds(history)):
        want = expected_rounds(history, **query)
        for rm in (stored, memory):
            assert list(rm.list_rounds(**query, limit=1000)) == want, query
            assert list(rm.list_rounds(**query, limit=3)) == want[:3], query
            if len(want) > 2:
                middle = want[1].closed_position
                assert list(rm.list_rounds(**query, before_position=middle, limit=1000)) == want[2:]
    voided = stored.list_rounds(outcome="voided", limit=1000)
    assert [s.round_id for s in voided] == [s.round_id for s in reversed(history) if s.outcome == "voided"]
    assert len(voided) == 2
    # exact ends: a round closed at closed_from is in, one closed at closed_to is out
    first = history[0]
    assert first in stored.list_rounds(closed_from=first.closed_at, limit=1000)
    assert first not in stored.list_rounds(closed_to=first.closed_at, limit=1000)
    assert stored.list_rounds(closed_from=first.closed_at, closed_to=first.closed_at) == ()
    # last_rounds is as it was: the last N, oldest first
    assert stored.last_rounds(limit=4) == tuple(reversed(stored.list_rounds(limit=4)))


@pytest.mark.parametrize("limit", [1, 2, 3, 5])
def test_paging_gives_every_row_once_in_order(played: tuple[PokdengApp, ReadModels, ReadModels], limit: int) -> None:
    _app, stored, memory = played
    history = stored.last_rounds(limit=1000)
    for rm in (stored, memory):
        assert tables_by_position(rm, limit) == list(rm.list_tables(limit=1000))
        assert tables_by_position(rm, limit, "classic") == list(rm.list_tables(limit=1000, profile="classic"))
        assert wallets_by_id(rm, limit) == list(rm.list_wallets(limit=1000))
        for query in (*FILTERS, *time_bounds(history)):
            want = expected_rounds(history, **query)
            assert rounds_by_position(rm, limit, **query) == want, query
            assert rounds_by_cursor(rm, limit, **query) == want, query
    # keyset from an id that is not there: strictly greater
    assert [t.table_id for t in stored.list_tables(after="b", limit=3)] == ["b-1", "b1", "c1"]
    assert [w.wallet_id for w in stored.list_wallets(after="a", limit=2)] == ["a-b", "a.b"]
    assert stored.list_tables(after="\uffff") == () and stored.list_wallets(after="\uffff") == ()


def test_the_list_queries_check_their_arguments(played: tuple[PokdengApp, ReadModels, ReadModels]) -> None:
    _app, stored, _memory = played
    bad: list[Callable[[], Any]] = [
        lambda: stored.list_tables(limit=0),
        lambda: stored.list_tables(limit=10_001),
        lambda: stored.list_rounds(limit=1001),
        lambda: stored.list_wallets(limit=True),
        lambda: stored.list_tables(after=3),  # type: ignore[arg-type]
        lambda: stored.list_rounds(outcome="won"),
        lambda: stored.list_rounds(closed_from="yesterday"),
        lambda: stored.list_rounds(closed_to="2026-01-01T00:00:00"),  # no offset
        lambda: stored.list_rounds(closed_to="2026-01-01"),
        lambda: stored.list_rounds(before_position=-1),
        lambda: stored.page_rounds(cursor=(1, 2)),
        lambda: stored.page_rounds(cursor=(-1,)),
        lambda: stored.page_rounds(cursor="12"),  # type: ignore[arg-type]
    ]
    for call in bad:
        with pytest.raises(InvalidCommand):
            call()
    assert stored.list_rounds(before_position=0) == ()
    assert stored.list_tables(limit=1001) == stored.list_tables(limit=10_000)  # a page of 1,000 and one more
    assert stored.page_rounds(cursor=(0,), limit=2) == stored.page_rounds(limit=2)


def test_the_same_answers_for_any_question(played: tuple[PokdengApp, ReadModels, ReadModels]) -> None:
    """Random filters, bounds and limits: the store's answer is memory's and the reference's."""
    _app, stored, memory = played
    history = stored.last_rounds(limit=1000)
    times = [s.closed_at for s in history]
    positions = [s.closed_position for s in history]
    one = timedelta(microseconds=1)
    bounds = st.sampled_from(times).flatmap(
        lambda t: st.sampled_from([t, (moment(t) - one).isoformat(), (moment(t) + one).isoformat()])
    )

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(
        table_id=st.none() | st.sampled_from(TABLES),
        player=st.none() | st.sampled_from(WALLETS),
        closed_from=st.none() | bounds,
        closed_to=st.none() | bounds,
        outcome=st.none() | st.sampled_from(["settled", "voided"]),
        before_position=st.none() | st.sampled_from(positions) | st.integers(0, max(positions) + 5),
        limit=st.integers(1, 6),
    )
    def check(limit: int, **query: Any) -> None:
        want = expected_rounds(history, **query)[:limit]
        assert list(stored.list_rounds(**query, limit=limit)) == want
        assert list(memory.list_rounds(**query, limit=limit)) == want

    check()


# --- the views' version ---------------------------------------------------------------------------


def test_views_of_another_version_are_dropped_and_replayed(
    driver: Driver, app: PokdengApp, app_env: dict[str, str], store: str
) -> None:
    play.open_wallets(driver, WALLETS)
    play.open_table(driver, "c1", "classic", [(1, "alice"), (2, "bob"), (3, "carol")])
    for _ in range(3):
        play_round(driver, "c1")
    with ReadModels(app_env) as rm:
        rm.catch_up(app)
        assert rm.recorder.views_current()
        lists = (rm.list_tables(), rm.list_wallets(), rm.list_rounds(), rm.last_rounds())
        assert rm.rebuild(app) == len(notifications(app))  # a rebuild keeps the version
        assert rm.recorder.views_current() and rm.recorder.max_tracking_id(MIGRATION_ROW) == 1
        assert (rm.list_tables(), rm.list_wallets(), rm.list_rounds(), rm.last_rounds()) == lists
    read_only = readonly.sqlite_settings(app_env["SQLITE_DBNAME"]) if store == "sqlite" else None
    for older in (1, None):  # a store of version 1 (the row absent: stores made before it was kept)
        with ReadModels(app_env) as rm:
            recorder: Any = rm.recorder
            with recorder._transaction(commit=True) as cursor:
                if older is None:
                    cursor.execute(recorder._q("DELETE FROM {tracking} WHERE application_name = %s"), (VIEWS_ROW,))
                else:
                    cursor.execute(
                        recorder._q("UPDATE {tracking} SET notification_id = %s WHERE application_name = %s"),
                        (older, VIEWS_ROW),
                    )
                cursor.execute(recorder._q("DROP TABLE {pokdeng_tables}"))
                cursor.execute(recorder._q("ALTER TABLE {pokdeng_wallets} DROP COLUMN currency"))
            assert not rm.recorder.views_current()
        # Opened read only, the views of another version are not trusted: position 0, nothing changed.
        with ReadModels(read_only or readonly.postgres_settings(app_env)) as old:
            assert old.position() == 0 and not old.recorder.views_current()
            assert old.recorder.position(app.name) == app.max_position
        # Opened to write (a server, rebuild-read-models): dropped, made again, replayed by the catch-up.
        with ReadModels(app_env) as rm:
            assert rm.recorder.views_current() and rm.position() == 0
            assert rm.list_tables() == () and rm.last_rounds() == () and rm.list_wallets() == ()
            assert rm.recorder.max_tracking_id(MIGRATION_ROW) == 1  # the library's row is left alone
            assert rm.catch_up(app) == len(notifications(app))
            assert (rm.list_tables(), rm.list_wallets(), rm.list_rounds(), rm.last_rounds()) == lists
        with ReadModels(app_env) as rm:  # and once current, a start changes nothing
            assert rm.position() == app.max_position
            assert rm.recorder.max_tracking_id(VIEWS_ROW) == VIEWS_VERSION
