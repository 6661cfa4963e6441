"""Round bundles: export one closed round as a self-contained document, and verify it offline.

A *round bundle* (docs/audit.md) is a canonical JSON document: the round's seeds and deck
order, decisions, payouts, settlement, wallet balances, stored events, chain ends and
checkpoint inclusion proof, with a digest of it all. ``export_bundle`` reads it from an
application; ``verify_bundle`` checks one with no server and no database.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pokdeng_core import commands as rc
from pokdeng_core import events as re
from pokdeng_core.errors import DomainError
from pokdeng_core.shuffle import SHUFFLE_ALGORITHM, commitment, shuffled_deck
from pokdeng_service.application.views import RecordedEvent
from pokdeng_service.audit.live import AuditedRecord, wallet_settlement
from pokdeng_service.audit.replay import _facts, _json, check_chain, check_money, check_replay, decisions, revealed_seed
from pokdeng_service.audit.verdicts import Verdict
from pokdeng_service.store import merkle
from pokdeng_service.store.codec import CHAIN_VERSION, canonical_json, genesis_digest
from pokdeng_service.store.facts import Recorded

BUNDLE_FORMAT = "pokdeng-round-bundle"
BUNDLE_VERSION = 1


def export_bundle(app: AuditedRecord, round_id: str) -> dict[str, Any]:
    """A self-contained record of one closed round (docs/audit.md)."""
    state = app.round_state(round_id)
    if not state.is_closed:
        raise DomainError(f"round {round_id} is still open: bundles are for closed rounds (the seed is secret)")
    events = list(app.round_events(round_id))
    facts = _facts(events)
    seed = revealed_seed(facts)
    profile = state.rules
    deck = shuffled_deck(seed, state.client_seed, state.nonce, profile.decks) if seed else ()
    settled = next((e.data for e in facts if e.kind == re.RoundSettled.kind), None)
    balances = []
    if settled is not None:
        for player, _reserved, net in settled["wallets"]:
            after = _balance_after(app, player, round_id)
            if after is not None:
                balances.append({"wallet": player, "before": after - net, "after": after, "net": net})
    body: dict[str, Any] = {
        "format": BUNDLE_FORMAT,
        "format_version": BUNDLE_VERSION,
        "round_id": round_id,
        "table_id": state.table_id,
        "round_no": state.round_no,
        "profile": {"name": profile.name, "version": profile.version, "options": profile.options},
        "engine_version": facts[0].data.get("engine_version", "") if facts else "",
        "shuffle": {
            "algorithm": SHUFFLE_ALGORITHM,
            "commitment": state.commitment,
            "server_seed": state.server_seed,
            "client_seed": state.client_seed,
            "nonce": state.nonce,
            "decks": profile.decks,
            "deck_order": [str(c) for c in deck],
        },
        "decisions": [_decision_text(c) for c in decisions(events)],
        "payouts": [e.data for e in facts if e.kind == re.BetSettled.kind],
        "settlement": settled,
        "balances": balances,
        "times": {"opened": facts[0].timestamp, "closed": facts[-1].timestamp},
        "events": [_event_dict(e) for e in facts],
        "chain": {"version": CHAIN_VERSION, "genesis": genesis_digest(round_id), "last": facts[-1].digest},
        "inclusion": app.inclusion_proof(round_id),
    }
    body["bundle_digest"] = hashlib.sha256(canonical_json(body).encode()).hexdigest()
    return body


def _event_dict(event: Recorded) -> dict[str, Any]:
    return {
        "position": event.position,
        "kind": event.kind,
        "data": event.data,
        "command_id": event.command_id,
        "timestamp": event.timestamp,
        "digest": event.digest,
    }


def _balance_after(app: AuditedRecord, wallet_id: str, round_id: str) -> int | None:
    applied = wallet_settlement(app, wallet_id, round_id)
    return None if applied is None else applied[1]


def _decision_text(command: rc.RoundCommand) -> dict[str, Any]:
    fields = {k: getattr(command, k) for k in getattr(command, "__dataclass_fields__", {})}
    if "profile" in fields:
        profile = fields.pop("profile")
        fields["profile"] = profile.key
    return {"command": command.name, **_json({k: v for k, v in fields.items()})}


def bundle_bytes(bundle: dict[str, Any]) -> bytes:
    """The one byte form of a bundle: canonical JSON and a newline."""
    return (canonical_json(bundle) + "\n").encode()


def verify_bundle(raw: bytes) -> Verdict:
    """Check a bundle offline: form, digest, commitment, shuffle, chain, replay and money."""
    verdict = Verdict("bundle")
    try:
        bundle = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as error:
        verdict.add("form", False, f"not JSON: {error}")
        return verdict
    if not isinstance(bundle, dict) or bundle.get("format") != BUNDLE_FORMAT:
        verdict.add("form", False, "not a pokdeng round bundle")
        return verdict
    verdict.subject = f"bundle of round {bundle.get('round_id')}"
    if not verdict.add("form", raw == bundle_bytes(bundle), "canonical JSON, as exported"):
        return verdict
    body = {k: v for k, v in bundle.items() if k != "bundle_digest"}
    digest = hashlib.sha256(canonical_json(body).encode()).hexdigest()
    if not verdict.add("bundle digest", digest == bundle.get("bundle_digest"), "SHA-256 of the bundle body"):
        return verdict
    try:
        events = [RecordedEvent(**e) for e in bundle["events"]]
        shuffle = bundle["shuffle"]
        seed = bytes.fromhex(shuffle["server_seed"])
        verdict.add("commitment", commitment(seed) == shuffle["commitment"], "SHA-256 of the server seed")
        deck = [str(c) for c in shuffled_deck(seed, shuffle["client_seed"], shuffle["nonce"], shuffle["decks"])]
        verdict.add("shuffle", deck == shuffle["deck_order"], f"{len(deck)} cards from {shuffle['algorithm']}")
        last = check_chain(verdict, bundle["round_id"], events)
        verdict.add("chain end", last == bundle["chain"]["last"], "the last digest matches the bundle's")
        check_replay(verdict, events, seed)
        nets = check_money(verdict, events)
        inclusion = bundle.get("inclusion")
        if inclusion is not None:
            leaf = merkle.leaf_hash(bundle["round_id"], bundle["chain"]["last"])
            proven = leaf.hex() == inclusion["leaf"] and merkle.verify_inclusion(
                leaf,
                inclusion["index"],
                inclusion["size"],
                [bytes.fromhex(h) for h in inclusion["path"]],
                bytes.fromhex(inclusion["root"]),
            )
            verdict.add("inclusion", proven, f"in checkpoint {inclusion['period']!r} of table {inclusion['table_id']}")
        balances_ok = all(b["after"] - b["before"] == nets.get(b["wallet"]) for b in bundle["balances"])
        verdict.add("balances", balances_ok, "every wallet's after = before + net")
    except (KeyError, TypeError, ValueError) as error:
        verdict.add("form", False, f"missing or malformed field: {error}")
    return verdict
