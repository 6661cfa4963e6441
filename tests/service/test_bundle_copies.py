"""A bundle restates what its events say (payouts, settlement, decisions, seeds, profile, times, chain
ends): an offline verification computes each again from the events and refuses a bundle whose copy
differs, even with its bundle digest recomputed."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import pytest

from pokdeng_service import audit
from pokdeng_service.application import PokdengApp
from pokdeng_service.store.codec import canonical_json

from . import play


def _redigest(bundle: dict[str, Any]) -> bytes:
    body = {k: v for k, v in bundle.items() if k != "bundle_digest"}
    bundle["bundle_digest"] = hashlib.sha256(canonical_json(body).encode()).hexdigest()
    return audit.bundle_bytes(bundle)


EDITS: dict[str, Callable[[dict[str, Any]], None]] = {
    "a payout": lambda b: b["payouts"][0].update(net=b["payouts"][0]["net"] + 100),
    "the settlement": lambda b: b["settlement"].update(house_net=b["settlement"]["house_net"] + 1),
    "a decision": lambda b: b["decisions"].pop(),
    "the profile": lambda b: b["profile"].update(version=b["profile"]["version"] + 1),
    "the engine": lambda b: b.update(engine_version="0.0.1"),
    "the table": lambda b: b.update(table_id="elsewhere"),
    "the times": lambda b: b["times"].update(closed="2020-01-01T00:00:00+00:00"),
    "the genesis": lambda b: b["chain"].update(genesis="00" * 32),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_a_restated_field_that_differs_from_the_events_fails(app: PokdengApp, driver: play.Driver, edit: str) -> None:
    play.open_wallets(driver, ["a", "b"])
    play.open_table(driver, "t", "classic", [(1, "a"), (2, "b")])
    round_id = play.start_round(driver, "t")
    play.seat_bets(driver, round_id, 100)
    play.drive_round(driver, round_id)
    bundle = app.export_bundle(round_id)
    assert audit.verify_bundle(audit.bundle_bytes(bundle)).ok
    forged = json.loads(audit.bundle_bytes(bundle))  # a file: its copies are its own (no shared objects)
    EDITS[edit](forged)
    verdict = audit.verify_bundle(_redigest(forged))
    assert not verdict.ok and verdict.first_difference.startswith("copies"), verdict.render()
