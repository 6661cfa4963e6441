"""Commands name their sender in the record (docs/events.md, "Who sent a command"): the operator's own
always (``round_opened.by``, ``cards_dealt.by``, ``round_voided.by``, ``turn_timed_out.by``,
``side_bets_settled.by``), and the decisions sent for a player, the platform or the house's hand when the
sender is not that player (``bet_placed``, ``side_bet_placed``, ``client_seed_contributed``, a chosen
``card_drawn`` or ``player_stood``, a chosen ``hands_revealed``); a player's own decision leaves ``by``
empty. Records made before these fields replay as they were."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest

from pokdeng_core.round_state import BANKER, Phase
from pokdeng_service import audit
from pokdeng_service.application import PokdengApp
from pokdeng_service.application.commands import StartRound
from pokdeng_service.application.principal import SYSTEM, TURN_CLOCK, Principal, Role
from pokdeng_service.application.round_commands import (
    BankerDraw,
    BankerReveal,
    BankerStay,
    CloseSideBets,
    ContributeSeed,
    Deal,
    Draw,
    PlaceBet,
    PlaceSideBet,
    Stay,
    TimeOutTurn,
    VoidRound,
)
from pokdeng_service.store.signing import PublicKeys

from ..cli.pages import worked_round
from . import play
from .play import Chooser, Driver

DESK = Principal(Role.OPERATOR, name="desk-7")
LEGACY = Path(__file__).parent / "legacy"
TEST_KEY = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"  # the worked example's (public)


def _event(events: Any, kind: str) -> Any:
    return next(e for e in events if (e["kind"] if isinstance(e, dict) else e.kind) == kind)


def _all(events: Any, kind: str) -> list[Any]:
    return [e for e in events if (e["kind"] if isinstance(e, dict) else e.kind) == kind]


DECISION_KINDS = ("card_drawn", "player_stood")
NEW_KINDS = ("bet_placed", "side_bet_placed", "client_seed_contributed", *DECISION_KINDS, "hands_revealed")
"""The kinds whose ``by`` came with the decisions sent for a player or the house's hand."""


def _player(name: str) -> Principal:
    return Principal(Role.PLAYER, name)


def _play_turns(app: PokdengApp, round_id: str, senders: Mapping[int, Principal], tag: str, reveal: bool) -> set[int]:
    """Play the round's turns to its close, each hand's choice sent by ``senders[seat]`` (0: the banker's
    hand; its player is the round's banker, None for the house); returns the seats that chose."""
    chose: set[int] = set()
    for i in range(20):
        state = app.round_state(round_id)
        if state.phase is Phase.PLAYER_TURNS:
            seat = state.turn
            assert seat is not None
            holder = state.holder(seat)
            assert holder is not None
            command: Any = (Draw if i % 2 else Stay)(round_id, seat, holder)
            app.handle(senders[seat], f"{tag}-turn-{i}", command)
            chose.add(seat)
        elif state.phase is Phase.BANKER_TURN:
            banker = state.banker_player
            waiting = [s for s in state.in_play if s not in state.revealed]
            if reveal and "banker_reveal" in app.legal_commands(round_id, BANKER) and len(waiting) > 1:
                app.handle(senders[BANKER], f"{tag}-reveal", BankerReveal(round_id, (waiting[0],), banker))
            else:
                app.handle(senders[BANKER], f"{tag}-banker", (BankerDraw if i % 2 else BankerStay)(round_id, banker))
            chose.add(BANKER)
        else:
            assert state.phase is Phase.CLOSED, state.phase
            return chose
    raise AssertionError(f"round {round_id} did not close")


def _chosen(events: Any, seat: int) -> list[Any]:
    """The choices recorded for ``seat`` (draws and stays; seat 0: the banker's)."""
    return [e for e in events if e.kind in DECISION_KINDS and e.data["seat"] == seat and e.data["reason"] == "choice"]


def _verifies(app: PokdengApp, round_id: str) -> dict[str, Any]:
    verdict = audit.verify_round(app, round_id)
    assert verdict.ok, verdict.render()
    bundle: dict[str, Any] = audit.export_bundle(app, round_id)
    offline = audit.verify_bundle(audit.bundle_bytes(bundle))
    assert offline.ok, offline.render()
    return bundle


