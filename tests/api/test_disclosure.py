"""Least disclosure over gRPC: a player's bundle of a shared round carries its own balances only (and
still verifies offline); its refused bet does not show the backer's funds; operators see everything."""

from __future__ import annotations

import hashlib
import json

import grpc

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_service import audit
from pokdeng_service.api.errors import details_of

from .client import Choices, bet, error_of, open_table, open_wallets, play_round, seat, start_round
from .conftest import Served


def test_a_players_bundle_and_refusals_show_only_its_own_money(local: Served) -> None:
    import random

    ops, alice, bob = local.api("operator"), local.api("alice"), local.api("bob")
    open_wallets(ops, {"alice": 100_000, "bob": 100_000, "dave": 1_500})
    open_table(ops, "t", pb.PROFILE_CLASSIC, seats=4, dealer="dave")
    seat(alice, "t", "alice", 1)
    seat(bob, "t", "bob", 2)
    round_id = start_round(ops, "t").round_id
    refused = error_of(lambda: bet(alice, round_id, 1, "alice", 1000))  # the backer covers 1,500 only
    details = details_of(refused)
    assert details.code == grpc.StatusCode.FAILED_PRECONDITION and details.reason == "INSUFFICIENT_FUNDS"
    assert "1500" not in details.message and "available" not in (details.metadata or {})
    bet(alice, round_id, 1, "alice", 100)
    bet(bob, round_id, 2, "bob", 100)
    play_round(ops, local.players(), round_id, Choices(random.Random(1)))
    mine = alice.get("AuditService", "ExportRound", pb.ExportRoundRequest(round_id=round_id))
    everything = ops.get("AuditService", "ExportRound", pb.ExportRoundRequest(round_id=round_id))
    assert {b["wallet"] for b in json.loads(mine.bundle_json)["balances"]} == {"alice"}
    assert {b["wallet"] for b in json.loads(everything.bundle_json)["balances"]} >= {"alice", "bob", "dave"}
    assert "bob" not in json.dumps(json.loads(mine.bundle_json)["balances"])
    assert audit.verify_bundle(mine.bundle_json.encode()).ok
    assert audit.verify_bundle(everything.bundle_json.encode()).ok
    # each says whom it was made for, inside its digest: a player's cannot pass for the operator's (docs/audit.md)
    audited = local.api("auditor").get("AuditService", "ExportRound", pb.ExportRoundRequest(round_id=round_id))
    made_for = {json.loads(b.bundle_json)["made_for"] for b in (mine, everything, audited)}
    assert made_for == {"player:alice", "operator", "auditor"}
    assert json.loads(audited.bundle_json)["balances"] == json.loads(everything.bundle_json)["balances"]
    relabelled = json.loads(mine.bundle_json)
    relabelled["made_for"] = "operator"
    body = {k: v for k, v in relabelled.items() if k != "bundle_digest"}
    relabelled["bundle_digest"] = hashlib.sha256(audit.bundle_bytes(body)[:-1]).hexdigest()
    verdict = audit.verify_bundle(audit.bundle_bytes(relabelled))
    assert verdict.status == "FAIL" and verdict.first_difference.startswith("balances"), verdict.render()
