"""Operator commands name their sender in the record: ``round_voided.by``, ``turn_timed_out.by`` and
``side_bets_settled.by`` (docs/events.md). Records made before these fields replay as they were."""

from __future__ import annotations

import json
import random
from pathlib import Path

from pokdeng_core.machine import Phase
from pokdeng_service import audit
from pokdeng_service.application import PokdengApp
from pokdeng_service.application.commands import CloseSideBets, Deal, TimeOutTurn, VoidRound
from pokdeng_service.application.principal import SYSTEM, TURN_CLOCK, Principal, Role

from . import play
from .play import Chooser, Driver

DESK = Principal(Role.OPERATOR, name="desk-7")
LEGACY = Path(__file__).parent / "legacy"


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