def test_the_principal_names_itself() -> None:
    assert DESK.actor == "operator:desk-7"
    assert Principal(Role.OPERATOR).actor == "operator"
    assert TURN_CLOCK.actor == "service:turn-clock" and SYSTEM.actor == "service:system"
    assert Principal(Role.PLAYER, player="ann").actor == "player:ann"


def test_a_void_records_who_voided_it(app: PokdengApp) -> None:
    d = Driver(app)
    play.open_wallets(d, ["ann", "ben"])
    play.open_table(d, "t", "classic", [(1, "ann"), (2, "ben")])
    round_id = play.start_round(d, "t")
    play.seat_bets(d, round_id, 100)
    result = app.handle(DESK, "void-1", VoidRound(round_id, "dealer misdeal"))
    voided = result.events[0]
    assert voided.kind == "round_voided" and voided.data["by"] == "operator:desk-7"
    assert voided.data["reason"] == "dealer misdeal"
    bundle = audit.export_bundle(app, round_id)
    assert bundle["decisions"][-1] == {
        "command": "void_round",
        "name": "void_round",
        "reason": "dealer misdeal",
        "by": "operator:desk-7",
    }
    verdict = audit.verify_bundle(audit.bundle_bytes(bundle))
    assert verdict.ok, verdict.render()
    assert audit.verify_round(app, round_id).ok


def test_a_start_and_a_deal_record_who_sent_them(app: PokdengApp) -> None:
    d = Driver(app)
    play.open_wallets(d, ["ann", "ben"])
    play.open_table(d, "t", "classic", [(1, "ann"), (2, "ben")])
    round_id = app.handle(DESK, "start-1", StartRound("t", "desk seed")).id
    opened = _event(app.round_events(round_id), "round_opened")
    assert opened.data["by"] == "operator:desk-7"
    play.seat_bets(d, round_id, 100)
    dealt = app.handle(DESK, "deal-1", Deal(round_id))
    assert [e.kind for e in dealt.events][:2] == ["client_seed_fixed", "cards_dealt"]
    assert dealt.events[1].data["by"] == "operator:desk-7" and "by" not in dealt.events[0].data
    play.drive_round(d, round_id)
    bundle = audit.export_bundle(app, round_id)
    opening = _event(bundle["events"], "round_opened")
    assert opening["data"]["by"] == _event(bundle["events"], "cards_dealt")["data"]["by"] == "operator:desk-7"
    decisions = {x["command"]: x for x in bundle["decisions"]}
    assert decisions["open_round"]["by"] == "operator:desk-7" and decisions["open_round"]["client_seed"] == "desk seed"
    assert decisions["deal"] == {"command": "deal", "name": "deal", "by": "operator:desk-7"}
    verdict = audit.verify_bundle(audit.bundle_bytes(bundle))
    assert verdict.ok, verdict.render()
    assert audit.verify_round(app, round_id).ok
    # the service acting for itself (the CLI, scripts) names itself
    second = play.start_round(d, "t")
    play.seat_bets(d, second, 100)
    d.call("deal", second)
    events = app.round_events(second)
    assert _event(events, "round_opened").data["by"] == _event(events, "cards_dealt").data["by"] == SYSTEM.actor
    play.drive_round(d, second)
    assert audit.verify_round(app, second).ok


