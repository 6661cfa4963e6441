"""Concurrent writers: two PokdengApp instances on one store (an SQLite file, a PostgreSQL database).

Threads withdraw from one wallet and bet on one round through both instances at once: no
update is lost, no money is spent twice, and every optimistic-concurrency conflict is either
retried away or surfaces as ``pokdeng_service.application.errors.Conflict`` having written nothing. Any
other exception (a driver's "database is locked", an IntegrityError) fails the test.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from pokdeng_core.errors import DomainError, InsufficientFunds
from pokdeng_service.application import PokdengApp
from pokdeng_service.application.errors import Conflict

from . import play
from .play import Driver, Ledger

pytestmark = pytest.mark.each_store  # (the store is the subject: PostgreSQL too)

Outcome = tuple[str, str]  # (request id, "ok" | "insufficient" | "conflict")


def _run_threads(jobs: list[Callable[[], list[Outcome]]]) -> list[Outcome]:
    barrier = threading.Barrier(len(jobs))
    results: list[list[Outcome]] = [[] for _ in jobs]
    errors: list[BaseException] = []

    def runner(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[i] = jobs[i]()
        except BaseException as error:  # collected and re-raised in the main thread
            errors.append(error)

    threads = [threading.Thread(target=runner, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a writer thread hung"
    if errors:
        raise errors[0]
    return [o for r in results for o in r]


def _attempt(call: Callable[..., Any], request_id: str, *args: Any) -> Outcome:
    try:
        call(request_id, *args)
    except InsufficientFunds:
        return request_id, "insufficient"
    except Conflict:
        return request_id, "conflict"
    return request_id, "ok"


def test_withdrawals_from_two_instances_never_double_spend(make_app: Callable[..., PokdengApp]) -> None:
    one, two = make_app(), make_app()
    one.open_wallet("open", "w")
    one.deposit("fund", "w", 10_000)

    def withdrawer(app: PokdengApp, tag: str) -> Callable[[], list[Outcome]]:
        return lambda: [_attempt(app.withdraw, f"{tag}-{i}", "w", 100) for i in range(40)]

    # two threads per instance, 160 withdrawals of 100 against 10,000
    outcomes = _run_threads([withdrawer(one, "a"), withdrawer(two, "b"), withdrawer(one, "c"), withdrawer(two, "d")])
    tally = Counter(kind for _, kind in outcomes)
    ok = {rid for rid, kind in outcomes if kind == "ok"}
    assert tally["ok"] + tally["insufficient"] + tally["conflict"] == 160
    fresh = make_app()
    for app in (one, two, fresh):
        view = app.get_wallet("w")
        assert view.balance == 10_000 - 100 * len(ok) >= 0
        assert view.reserved == 0
    assert len(ok) == 100 or tally["conflict"] > 0
    if tally["insufficient"]:
        assert fresh.get_wallet("w").balance < 100 or tally["conflict"] > 0
    total, lines = play.statement_total(fresh, "w")
    assert total == fresh.get_wallet("w").balance
    withdrawn = [line.reference for line in lines if line.kind == "Withdrawn"]
    assert sorted(withdrawn) == sorted(ok), "a withdrawal was lost or recorded twice"
    for rid in ok:  # each success is recorded once and replays
        assert fresh.withdraw(rid, "w", 100).replayed


def test_bets_on_one_round_from_two_instances(make_app: Callable[..., PokdengApp]) -> None:
    one, two = make_app(), make_app()
    driver = Driver(one)
    holders = [f"s{n}" for n in range(1, 11)]
    play.open_wallets(driver, holders)
    play.open_wallets(driver, ["x"], 3_000)  # covers six stakes of 100 (500 reserved each)
    play.open_table(driver, "t", "classic", [(n, f"s{n}") for n in range(1, 11)], seats=10)
    round_id = play.start_round(driver, "t")

    def bettor(app: PokdengApp, seats: range) -> Callable[[], list[Outcome]]:
        def job() -> list[Outcome]:
            out = []
            for seat in seats:
                out.append(_attempt(app.place_bet, f"own-{seat}", round_id, seat, f"s{seat}", 100))
                out.append(_attempt(app.place_bet, f"x-{seat}", round_id, seat, "x", 100))
            return out

        return job

    def withdrawer(app: PokdengApp) -> Callable[[], list[Outcome]]:
        return lambda: [_attempt(app.withdraw, f"wd-{i}", "x", 100) for i in range(10)]

    outcomes = _run_threads([bettor(one, range(1, 6)), bettor(two, range(6, 11)), withdrawer(two)])
    kinds = dict(outcomes)
    state = make_app().round_state(round_id)
    placed = {f"own-{b.seat}" if b.player != "x" else f"x-{b.seat}" for b in state.bets}
    assert placed == {rid for rid, kind in kinds.items() if kind == "ok" and not rid.startswith("wd-")}, (
        "a bet was lost or one refused was recorded"
    )
    assert all(kinds[f"own-{n}"] in ("ok", "conflict") for n in range(1, 11))
    x_bets = [b for b in state.bets if b.player == "x"]
    withdrawn = 100 * sum(1 for rid, kind in kinds.items() if rid.startswith("wd-") and kind == "ok")
    x = make_app().get_wallet("x")
    assert x.balance == 3_000 - withdrawn
    assert x.reserved == 500 * len(x_bets) <= x.balance, "reserved funds were spent twice"
    assert x.available >= 0
    for app in (one, two):
        assert app.get_wallet("x") == x
    ledger = Ledger.take(one, [*holders, "x"], ["t"])
    play.drive_round(driver, round_id)
    ledger.assert_balanced(one)


def test_the_same_request_from_two_instances_is_done_once(make_app: Callable[..., PokdengApp]) -> None:
    one, two = make_app(), make_app()
    one.open_wallet("open", "w")

    def depositor(app: PokdengApp) -> Callable[[], list[Any]]:
        return lambda: [(rid, app.deposit(rid, "w", 10)) for rid in (f"dep-{i}" for i in range(25))]

    results = _run_threads([depositor(one), depositor(two), depositor(one)])
    by_id: dict[str, list[Any]] = {}
    for rid, result in results:
        by_id.setdefault(rid, []).append(result)
    for rid, found in by_id.items():
        assert len(found) == 3
        assert sum(not r.replayed for r in found) == 1, f"{rid} was carried out more than once"
        assert all(r.events == found[0].events for r in found)
    assert two.get_wallet("w").balance == 250


def test_a_conflict_that_never_clears_surfaces_as_conflict(
    make_app: Callable[..., PokdengApp], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer gets there first on every attempt: a bounded retry, then ``Conflict``, nothing written."""
    app, rival = make_app(), make_app()
    app.open_wallet("open", "w")
    app.deposit("fund", "w", 1_000)
    save = app.save
    attempts = []

    def contended_save(*aggregates: Any, **kwargs: Any) -> Any:
        attempts.append(1)
        rival.deposit(f"rival-{len(attempts)}", "w", 1)  # the rival commits first
        return save(*aggregates, **kwargs)

    monkeypatch.setattr(app, "save", contended_save)
    with pytest.raises(Conflict) as caught:
        app.withdraw("mine", "w", 500)
    assert caught.value.code == "conflict"
    assert 2 <= len(attempts) <= 20
    monkeypatch.undo()
    view = make_app().get_wallet("w")
    assert view.balance == 1_000 + len(attempts)  # only the rival's deposits
    result = app.withdraw("mine", "w", 500)  # the id was not used up by the failed attempts
    assert not result.replayed and app.get_wallet("w").balance == 500 + len(attempts)


