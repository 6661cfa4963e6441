"""Read models (pokdeng_service/readmodels.py) on SQLite and PostgreSQL, and in memory.

The views must say what the application's aggregates say; they catch up after a restart from
the persisted position and process nothing twice; a rebuild from zero gives the same views; a
round in progress is open until it closes; ``last_rounds`` keeps play order and its limit.
"""

from __future__ import annotations

import itertools
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from eventsourcing.persistence import IntegrityError, Tracking

from pokdeng_core.errors import InvalidCommand
from pokdeng_core.round_state import Phase
from pokdeng_service.application import PokdengApp
from pokdeng_service.readmodels import PositionMoved, ReadModels
from pokdeng_service.readmodels import runner as readmodels

from . import play
from .play import Chooser, Driver

pytestmark = pytest.mark.each_store  # (the store is the subject: PostgreSQL too)

WALLETS = ("alice", "bob", "carol", "dave", "erin", "frank")
TABLES = ("c1", "km", "room", "ante")
CYCLE = ("c1", "km", "room", "ante")


# --- driving the application -------------------------------------------------------------------


def set_up(d: Driver) -> None:
    """Six wallets and four tables, one of each profile (room with frank as the player banker)."""
    play.open_wallets(d, WALLETS)
    play.open_table(d, "c1", "classic", [(1, "alice"), (2, "bob"), (3, "carol")])
    play.open_table(d, "km", "kingmaker", [(1, "dave"), (2, "erin")])
    play.open_table(d, "room", "room", [(1, "frank"), (2, "alice"), (3, "bob")], max_stake=1000)
    play.hold_banker_bid(d, "room", [("frank", 10)])
    play.open_table(d, "ante", "ante")


def play_round(d: Driver, table_id: str) -> str:
    if table_id == "room" and d.app.get_table("room").banker is None:  # tenure served: frank sits and bids again
        taken = {s.seat for s in d.app.get_table("room").seats}
        d.call("take_seat", "room", "frank", min(set(range(1, 6)) - taken))
        play.hold_banker_bid(d, "room", [("frank", 10)])
    round_id = play.start_round(d, table_id)
    if table_id == "ante":
        play.place_bets(d, round_id, [(1, "carol", 200), (3, "dave", 400), (3, "erin", 200)])
    else:
        play.seat_bets(d, round_id, 200)
    play.drive_round(d, round_id)
    return round_id


def play_rounds(d: Driver, count: int, tables: tuple[str, ...] = CYCLE) -> list[str]:
    return [play_round(d, tables[n % len(tables)]) for n in range(count)]


def void_a_round(d: Driver, table_id: str = "c1") -> str:
    round_id = play.start_round(d, table_id)
    play.seat_bets(d, round_id, 100)
    d.call("void_round", round_id, "the dealer was taken ill")
    return round_id


def leave_open(d: Driver, table_id: str = "km") -> str:
    """A round with its bets in and the cards dealt, left in the middle."""
    round_id = play.start_round(d, table_id)
    play.seat_bets(d, round_id, 300)
    play.step(d, round_id)  # the deal
    return round_id


def scenario(d: Driver) -> list[str]:
    """Every kind of round and money movement: settled rounds of each profile, a voided round,
    a withdrawal, and a round left in progress. Returns the round ids in the order started."""
    set_up(d)
    rounds = play_rounds(d, 6)
    rounds.append(void_a_round(d))
    d.call("withdraw", "alice", 12_345)
    rounds += play_rounds(d, 3, ("room", "c1", "ante"))
    rounds.append(leave_open(d))
    return rounds


# --- what the application says -----------------------------------------------------------------


def notifications(app: PokdengApp, after: int = 0) -> list[Any]:
    out: list[Any] = []
    while True:
        page = app.read_notifications(after, 1000)
        if not page:
            return out
        out.extend(page)
        after = page[-1].position


def statement(rm: ReadModels, wallet_id: str) -> list[Any]:
    lines: list[Any] = []
    after = 0
    while True:
        page = rm.statement(wallet_id, after=after, limit=7)  # small pages: paging is part of the test
        if not page:
            return lines
        lines.extend(page)
        after = page[-1].position