def test_an_operator_playing_the_house_banker_hand_is_named_on_its_events(app: PokdengApp) -> None:
    """The house's hand has no player: an operator (here desk-7) sends BankerReveal, BankerDraw and
    BankerStay, and its ``card_drawn``, ``player_stood`` (seat 0) and chosen ``hands_revealed`` name it;
    the players, acting for themselves, are named by the events alone (``by`` empty)."""
    d = Driver(app)
    play.open_wallets(d, ["ann", "ben"])
    play.open_table(d, "t", "classic", [(1, "ann"), (2, "ben")])
    senders = {1: _player("ann"), 2: _player("ben"), BANKER: DESK}
    seen: set[str] = set()
    for n in range(40):  # (until the house chose to draw, to stay, and to reveal: a pok chooses nothing)
        round_id = app.handle(DESK, f"start-{n}", StartRound("t")).id
        for seat in (1, 2):
            app.handle(senders[seat], f"bet-{n}-{seat}", PlaceBet(round_id, seat, senders[seat].player or "", 100))
        app.handle(DESK, f"deal-{n}", Deal(round_id))
        if BANKER not in _play_turns(app, round_id, senders, f"r{n}", reveal=n % 3 == 0):
            continue
        events = app.round_events(round_id)
        banker = _chosen(events, BANKER)
        assert banker and all(e.data["by"] == "operator:desk-7" for e in banker)
        seen.update(e.kind for e in banker)
        reveals = [e for e in _all(events, "hands_revealed") if e.data["selective"]]
        assert all(e.data["by"] == "operator:desk-7" for e in reveals)
        seen.update("reveal" for _ in reveals)
        showdown = [e for e in _all(events, "hands_revealed") if not e.data["selective"]]
        assert all(e.data["by"] == "" for e in showdown)  # (it follows the banker's choice: shares its sender)
        for seat in (1, 2):  # the players sent their own
            assert all(e.data["by"] == "" for e in _chosen(events, seat))
        assert all(e.data["by"] == "" for e in _all(events, "bet_placed"))
        bundle = _verifies(app, round_id)
        for decision in bundle["decisions"]:
            if decision["command"].startswith("banker_"):
                assert decision["by"] == "operator:desk-7" and decision["player"] is None
            elif decision["command"] in ("place_bet", "draw", "stay"):
                assert "by" not in decision
        if {"card_drawn", "player_stood", "reveal"} <= seen:
            return
    raise AssertionError(f"the house chose only {seen} in 40 rounds")


def test_a_player_banker_playing_its_hand_is_not_named_an_operator_for_it_is(app: PokdengApp) -> None:
    """A player-banker's own BankerDraw/BankerStay leaves ``by`` empty; an operator's for it names the
    operator."""
    d = Driver(app)
    play.open_wallets(d, ["ann", "ben", "dan"])
    play.open_table(d, "t", "classic", [(1, "ann"), (2, "ben")], dealer="dan")
    found: dict[str, str] = {}
    for n in range(40):
        sender = _player("dan") if n % 2 else DESK
        round_id = play.start_round(d, "t")
        assert app.round_state(round_id).banker_player == "dan"
        play.seat_bets(d, round_id, 100)
        d.call("deal", round_id)
        if BANKER not in _play_turns(app, round_id, {1: DESK, 2: DESK, BANKER: sender}, f"r{n}", reveal=False):
            continue
        banker = _chosen(app.round_events(round_id), BANKER)
        expected = "" if sender.is_player else "operator:desk-7"
        assert banker and all(e.data["by"] == expected for e in banker)
        found[sender.actor] = expected
        _verifies(app, round_id)
        if len(found) == 2:
            return
    raise AssertionError(f"the banker chose in too few rounds: {found}")