def test_racing_round_commands_from_two_instances(make_app: Callable[..., PokdengApp]) -> None:
    """Two starts of one table's round: one round. A deal racing bets: no stake lands after the cards."""
    one, two = make_app(), make_app()
    driver = Driver(one)
    players = [f"p{n}" for n in range(1, 9)]
    play.open_wallets(driver, players)
    play.open_table(driver, "t", "classic", [(n, p) for n, p in enumerate(players, 1)], seats=8)
    for attempt in range(3):
        _race_one_round(one, two, driver, players, attempt, make_app())


def _race_one_round(
    one: PokdengApp, two: PokdengApp, driver: Driver, players: list[str], attempt: int, fresh: PokdengApp
) -> None:
    ledger = Ledger.take(one, players, ["t"])

    def starter(app: PokdengApp, tag: str) -> Callable[[], list[Outcome]]:
        return lambda: [_refusable(app.start_round, f"start-{attempt}-{tag}", "t")]

    starts = _run_threads([starter(one, "a"), starter(two, "b")])
    assert sorted(kind for _, kind in starts) == ["ok", "refused"], starts
    round_id = one.get_table("t").current_round
    assert round_id == f"t#{attempt + 1}"
    driver.call("place_bet", round_id, 1, "p1", 100)

    def bets() -> list[Outcome]:
        return [_refusable(two.place_bet, f"bet-{attempt}-{n}", round_id, n, f"p{n}", 100) for n in range(2, 9)]

    def deal() -> list[Outcome]:
        return [_refusable(one.deal, f"deal-{attempt}", round_id)]

    outcomes = dict(_run_threads([bets, deal]))
    assert outcomes[f"deal-{attempt}"] == "ok"
    state = fresh.round_state(round_id)
    placed = {b.seat for b in state.bets}
    assert placed == {1} | {n for n in range(2, 9) if outcomes[f"bet-{attempt}-{n}"] == "ok"}
    assert set(state.in_play) == placed, "a stake was accepted after the deal, or a dealt stake lost"
    for n in range(2, 9):  # a refused stake reserved nothing
        if outcomes[f"bet-{attempt}-{n}"] != "ok":
            assert fresh.get_wallet(f"p{n}").reservations == ()
    play.drive_round(driver, round_id)
    ledger.assert_balanced(one)


def _refusable(call: Callable[..., Any], request_id: str, *args: Any) -> Outcome:
    try:
        call(request_id, *args)
    except Conflict:
        return request_id, "conflict"
    except DomainError:
        return request_id, "refused"
    return request_id, "ok"