def assert_views_match(app: PokdengApp, rm: ReadModels, rounds: list[str]) -> None:
    log = notifications(app)
    closed_at = {n.stream_id: n.position for n in log if n.stream == "round" and n.kind == "round_closed"}
    assert rm.position() == app.max_position == log[-1].position

    closed = sorted((r for r in rounds if r in closed_at), key=closed_at.__getitem__)
    history = rm.last_rounds(limit=1000)
    assert [s.round_id for s in history] == closed
    for summary in history:
        view = app.get_round(summary.round_id)
        assert (summary.table_id, summary.round_no, summary.profile, summary.profile_version) == (
            view.table_id,
            view.round_no,
            view.profile,
            view.profile_version,
        )
        assert (summary.outcome, summary.banker) == (view.outcome, view.banker)
        nets = play.assert_round_books(view)
        staked: dict[str, int] = {}
        for bet in (*view.bets, *view.side_bets):
            staked[bet.player] = staked.get(bet.player, 0) + bet.stake
        assert {p.player: p.staked for p in summary.players if p.staked} == staked
        assert {p.player: p.net for p in summary.players if p.player in nets} == nets
        assert all(p.net == 0 for p in summary.players if p.player not in nets)
        assert set(staked) | set(nets) <= {p.player for p in summary.players}
        settled = play.events_of(view, "round_settled")
        house = (settled[0]["house_net"], settled[0]["commission"]) if settled else (0, 0)
        assert (summary.house_net, summary.commission) == house
        assert summary.closed_position == closed_at[summary.round_id]
        assert summary.closed_at == view.events[-1].timestamp and view.events[-1].kind == "round_closed"
        assert summary.opened_at == view.events[0].timestamp
    for player in WALLETS:
        mine = [s.round_id for s in history if player in {p.player for p in s.players}]
        assert [s.round_id for s in rm.last_rounds(player=player, limit=1000)] == mine

    still_open = [r for r in rounds if r not in closed_at]
    assert [o.round_id for o in rm.open_rounds()] == still_open
    for entry in rm.open_rounds():
        view = app.get_round(entry.round_id)
        assert view.phase != Phase.CLOSED.value
        assert (entry.table_id, entry.round_no, entry.version) == (view.table_id, view.round_no, view.version)
        assert entry.last_kind == view.events[-1].kind
        assert entry.last_position == max(
            n.position for n in log if n.stream == "round" and n.stream_id == entry.round_id
        )

    for wallet_id in WALLETS:
        _total, lines = play.statement_total(app, wallet_id)
        assert statement(rm, wallet_id) == lines
        assert rm.statement(wallet_id, after=3, limit=2) == app.wallet_statement(wallet_id, after=3, limit=2)
        wallet = app.get_wallet(wallet_id)
        balance = rm.wallet_balance(wallet_id)
        assert balance is not None
        assert (balance.balance, balance.reserved, balance.available, balance.version) == (
            wallet.balance,
            wallet.reserved,
            wallet.available,
            wallet.version,
        )

    house_net = commission = 0
    for table_id in TABLES:
        table = app.get_table(table_id)
        totals = rm.house_totals(table_id)
        assert (totals.house_net, totals.commission) == (table.house_net, table.commission)
        assert totals.rounds == sum(1 for s in history if s.table_id == table_id)
        house_net += table.house_net
        commission += table.commission
    everything = rm.house_totals()
    assert (everything.house_net, everything.commission, everything.rounds) == (house_net, commission, len(history))
    assert everything.voided == sum(1 for s in history if s.outcome == "voided")
    assert everything.settled + everything.voided == everything.rounds


def snapshot(rm: ReadModels) -> tuple[Any, ...]:
    """Every view, as the queries give it."""
    return (
        rm.position(),
        rm.last_rounds(limit=1000),
        {p: rm.last_rounds(player=p, limit=1000) for p in WALLETS},
        {t: rm.last_rounds(table_id=t, limit=1000) for t in TABLES},
        rm.open_rounds(),
        rm.house_totals(),
        {t: rm.house_totals(t) for t in TABLES},
        {w: statement(rm, w) for w in WALLETS},
        {w: rm.wallet_balance(w) for w in WALLETS},
    )


# --- fixtures ---------------------------------------------------------------------------------


@pytest.fixture
def make_readmodels(app_env: dict[str, str]) -> Iterator[Callable[[], ReadModels]]:
    made: list[ReadModels] = []

    def factory() -> ReadModels:
        rm = ReadModels(app_env)
        made.append(rm)
        return rm

    yield factory
    for rm in reversed(made):
        rm.close()


@pytest.fixture
def rm(make_readmodels: Callable[[], ReadModels]) -> ReadModels:
    return make_readmodels()