def test_an_operator_betting_contributing_and_drawing_for_a_player_is_named(app: PokdengApp) -> None:
    """desk-7 stakes, contributes and plays for ann (and contributes for the platform); ben plays his own.
    ann's events name desk-7, ben's name no sender; the request fingerprints are the API commands' alone."""
    d = Driver(app)
    play.open_wallets(d, ["ann", "ben"])
    play.open_table(d, "t", "classic", [(1, "ann"), (2, "ben")])
    ben = _player("ben")
    for n in range(40):  # (until both players chose: a pok chooses nothing)
        round_id = app.handle(DESK, f"start-{n}", StartRound("t", "desk seed")).id
        staked = app.handle(DESK, f"bet-ann-{n}", PlaceBet(round_id, 1, "ann", 100, client_seed="ann via desk"))
        assert [(e.kind, e.data["by"]) for e in staked.events] == [
            ("bet_placed", "operator:desk-7"),
            ("client_seed_contributed", ""),  # (a stake's own contribution: bet_placed names its sender)
        ]
        app.handle(ben, f"bet-ben-{n}", PlaceBet(round_id, 2, "ben", 100))
        contributions = [
            (DESK, ContributeSeed(round_id, "ben", "ben via desk"), "operator:desk-7"),
            (ben, ContributeSeed(round_id, "ben", "ben's own"), ""),
            (DESK, ContributeSeed(round_id, None, "the platform's"), "operator:desk-7"),
        ]
        for i, (sender, contribution, by) in enumerate(contributions):
            (event,) = app.handle(sender, f"seed-{n}-{i}", contribution).events
            assert event.kind == "client_seed_contributed" and event.data["by"] == by
        app.handle(DESK, f"deal-{n}", Deal(round_id))
        chose = _play_turns(app, round_id, {1: DESK, 2: ben, BANKER: DESK}, f"r{n}", reveal=False)
        events = app.round_events(round_id)
        opening = _all(events, "client_seed_contributed")[0]
        assert opening.data == {"contributor": "", "client_seed": "desk seed", "by": ""}  # (round_opened's)
        assert [e.data["by"] for e in _all(events, "bet_placed")] == ["operator:desk-7", ""]
        assert all(e.data["by"] == "operator:desk-7" for e in _chosen(events, 1))
        assert all(e.data["by"] == "" for e in _chosen(events, 2))
        bundle = _verifies(app, round_id)
        bets = [x for x in bundle["decisions"] if x["command"] == "place_bet"]
        assert bets[0]["by"] == "operator:desk-7" and "by" not in bets[1]
        if {1, 2} <= chose:
            assert _chosen(events, 1) and _chosen(events, 2)
            break
    else:
        raise AssertionError("no round of 40 had both players choose")
    # the sender is no part of the request: a retry by the desk answers the first result, and the
    # fingerprint is the API command's fields (which have no sender) as it always was
    again = app.handle(DESK, f"bet-ann-{n}", PlaceBet(round_id, 1, "ann", 100, client_seed="ann via desk"))
    assert [e.data for e in again.events] == [e.data for e in staked.events]
    bet = PlaceBet(round_id, 1, "ann", 100, client_seed="ann via desk")
    fields = {"round_id": round_id, "seat": 1, "player": "ann", "stake": 100, "client_seed": "ann via desk"}
    body = orjson.dumps(["place_bet", fields], option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    assert bet.fingerprint() == hashlib.sha256(body).hexdigest()
    for command_type in (PlaceBet, PlaceSideBet, ContributeSeed, Draw, Stay, BankerDraw, BankerStay, BankerReveal):
        assert "by" not in {f.name for f in dataclasses.fields(command_type)}, command_type


def test_timeouts_and_side_bet_closes_record_their_sender(app: PokdengApp) -> None:
    d = Driver(app, chooser=Chooser(random.Random(3), draw=0.0, side_bet=1.0))
    play.open_wallets(d, ["k1", "k2"])
    play.open_table(d, "km", "kingmaker", [(1, "k1"), (2, "k2")])
    for _ in range(300):  # (a side bet window opens on an up card of 8 or 9 only)
        round_id = play.start_round(d, "km")
        play.seat_bets(d, round_id, 200)
        app.handle(DESK, f"deal-{round_id}", Deal(round_id))
        if app.round_state(round_id).phase is not Phase.SIDE_BETS:
            play.drive_round(d, round_id)
            continue
        d.call("place_side_bet", round_id, 1, "k1")  # (the service for k1)
        app.handle(_player("k2"), f"side-{round_id}", PlaceSideBet(round_id, 2, "k2"))  # (k2's own)
        app.handle(DESK, f"close-{round_id}", CloseSideBets(round_id))
        if app.round_state(round_id).phase is not Phase.PLAYER_TURNS:
            play.drive_round(d, round_id)
            continue
        app.handle(TURN_CLOCK, f"timeout:{round_id}", TimeOutTurn(round_id))
        play.drive_round(d, round_id)
        events = audit.export_bundle(app, round_id)["events"]
        closed = next(e for e in events if e["kind"] == "side_bets_settled")
        timed_out = next(e for e in events if e["kind"] == "turn_timed_out")
        assert closed["data"]["by"] == "operator:desk-7"
        assert timed_out["data"]["by"] == "service:turn-clock"
        sides = [e["data"] for e in events if e["kind"] == "side_bet_placed"]
        assert [(x["player"], x["by"]) for x in sides] == [("k1", "service:system"), ("k2", "")]
        drawn = next(e for e in events if e["position"] == timed_out["position"] + 1)
        assert drawn["data"]["reason"] == "timeout" and drawn["data"]["by"] == ""  # (turn_timed_out names it)
        assert audit.verify_round(app, round_id).ok
        assert audit.verify_bundle(audit.bundle_bytes(audit.export_bundle(app, round_id))).ok
        return
    raise AssertionError("no round reached the player turns after its side bets")


def test_records_made_before_the_sender_was_recorded_still_verify() -> None:
    raw = (LEGACY / "kingmaker-voided-1.0.0.json").read_bytes()
    voided = next(e for e in json.loads(raw)["events"] if e["kind"] == "round_voided")
    assert "by" not in voided["data"]
    verdict = audit.verify_bundle(raw)
    assert verdict.ok, verdict.render()
    settled = (LEGACY / "kingmaker-settled-1.0.0.json").read_bytes()
    for kind in ("round_opened", "cards_dealt"):  # nor do their start and deal name theirs
        assert "by" not in next(e for e in json.loads(settled)["events"] if e["kind"] == kind)["data"]
    verdict = audit.verify_bundle(settled)
    assert verdict.ok, verdict.render()
    for raw in (settled, (LEGACY / "worked-round-1.1.0.json").read_bytes()):  # nor their players' decisions
        events = json.loads(raw)["events"]
        assert {e["kind"] for e in events} >= {"bet_placed", "card_drawn", "hands_revealed"}
        assert all("by" not in e["data"] for e in events if e["kind"] in NEW_KINDS)


def test_bundles_made_before_the_start_and_deal_named_their_sender_still_verify() -> None:
    """The worked example of docs/audit.md as published before ``round_opened.by`` and ``cards_dealt.by``
    (engine 1.1.0, contributions, a signed head): it verifies as it did, with the service and the script."""
    raw = (LEGACY / "worked-round-1.1.0.json").read_bytes()
    bundle = json.loads(raw)
    for kind in ("round_opened", "cards_dealt"):
        assert "by" not in _event(bundle["events"], kind)["data"]
    assert all("by" not in decision for decision in bundle["decisions"])
    verdict = audit.verify_bundle(raw, PublicKeys([bytes.fromhex(TEST_KEY)]))
    assert verdict.status == "PASS", verdict.render()
    assert [w[:18] for w in verdict.warnings] == ["format version 1: "], verdict.render()  # (docs/audit.md, Versions)
    script = worked_round()
    public = bytes.fromhex(TEST_KEY)
    assert script.verify(raw, {script.key_id(public): public}).ok


def test_rounds_stored_before_the_start_and_deal_named_their_sender_still_verify(
    app: PokdengApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rounds stored by the code of before (no ``by`` in their round_opened and cards_dealt payloads),
    one still open when the code changes, read, replay and verify live and offline."""
    from pokdeng_service.store.codec import to_data as recorded

    def as_before(event: Any) -> dict[str, Any]:
        data: dict[str, Any] = recorded(event)
        if event.kind in ("round_opened", "cards_dealt"):
            del data["by"]
        return data

    d = Driver(app)
    play.open_wallets(d, ["ann", "ben"])
    play.open_table(d, "t", "classic", [(1, "ann"), (2, "ben")])
    with monkeypatch.context() as before:
        before.setattr("pokdeng_service.store.aggregates.to_data", as_before)  # (what the store records)
        finished = app.handle(DESK, "start-old", StartRound("t")).id
        play.seat_bets(d, finished, 100)
        app.handle(DESK, "deal-old", Deal(finished))
        play.drive_round(d, finished)
        still_open = app.handle(DESK, "start-open", StartRound("t")).id
        play.seat_bets(d, still_open, 100)
    app.handle(DESK, "deal-new", Deal(still_open))  # dealt by this code: its deal names the sender
    play.drive_round(d, still_open)
    for round_id in (finished, still_open):
        view = app.get_round(round_id)
        assert "by" not in _event(view.events, "round_opened").data
        verdict = audit.verify_round(app, round_id)
        assert verdict.ok, verdict.render()
        bundle = audit.export_bundle(app, round_id)
        assert "by" not in next(x for x in bundle["decisions"] if x["command"] == "open_round")
        offline = audit.verify_bundle(audit.bundle_bytes(bundle))
        assert offline.ok, offline.render()
    assert "by" not in _event(app.round_events(finished), "cards_dealt").data
    assert {"command": "deal", "name": "deal"} in audit.export_bundle(app, finished)["decisions"]
    assert _event(app.round_events(still_open), "cards_dealt").data["by"] == "operator:desk-7"


def test_rounds_stored_before_decisions_named_their_sender_still_verify(
    app: PokdengApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rounds stored by the code of before (its start and deal name their sender; its bets, contributions,
    draws, stays and reveals have no ``by``), one still open when the code changes, read, replay and
    verify live and offline; what this code adds to the open one names its sender."""
    from pokdeng_service.store.codec import to_data as recorded

    def as_before(event: Any) -> dict[str, Any]:
        data: dict[str, Any] = recorded(event)
        if event.kind in NEW_KINDS:
            del data["by"]
        return data

    d = Driver(app)
    play.open_wallets(d, ["ann", "ben"])
    play.open_table(d, "t", "classic", [(1, "ann"), (2, "ben")])
    senders = {1: DESK, 2: DESK, BANKER: DESK}
    rounds: list[str] = []
    with monkeypatch.context() as before:
        before.setattr("pokdeng_service.store.aggregates.to_data", as_before)  # (what the store records)
        for n in range(3):
            round_id = app.handle(DESK, f"old-start-{n}", StartRound("t", "desk seed")).id
            rounds.append(round_id)
            app.handle(DESK, f"old-bet-{n}", PlaceBet(round_id, 1, "ann", 100, client_seed="ann via desk"))
            app.handle(DESK, f"old-seed-{n}", ContributeSeed(round_id, None, "the platform's"))
            if n == 2:
                break  # (still open when the code changes)
            app.handle(DESK, f"old-bet-ben-{n}", PlaceBet(round_id, 2, "ben", 100))
            app.handle(DESK, f"old-deal-{n}", Deal(round_id))
            _play_turns(app, round_id, senders, f"old-{n}", reveal=n == 0)
    still_open = rounds[-1]
    app.handle(DESK, "new-bet-ben", PlaceBet(still_open, 2, "ben", 100))  # by this code: it names desk-7
    app.handle(DESK, "new-deal", Deal(still_open))
    _play_turns(app, still_open, senders, "new", reveal=True)
    for round_id in rounds:
        view = app.get_round(round_id)
        stored = [e for e in view.events if e.kind in NEW_KINDS]
        old = [e for e in stored if e.command_id.startswith("old-")]
        assert old and all("by" not in e.data for e in old)
        assert all("by" in e.data for e in stored if not e.command_id.startswith("old-"))
        bundle = _verifies(app, round_id)
        sent = ["by" in x for x in bundle["decisions"] if x["command"] not in ("open_round", "deal")]
        if round_id != still_open:
            assert not any(sent)  # (their decisions are as they were)
        else:  # ann's stake and the platform's seed were recorded before; ben's stake and the turns after
            assert sent[:2] == [False, False] and all(sent[2:]) and len(sent) > 2
    new = [e for e in app.round_events(still_open) if e.command_id.startswith("new-") and e.kind in NEW_KINDS]
    assert _all(new, "bet_placed")[0].data["by"] == "operator:desk-7"
    choices = [e for e in new if e.kind in DECISION_KINDS and e.data["reason"] == "choice"]
    assert all(e.data["by"] == "operator:desk-7" for e in choices)
