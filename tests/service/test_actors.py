"""Operator commands name their sender in the record: ``round_opened.by``, ``cards_dealt.by``,
``round_voided.by``, ``turn_timed_out.by`` and ``side_bets_settled.by`` (docs/events.md). Records made
before these fields replay as they were."""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path
from typing import Any

import pytest

from pokdeng_core.machine import Phase
from pokdeng_service import audit
from pokdeng_service.application import PokdengApp
from pokdeng_service.application.commands import CloseSideBets, Deal, StartRound, TimeOutTurn, VoidRound
from pokdeng_service.application.principal import SYSTEM, TURN_CLOCK, Principal, Role
from pokdeng_service.store.signing import PublicKeys

from . import play
from .play import Chooser, Driver

DESK = Principal(Role.OPERATOR, name="desk-7")
LEGACY = Path(__file__).parent / "legacy"
ROOT = Path(__file__).resolve().parents[2]
TEST_KEY = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"  # the worked example's (public)


def _event(events: Any, kind: str) -> Any:
    return next(e for e in events if (e["kind"] if isinstance(e, dict) else e.kind) == kind)


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
    bundle = app.export_bundle(round_id)
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
    bundle = app.export_bundle(round_id)
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
        d.call("place_side_bet", round_id, 1, "k1")
        app.handle(DESK, f"close-{round_id}", CloseSideBets(round_id))
        if app.round_state(round_id).phase is not Phase.PLAYER_TURNS:
            play.drive_round(d, round_id)
            continue
        app.handle(TURN_CLOCK, f"timeout:{round_id}", TimeOutTurn(round_id))
        play.drive_round(d, round_id)
        events = app.export_bundle(round_id)["events"]
        closed = next(e for e in events if e["kind"] == "side_bets_settled")
        timed_out = next(e for e in events if e["kind"] == "turn_timed_out")
        assert closed["data"]["by"] == "operator:desk-7"
        assert timed_out["data"]["by"] == "service:turn-clock"
        assert audit.verify_round(app, round_id).ok
        assert audit.verify_bundle(audit.bundle_bytes(app.export_bundle(round_id))).ok
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


def test_bundles_made_before_the_start_and_deal_named_their_sender_still_verify() -> None:
    """The worked example of docs/audit.md as published before ``round_opened.by`` and ``cards_dealt.by``
    (engine 1.1.0, contributions, a signed head): it verifies as it did, with the service and the script."""
    raw = (LEGACY / "worked-round-1.1.0.json").read_bytes()
    bundle = json.loads(raw)
    for kind in ("round_opened", "cards_dealt"):
        assert "by" not in _event(bundle["events"], kind)["data"]
    assert all("by" not in decision for decision in bundle["decisions"])
    verdict = audit.verify_bundle(raw, PublicKeys([bytes.fromhex(TEST_KEY)]))
    assert verdict.ok and not verdict.warnings, verdict.render()
    spec = importlib.util.spec_from_file_location("worked_round_for_actors", ROOT / "docs/examples/worked_round.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
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
        bundle = app.export_bundle(round_id)
        assert "by" not in next(x for x in bundle["decisions"] if x["command"] == "open_round")
        offline = audit.verify_bundle(audit.bundle_bytes(bundle))
        assert offline.ok, offline.render()
    assert "by" not in _event(app.round_events(finished), "cards_dealt").data
    assert {"command": "deal", "name": "deal"} in app.export_bundle(finished)["decisions"]
    assert _event(app.round_events(still_open), "cards_dealt").data["by"] == "operator:desk-7"