@pytest.fixture
def memory_app() -> Iterator[PokdengApp]:
    app = play.make_app({"PERSISTENCE_MODULE": "eventsourcing.popo"})
    yield app
    app.close()


# --- tests -----------------------------------------------------------------------------------


def test_views_equal_what_the_aggregates_say(driver: Driver, app: PokdengApp, rm: ReadModels) -> None:
    assert rm.catch_up(app) == 0 and rm.position() == 0
    assert rm.last_rounds() == () and rm.open_rounds() == () and rm.statement("alice") == ()
    rounds = scenario(driver)
    processed = rm.catch_up(app)
    assert processed == len(notifications(app))
    assert_views_match(app, rm, rounds)
    assert rm.catch_up(app) == 0
    assert rm.wallet_balance("nobody") is None and rm.statement("nobody") == ()
    # Sealed seeds and request records only move the position: they are never decoded.
    for n in app.recorder.select_notifications(1, 100_000):
        decoded = rm._decode(app, n)
        skipped = "SealedSeed" in n.topic or "CommandRecord" in n.topic or "RoundLog" in n.topic  # (no view)
        skipped |= "TableRecord." in n.topic and not n.topic.endswith(
            (".RoundFinished", ".RoundStarted", ".TableOpened")
        )
        assert (decoded is None) == skipped, n.topic


def test_in_memory_views_equal_what_the_aggregates_say(memory_app: PokdengApp) -> None:
    d = Driver(memory_app, chooser=Chooser(random.Random(3)))
    rounds = scenario(d)
    with ReadModels({"PERSISTENCE_MODULE": "eventsourcing.popo"}) as rm:
        assert isinstance(rm.recorder, readmodels.POPOReadModelRecorder)
        rm.page_size = 50
        assert rm.catch_up(memory_app) == len(notifications(memory_app))
        assert_views_match(memory_app, rm, rounds)
        before = snapshot(rm)
        assert rm.rebuild(memory_app) == len(notifications(memory_app))
        assert snapshot(rm) == before


def test_in_memory_background_thread_wakes_on_new_events(memory_app: PokdengApp) -> None:
    d = Driver(memory_app, chooser=Chooser(random.Random(4)))
    with ReadModels({"PERSISTENCE_MODULE": "eventsourcing.popo"}) as rm:
        set_up(d)
        rm.run_in_background(memory_app, interval=60)  # POPO pushes: no polling needed
        rounds = play_rounds(d, 3)
        rounds.append(leave_open(d))
        rm.wait(memory_app.max_position, timeout=20)
        assert_views_match(memory_app, rm, rounds)
        rm.stop()
        assert rm.error is None


