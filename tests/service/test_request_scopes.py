"""Request ids are scoped to the caller that sent them (issue: request-id squatting).

A player who reads a round's version V and sends any successful command with the request id
``timeout:<round>:<V>`` must not stop the turn clock from timing that turn out (RULES §5), and
no caller can claim another caller's ids, present or future."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pokdeng_core.round_state import Phase
from pokdeng_service import audit
from pokdeng_service.application import PokdengApp
from pokdeng_service.application.commands import LeaveSeat, OpenWallet, TakeSeat
from pokdeng_service.application.principal import SYSTEM, TURN_CLOCK, Principal, Role
from pokdeng_service.application.round_commands import PlaceBet
from pokdeng_service.application.turn_clock import TurnClock
from pokdeng_service.store import aggregates as ag

from . import play

CAROL = Principal(Role.PLAYER, "carol")


def _waiting_round(app: PokdengApp, driver: play.Driver) -> str:
    play.open_wallets(driver, ["a", "b", "carol", "dave"])
    play.open_table(driver, "sq", "classic", [(1, "a"), (2, "b")])
    play.open_table(driver, "other", "classic", [])
    for _ in range(30):  # the cards are random: a banker's pok ends a round at the deal
        round_id = play.start_round(driver, "sq")
        play.seat_bets(driver, round_id, 200)
        driver.call("deal", round_id)
        if app.round_state(round_id).phase is Phase.PLAYER_TURNS:
            return round_id
        play.drive_round(driver, round_id)
    raise AssertionError("no round of 30 waited on a player")


def test_a_squatted_timeout_id_does_not_stop_the_turn_clock(app: PokdengApp, driver: play.Driver) -> None:
    round_id = _waiting_round(app, driver)
    version = app.get_round(round_id, with_events=False).version
    squatted = f"timeout:{round_id}:{version}"
    taken = app.handle(CAROL, squatted, TakeSeat("other", "carol", 1))  # a successful command with the clock's id
    assert not taken.replayed and taken.stream == "table"
    future = f"timeout:sq#99:{version}"  # an id of a round that does not exist yet
    assert not app.handle(CAROL, future, LeaveSeat("other", "carol")).replayed
    clock = TurnClock(app, now=lambda: datetime.now(tz=UTC) + timedelta(hours=1))
    assert clock.tick() == [round_id]
    events = app.round_events(round_id)
    assert [e.kind for e in events][version] == "turn_timed_out", "the clock's own id timed the turn out"
    assert events[version].command_id == squatted
    # the clock's id lives in the service's own namespace; carol's in hers
    assert app.command_record(ag.command_uuid(squatted, TURN_CLOCK.scope)) is not None
    assert app.command_record(ag.command_uuid(squatted, CAROL.scope)).result["stream"] == "table"  # type: ignore[union-attr]


def test_the_same_request_id_from_two_callers_is_two_requests(app: PokdengApp) -> None:
    east, west = Principal(Role.OPERATOR, name="east"), Principal(Role.OPERATOR, name="west")
    first = app.handle(east, "open-1", OpenWallet("carol"))
    second = app.handle(west, "open-1", OpenWallet("dave"))
    assert not first.replayed and not second.replayed
    assert app.handle(east, "open-1", OpenWallet("carol")).replayed  # a retry is still a retry
    assert {app.get_wallet("carol").wallet_id, app.get_wallet("dave").wallet_id} == {"carol", "dave"}


def test_scopes_are_disjoint_and_out_of_every_clients_reach() -> None:
    clients = {
        Principal(Role.OPERATOR, name="ops").scope,
        Principal(Role.AUDITOR, name="ops").scope,
        CAROL.scope,
        Principal(Role.OPERATOR, name="internal").scope,
    }
    assert len(clients) == 4 and "internal" not in clients
    assert SYSTEM.scope == TURN_CLOCK.scope == "internal"


def test_one_request_id_from_two_senders_back_to_back_keeps_the_round_verifiable(
    app: PokdengApp, driver: play.Driver
) -> None:
    """Request ids are each sender's own, and a round's events group by command id (docs/audit.md): a
    player who reuses, at once, the id another player just used (it sees it in the round's events) must
    not merge the two commands into one group, which no replay could follow (the round would stop
    verifying). The second command's events carry the id with its sender's scope."""
    play.open_wallets(driver, ["alice", "mallory"])
    play.open_table(driver, "echo", "classic", [(1, "alice"), (2, "mallory")])
    round_id = play.start_round(driver, "echo")
    alice, mallory = Principal(Role.PLAYER, "alice"), Principal(Role.PLAYER, "mallory")
    first = app.handle(alice, "bet-0", PlaceBet(round_id, 1, "alice", 200))
    echoed = app.handle(mallory, "bet-0", PlaceBet(round_id, 2, "mallory", 300))
    assert not first.replayed and not echoed.replayed
    assert app.handle(mallory, "bet-0", PlaceBet(round_id, 2, "mallory", 300)).replayed  # her retry: her first answer
    play.drive_round(driver, round_id)
    events = app.round_events(round_id)
    bets = {e.data["player"]: e.command_id for e in events if e.kind == "bet_placed"}
    assert bets == {"alice": "bet-0", "mallory": "bet-0 (player:mallory)"}
    assert audit.verify_round(app, round_id, check_wallets=True).ok, audit.verify_round(
        app, round_id, check_wallets=True
    ).render()
    verdict, _replayed = audit.replay_round(app, round_id)
    assert verdict.ok, verdict.render()
    assert audit.verify_bundle(audit.bundle_bytes(audit.export_bundle(app, round_id))).ok
    failed = [v.render() for v in audit.verify_store(app) if not v.ok]
    assert not failed, failed  # the store's check of command records knows the scoped id too


def test_one_request_id_from_two_senders_back_to_back_at_a_table_keeps_the_store_verifiable(
    app: PokdengApp, driver: play.Driver
) -> None:
    """The same on a table's stream (found from the outside: two players took seats with one id, one
    after the other, and ``pokdeng verify --all`` said the second seat was not caused by its request)."""
    play.open_wallets(driver, ["bob", "ann"])
    play.open_table(driver, "idt", "classic", [])
    bob, ann = Principal(Role.PLAYER, "bob"), Principal(Role.PLAYER, "ann")
    assert not app.handle(bob, "seat-1", TakeSeat("idt", "bob", 1)).replayed
    assert not app.handle(ann, "seat-1", TakeSeat("idt", "ann", 2)).replayed
    assert app.stream_events(ag.table_uuid("idt"))[-1].command_id == "seat-1 (player:ann)"
    failed = [v.render() for v in audit.verify_store(app) if not v.ok]
    assert not failed, failed