def test_a_pushing_store_is_caught_up_a_page_at_a_time_not_a_command_at_a_time(
    memory_app: PokdengApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every command wakes the thread of a store that pushes; under load it catches up at most once each
    ``PUSHED_PAGE_GAP`` s, so that a page (one transaction) takes in many commands' events. (The gap is made
    ten times longer here, so that a page takes in many commands however slowly a loaded machine runs them.)"""
    gap = 10 * readmodels.PUSHED_PAGE_GAP
    monkeypatch.setattr(readmodels, "PUSHED_PAGE_GAP", gap)
    d = Driver(memory_app, chooser=Chooser(random.Random(4)))
    with ReadModels({"PERSISTENCE_MODULE": "eventsourcing.popo"}) as rm:
        set_up(d)
        started: list[float] = []
        catch_up = rm.catch_up

        def counted(app: Any, upto: int | None = None) -> int:
            started.append(time.monotonic())
            return catch_up(app, upto)

        rm.catch_up = counted  # type: ignore[method-assign]
        rm.run_in_background(memory_app, interval=60)
        before = len(d.log)
        d.after_call = lambda _call: time.sleep(0.005)  # commands a few ms apart, as under load: each one wakes it
        rounds = play_rounds(d, 10)
        rm.wait(memory_app.max_position, timeout=60)
        assert_views_match(memory_app, rm, rounds)
        rm.stop()
        assert rm.error is None
    woken = started[2:]  # (the first two: before and just after subscribing)
    assert woken, "no command woke the thread"
    gaps = [later - earlier for earlier, later in itertools.pairwise(woken)]
    assert all(between >= gap for between in gaps), gaps
    assert len(woken) < (len(d.log) - before) / 3, (len(woken), len(d.log) - before)  # pages of many commands


def test_read_models_find_the_application_store_as_it_does(tmp_path: Any) -> None:
    """``POKDENG_<KEY>`` settings (the application's prefix) win over ``<KEY>``, as they do for the app."""
    env = {
        "PERSISTENCE_MODULE": "eventsourcing.sqlite",
        "SQLITE_DBNAME": str(tmp_path / "elsewhere.sqlite"),
        "POKDENG_SQLITE_DBNAME": str(tmp_path / "pokdeng.sqlite"),
    }
    app = play.make_app(env)
    d = Driver(app)
    play.open_wallets(d, ["alice"], 500)
    for rm in (ReadModels(env), ReadModels.for_app(app)):
        with rm:
            rm.catch_up(app)
            assert rm.statement("alice") == app.wallet_statement("alice")
            assert rm.position() == app.max_position
    assert not (tmp_path / "elsewhere.sqlite").exists()
    app.close()


def test_catch_up_after_a_restart_continues_from_the_persisted_position(
    make_app: Callable[..., PokdengApp], make_readmodels: Callable[[], ReadModels], app_env: dict[str, str]
) -> None:
    app = make_app()
    d = Driver(app, prefix="first", chooser=Chooser(random.Random(5)))
    set_up(d)
    rounds = play_rounds(d, 5)
    rounds.append(leave_open(d, "c1"))
    first = make_readmodels()
    seen = first.catch_up(app)
    assert seen == len(notifications(app)) and first.position() == app.max_position
    assert_views_match(app, first, rounds)
    first.close()
    app.close()

    # Restart both: a new application instance finishes the open round and plays more.
    app = make_app()
    d = Driver(app, prefix="second", chooser=Chooser(random.Random(6)))
    play.drive_round(d, rounds[-1])
    rounds += play_rounds(d, 4, ("km", "room", "ante", "c1"))
    rounds.append(void_a_round(d, "room"))
    rounds.append(leave_open(d, "c1"))
    second = ReadModels.for_app(app)
    assert second.position() == seen  # the persisted position
    new = notifications(app, after=seen)
    assert second.catch_up(app) == len(new) > 0  # only what is new
    assert_views_match(app, second, rounds)  # nothing twice: statements, history and ledger equal the app's
    assert second.catch_up(app) == 0
    second.close()


def test_rebuild_from_zero_gives_the_same_views(driver: Driver, app: PokdengApp, rm: ReadModels) -> None:
    rounds = scenario(driver)
    rm.page_size = 97
    rm.catch_up(app)
    before = snapshot(rm)
    assert rm.rebuild(app) == len(notifications(app))
    assert snapshot(rm) == before
    assert_views_match(app, rm, rounds)
    # Without an application the views are emptied and the next catch-up replays.
    assert rm.rebuild() == 0
    assert rm.position() == 0 and rm.last_rounds() == () and rm.open_rounds() == ()
    assert rm.house_totals().rounds == 0 and rm.statement("alice") == ()
    rm.catch_up(app)
    assert snapshot(rm) == before


def test_a_round_in_progress_is_open_until_it_closes(driver: Driver, app: PokdengApp, rm: ReadModels) -> None:
    set_up(driver)
    round_id = play.start_round(driver, "c1")
    rm.catch_up(app)
    (entry,) = rm.open_rounds()
    assert (entry.round_id, entry.table_id, entry.round_no, entry.last_kind) == (round_id, "c1", 1, "shuffle_committed")
    assert rm.open_rounds("km") == ()
    play.seat_bets(driver, round_id, 200)
    other = play.start_round(driver, "km")
    rm.catch_up(app)
    assert [(o.round_id, o.last_kind) for o in rm.open_rounds()] == [
        (round_id, "bet_placed"),
        (other, "shuffle_committed"),
    ]
    assert [o.round_id for o in rm.open_rounds("c1")] == [round_id]
    assert rm.open_rounds()[0].version == app.get_round(round_id).version
    assert rm.last_rounds() == ()
    play.drive_round(driver, round_id)
    rm.catch_up(app)
    assert [o.round_id for o in rm.open_rounds()] == [other]
    assert [s.round_id for s in rm.last_rounds()] == [round_id]
    driver.call("void_round", other, "table closed early")
    rm.catch_up(app)
    assert rm.open_rounds() == ()
    assert [(s.round_id, s.outcome) for s in rm.last_rounds()] == [(round_id, "settled"), (other, "voided")]


def test_last_rounds_keep_play_order_and_the_limit(driver: Driver, app: PokdengApp, rm: ReadModels) -> None:
    set_up(driver)
    c1: list[str] = []
    km: list[str] = []
    for n in range(13):
        c1.append(play_round(driver, "c1"))
        if n % 5 == 0:
            km.append(play_round(driver, "km"))
    rm.page_size = 10
    rm.catch_up(app)
    last = rm.last_rounds(table_id="c1")
    assert [s.round_no for s in last] == list(range(4, 14))  # the last ten, oldest first
    assert [s.round_id for s in last] == c1[-10:]
    assert [s.round_no for s in rm.last_rounds(table_id="c1", limit=3)] == [11, 12, 13]
    assert [s.round_id for s in rm.last_rounds(table_id="km")] == km
    everything = [*c1, *km]
    closed_order = [s.round_id for s in rm.last_rounds(limit=1000)]
    assert sorted(closed_order) == sorted(everything) and closed_order[-1] == c1[-1]
    assert [s.round_id for s in rm.last_rounds()] == closed_order[-10:]
    positions = [s.closed_position for s in rm.last_rounds(limit=1000)]
    assert positions == sorted(positions)
    # per player: dave plays only at the kingmaker table; alice at c1 (and room, not played here)
    assert [s.round_id for s in rm.last_rounds(player="dave")] == km
    assert [s.round_id for s in rm.last_rounds(player="alice", limit=4)] == c1[-4:]
    assert rm.last_rounds(player="alice", table_id="km") == ()
    assert [s.round_id for s in rm.last_rounds(player="dave", table_id="km", limit=2)] == km[-2:]
    assert rm.last_rounds(player="nobody") == ()
    for bad in (0, -1, 1001):
        with pytest.raises(InvalidCommand):
            rm.last_rounds(limit=bad)
    with pytest.raises(InvalidCommand):
        rm.statement("alice", after=-1)


def test_a_failure_mid_page_leaves_views_and_position_as_they_were(
    driver: Driver, app: PokdengApp, rm: ReadModels, monkeypatch: pytest.MonkeyPatch
) -> None:
    rounds = scenario(driver)
    rm.page_size = 40
    real = readmodels.project_event
    calls = 0

    def failing(batch: Any, position: int, event: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == 130:
            raise RuntimeError("crash in the middle of a page")
        real(batch, position, event)

    monkeypatch.setattr(readmodels, "project_event", failing)
    with pytest.raises(RuntimeError):
        rm.catch_up(app)
    stopped_at = rm.position()
    assert 0 < stopped_at < app.max_position
    before = snapshot(rm)
    # The position is a page boundary and the views hold exactly the pages before it.
    other = ReadModels({"PERSISTENCE_MODULE": "eventsourcing.popo"})
    monkeypatch.setattr(readmodels, "project_event", real)
    items = [(n.id, rm._decode(app, n)) for n in app.recorder.select_notifications(1, stopped_at)]
    other.recorder.apply(app.name, 0, items)
    assert snapshot(other)[1:] == before[1:]
    # Resuming processes the rest once.
    assert rm.catch_up(app) == len(notifications(app, after=stopped_at))
    assert_views_match(app, rm, rounds)


def test_a_page_is_applied_once_even_when_offered_twice(driver: Driver, app: PokdengApp, rm: ReadModels) -> None:
    set_up(driver)
    play_rounds(driver, 2)
    rm.catch_up(app)
    before = snapshot(rm)
    page = [(n.id, rm._decode(app, n)) for n in app.recorder.select_notifications(1, 50)]
    with pytest.raises(PositionMoved):  # read after 0, but the views are further on
        rm.recorder.apply(app.name, 0, page)
    with pytest.raises(IntegrityError):  # the library's rule for one event: the position must grow
        rm.projection.process_event(page[-1][1], Tracking(app.name, page[-1][0]))
    assert snapshot(rm) == before


def test_two_processes_catching_up_at_once_apply_each_event_once(
    driver: Driver, app: PokdengApp, make_readmodels: Callable[[], ReadModels]
) -> None:
    rounds = scenario(driver)
    first, second = make_readmodels(), make_readmodels()
    first.page_size, second.page_size = 23, 31
    counts: list[int] = []
    errors: list[BaseException] = []

    def run(rm: ReadModels) -> None:
        try:
            counts.append(rm.catch_up(app))
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=run, args=(rm,)) for rm in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sum(counts) == len(notifications(app))  # every notification processed by exactly one of them
    assert_views_match(app, first, rounds)
    assert snapshot(second) == snapshot(first)


def test_background_thread_keeps_the_views_up_to_date(driver: Driver, app: PokdengApp, rm: ReadModels) -> None:
    set_up(driver)
    rounds = play_rounds(driver, 2)
    rm.run_in_background(app, interval=0.02)
    with pytest.raises(RuntimeError):
        rm.run_in_background(app)
    rounds += play_rounds(driver, 3)
    rounds.append(leave_open(driver))
    rm.wait(app.max_position, timeout=20)
    assert_views_match(app, rm, rounds)
    before = snapshot(rm)
    assert rm.rebuild() == len(notifications(app))  # stops, rebuilds with the thread's app, starts again
    assert snapshot(rm) == before
    rounds.append(void_a_round(driver))
    rm.wait(app.max_position, timeout=20)
    assert_views_match(app, rm, rounds)
    rm.stop()
    assert rm.error is None


def test_eventsourcing_projection_runner_keeps_the_same_views(postgres_env: dict[str, str]) -> None:
    """The library's ProjectionRunner (subscription, one event per transaction) with ReadModelProjection.

    PostgreSQL only: SQLite's recorder has no subscriptions (ReadModels polls it instead).
    """
    from eventsourcing.projection import ProjectionRunner

    app_env = dict(postgres_env)
    app = play.make_app(app_env)
    driver = Driver(app, chooser=Chooser(random.Random(8)))
    rounds = scenario(driver)
    view_class = readmodels.recorder_class(app_env)

    def last_projected() -> int:
        """The runner tracks only the notifications it subscribed to (ReadModelProjection.topics)."""
        found = app.recorder.select_notifications(1, 1_000_000, topics=readmodels.PROJECTED_TOPICS)
        return found[-1].id

    with ProjectionRunner(
        application_class=PokdengApp,
        projection_class=readmodels.ReadModelProjection,
        view_class=view_class,
        env=app_env,
    ) as runner:
        runner.wait(last_projected(), timeout=30)
        rounds.append(void_a_round(driver, "room"))
        runner.wait(last_projected(), timeout=30)
    with ReadModels(app_env) as rm:
        assert rm.position() == last_projected()
        by_runner = snapshot(rm)
        assert rm.catch_up(app) == len(notifications(app, after=last_projected()))  # seeds and requests only
        assert snapshot(rm)[1:] == by_runner[1:]
        assert_views_match(app, rm, rounds)
        rm.rebuild(app)
        assert snapshot(rm)[1:] == by_runner[1:]
    app.close()


@pytest.mark.slow
def test_catch_up_rate(driver: Driver, app: PokdengApp, rm: ReadModels, store: str) -> None:
    """Catch-up from zero and a rebuild read and write a page at a time, never an event at a time: what makes
    them fast (their rates are printed, not asserted; ``POKDENG_READMODELS_BENCH_ROUNDS`` rounds, default 60)."""
    set_up(driver)
    play_rounds(driver, int(os.environ.get("POKDENG_READMODELS_BENCH_ROUNDS", "60")))
    total = len(notifications(app))
    pages = total // rm.page_size + 1  # the last one short (maybe empty): the log's end
    assert pages >= 2  # (more than one page of events: the paging is what is measured)
    reads, writes = _counted(app.recorder, "select_notifications"), _counted(rm.recorder, "apply")
    started = time.perf_counter()
    assert rm.catch_up(app) == total
    elapsed = time.perf_counter() - started
    assert (len(reads), len(writes)) == (pages, pages - (total % rm.page_size == 0)), (reads, writes)
    reads.clear()
    writes.clear()
    started = time.perf_counter()
    assert rm.rebuild(app) == total
    rebuilt = time.perf_counter() - started
    assert (len(reads), len(writes)) == (pages, pages - (total % rm.page_size == 0)), (reads, writes)
    print(
        f"\n{store}: caught up {total} notifications in {elapsed:.3f} s = {total / elapsed:,.0f}/s; "
        f"rebuild {rebuilt:.3f} s = {total / rebuilt:,.0f}/s ({pages} pages of at most {rm.page_size})"
    )


def _counted(owner: Any, name: str) -> list[int]:
    """Count the calls of ``owner.name`` (a list: one entry a call), the method still doing its work."""
    calls: list[int] = []
    method = getattr(owner, name)

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return method(*args, **kwargs)

    setattr(owner, name, counting)
    return calls
