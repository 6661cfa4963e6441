"""Round bundles: export one closed round as a self-contained document, and verify it offline.

A *round bundle* (docs/audit.md) is a canonical JSON document: the round's seeds and deck
order, decisions, payouts, settlement, wallet balances, stored events, chain ends and
checkpoint inclusion proof, the store log's signed tree head that covers the round with the
round's inclusion proof under it (``log``, docs/checkpoints.md), with a digest of it all.
``export_bundle`` reads it from an
application; ``verify_bundle`` checks one with no server and no database.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from pokdeng_core import commands as rc
from pokdeng_core import events as re
from pokdeng_core.errors import DomainError
from pokdeng_core.machine import RoundState, evolve
from pokdeng_core.shuffle import SHUFFLE_ALGORITHM, commitment, shuffled_deck
from pokdeng_service.audit.anchors import check_anchor
from pokdeng_service.audit.replay import (
    as_json,
    check_chain,
    check_money,
    check_replay,
    core_facts,
    decisions,
    recorded_client_seed,
    revealed_seed,
    voided_without_seed,
)
from pokdeng_service.audit.verdicts import Verdict
from pokdeng_service.store import merkle
from pokdeng_service.store.codec import (
    CHAIN_VERSION,
    canonical_json,
    field_names,
    from_data,
    genesis_digest,
)
from pokdeng_service.store.facts import Recorded, RecordedEvent
from pokdeng_service.store.signing import HEAD_FIELDS, PublicKeys
from pokdeng_service.version import BUNDLE_FORMAT as BUNDLE_FORMAT  # (the format's one place, re-exported)
from pokdeng_service.version import BUNDLE_VERSION as BUNDLE_VERSION

if TYPE_CHECKING:  # (what export reads of a store: verify_bundle, offline, loads none of it)
    from pokdeng_service.audit.live import AuditedRecord


def _log_anchor(app: AuditedRecord, round_id: str) -> dict[str, Any] | None:
    """The latest signed head of the store's log covering the round, with its inclusion proof
    (``LogQueries.log_anchor``); None for a record without a log."""
    anchor = getattr(app, "log_anchor", None)
    return None if anchor is None else cast(dict[str, Any] | None, anchor(round_id))


def export_bundle(app: AuditedRecord, round_id: str) -> dict[str, Any]:
    """A self-contained record of one closed round (docs/audit.md)."""
    state = app.round_state(round_id)
    if not state.is_closed:
        raise DomainError(f"round {round_id} is still open: bundles are for closed rounds (the seed is secret)")
    events = list(app.round_events(round_id))
    problem = _chain_problem(round_id, events) or _pin_problem(app, round_id, events, state)
    if problem is not None:  # (read afresh: a running server's cached round may hide an edit of its rows)
        from pokdeng_service.application.errors import stream_forged
        from pokdeng_service.store.aggregates import round_uuid

        raise stream_forged("round", round_id, round_uuid(round_id), problem)
    facts = core_facts(events)
    copies = restated(round_id, facts, state)
    balances = []
    if copies["settlement"] is not None:
        for player, _reserved, net in copies["settlement"]["wallets"]:
            after = _balance_after(app, player, round_id)
            if after is not None:
                balances.append({"wallet": player, "before": after - net, "after": after, "net": net})
    body: dict[str, Any] = {
        "format": BUNDLE_FORMAT,
        "format_version": BUNDLE_VERSION,
        "round_id": round_id,
        **copies,
        "balances": balances,
        "events": [_event_dict(e) for e in facts],
        "inclusion": app.inclusion_proof(round_id),
        "log": _log_anchor(app, round_id),
    }
    body["bundle_digest"] = hashlib.sha256(canonical_json(body).encode()).hexdigest()
    return {k: body[k] for k in _ORDER if k in body}


def _chain_problem(round_id: str, events: Sequence[RecordedEvent]) -> str | None:
    """What breaks the round's stored events as a chain (``replay.check_chain``, as ``verify`` checks it), or
    None: a bundle is never made of events that do not chain."""
    checked = Verdict(round_id)
    try:
        check_chain(checked, round_id, events)
    except (TypeError, ValueError) as error:  # (a payload that cannot be digested)
        return f"the stream does not continue the hash chain ({error})"
    return None if checked.ok else f"the stream does not continue the hash chain ({checked.first_difference})"


def _pin_problem(app: AuditedRecord, round_id: str, events: Sequence[RecordedEvent], state: RoundState) -> str | None:
    """Whether the round's table pins its close (its ``round_finished`` names the round's last digest), or what
    is wrong: a bundle is evidence of a round its table played (found from the outside: a round copied under
    another id, with its chain recomputed, was exported)."""
    from pokdeng_service.audit.table_pins import table_finish

    finished = table_finish(app, state.table_id, round_id, state.round_no)
    if finished is None:
        return f"table {state.table_id!r} never finished round {round_id}"
    if finished.data.get("round_digest") != events[-1].digest:
        return f"table {state.table_id!r} pins another last digest of round {round_id}"
    return None


# The bundle's fields in their documented order (canonical JSON sorts them anyway).
_ORDER = (
    "format",
    "format_version",
    "round_id",
    "table_id",
    "round_no",
    "profile",
    "engine_version",
    "shuffle",
    "decisions",
    "payouts",
    "settlement",
    "balances",
    "times",
    "events",
    "chain",
    "inclusion",
    "log",
    "bundle_digest",
)


def restated(round_id: str, facts: Sequence[Recorded], state: RoundState | None = None) -> dict[str, Any]:
    """What a bundle restates from its round's events, computed from those events alone: the table,
    round number, profile, engine, shuffle (seeds, contributions, deck order), decisions, payouts,
    settlement, times and chain ends. An offline verifier computes the same and compares."""
    if state is None:
        state = RoundState()
        for fact in facts:
            state = evolve(state, from_data(re.EVENT_BY_KIND[fact.kind], fact.data))
    seed = revealed_seed(facts)
    profile = state.rules
    fixed = seed is not None and state.seed_fixed  # (voided before a deal that fixes the client seed: no shoe)
    deck = shuffled_deck(seed, state.client_seed, state.nonce, profile.decks) if seed is not None and fixed else ()
    return {
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
            **_contributions(state.client_seed_rule, state.contributions),
        },
        "decisions": [_decision_text(c) for c in decisions(facts)],
        "payouts": [e.data for e in facts if e.kind == re.BetSettled.kind],
        "settlement": next((e.data for e in facts if e.kind == re.RoundSettled.kind), None),
        "times": {"opened": facts[0].timestamp, "closed": facts[-1].timestamp},
        "chain": {"version": CHAIN_VERSION, "genesis": genesis_digest(round_id), "last": facts[-1].digest},
    }


def _contributions(rule: str, contributions: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    """A round with contributions: its rule and the contributions (as fixed at the deal, else the last
    ones). Nothing for a round whose client seed was given at the opening (its bundle is as it was)."""
    if not rule:
        return {}
    return {"client_seed_rule": rule, "contributions": [list(pair) for pair in contributions]}


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
    from pokdeng_service.audit.live import wallet_settlement

    applied = wallet_settlement(app, wallet_id, round_id)
    return None if applied is None else applied[1]


def _decision_text(command: rc.RoundCommand) -> dict[str, Any]:
    fields = {k: getattr(command, k) for k in getattr(command, "__dataclass_fields__", {})}
    if "profile" in fields:
        profile = fields.pop("profile")
        fields["profile"] = profile.key
    if fields.get("client_seed_rule") == "" or (isinstance(command, rc.PlaceBet) and command.client_seed is None):
        fields.pop("client_seed_rule" if isinstance(command, rc.OpenRound) else "client_seed")  # (as before 1.1.0)
    if fields.get("by") == "":
        fields.pop("by")  # (a record made before operator commands named their sender)
    if isinstance(command, rc.OpenRound) and fields.get("currency") == "THB":
        fields.pop("currency")  # the default (and every round opened before currencies)
    return {"command": command.name, **as_json({k: v for k, v in fields.items()})}


def bundle_bytes(bundle: dict[str, Any]) -> bytes:
    """The one byte form of a bundle: canonical JSON and a newline."""
    return (canonical_json(bundle) + "\n").encode()


def _check_shuffle(verdict: Verdict, shuffle: dict[str, Any], seed: bytes, recorded: str | None) -> None:
    """The deck order from the bundle's seeds, and its client seed the one the events fixed
    (``recorded``: None when no client seed was fixed, a round voided before its deal: no deck)."""
    if recorded is None:
        empty = shuffle["deck_order"] == [] and shuffle["client_seed"] == ""
        verdict.add("shuffle", empty, "no client seed was fixed (voided before the deal): no deck")
        return
    if not verdict.add("shuffle seed", shuffle["client_seed"] == recorded, "the client seed the events fixed"):
        return
    deck = [str(c) for c in shuffled_deck(seed, shuffle["client_seed"], shuffle["nonce"], shuffle["decks"])]
    verdict.add("shuffle", deck == shuffle["deck_order"], f"{len(deck)} cards from {shuffle['algorithm']}")


_EVENT_FIELDS = {"position", "kind", "data", "command_id", "timestamp", "digest"}
_BALANCE_FIELDS = {"wallet", "before", "after", "net"}
_INCLUSION_FIELDS = {
    "table_id", "period", "checkpoint_position", "checkpoint_digest", "root", "size", "index", "leaf", "path",
}  # fmt: skip
_LOG_FIELDS = {"index", "leaf", "path", "head"}
_HEAD_FIELDS = {"format", "format_version", *HEAD_FIELDS}


def data_problem(kind: str, data: Any) -> str | None:
    """What is wrong with the members of an event's ``data`` (docs/events.md), or None: exactly the
    fields of its kind's core event, of which only the fields added with a default after rounds were
    recorded without them (``events.ADDED_FIELDS``: ``by``, ``currency``) may be absent."""
    if not isinstance(data, dict):
        return "data is not an object"
    fields = set(field_names(re.EVENT_BY_KIND[kind]))
    unknown, missing = set(data) - fields, fields - set(data) - set(re.ADDED_FIELDS.get(kind, {}))
    if unknown:
        return f"data with members {sorted(unknown)} that {kind} does not have"
    if missing:
        return f"data without {sorted(missing)}"
    return None


def shape_problem(bundle: dict[str, Any]) -> str | None:
    """What is not of the documented form (docs/audit.md, "The bundle"), or None: exactly the documented
    fields (``inclusion`` and ``log`` may be null, or absent from bundles made before them), format
    version 1, every event of a known kind after the stream's creation with exactly its kind's data
    fields (``data_problem``), each wallet once in ``balances`` with ``net`` = ``after`` - ``before``,
    and the checkpoint's table the round's. Nothing may ride along that no check reads (what the
    bundle restates from its events, ``decisions``, ``shuffle``, ``chain`` and the rest, is compared
    whole by the copies check)."""
    fields = set(bundle)
    missing, unknown = set(_ORDER) - {"inclusion", "log"} - fields, fields - set(_ORDER)
    if missing or unknown:
        return f"fields missing {sorted(missing)} or unknown {sorted(unknown)}"
    if bundle["format_version"] != BUNDLE_VERSION:
        return f"format_version {bundle['format_version']!r}: this verifier reads version {BUNDLE_VERSION}"
    for event in bundle["events"]:
        if not isinstance(event, dict) or set(event) != _EVENT_FIELDS:
            return f"an event with the fields {sorted(event) if isinstance(event, dict) else event!r}"
        if event["kind"] not in re.EVENT_BY_KIND or not isinstance(event["position"], int) or event["position"] < 2:
            return f"event {event['position']!r} of kind {event['kind']!r} is not a round's recorded event"
        problem = data_problem(event["kind"], event["data"])
        if problem is not None:
            return f"event {event['position']} ({event['kind']}): {problem}"
    wallets = [b.get("wallet") if isinstance(b, dict) else None for b in bundle["balances"]]
    if len(set(wallets)) != len(wallets):
        return "a wallet appears more than once in balances"
    for balance in bundle["balances"]:
        if set(balance) != _BALANCE_FIELDS or balance["net"] != balance["after"] - balance["before"]:
            return (
                f"balances of {balance.get('wallet')!r}: not {{wallet, before, after, net}} with net = after - before"
            )
    inclusion, log = bundle.get("inclusion"), bundle.get("log")
    if inclusion is not None and (not isinstance(inclusion, dict) or set(inclusion) != _INCLUSION_FIELDS):
        return "inclusion: not the documented fields"
    if inclusion is not None and inclusion["table_id"] != bundle["table_id"]:
        return f"inclusion: a checkpoint of table {inclusion['table_id']!r}, not the round's {bundle['table_id']!r}"
    if (
        log is not None and (not isinstance(log, dict) or set(log) != _LOG_FIELDS or not isinstance(log["head"], dict))
    ) or (log is not None and set(log["head"]) != _HEAD_FIELDS):
        return "log: not the documented fields"
    return None


def verify_bundle(raw: bytes, keys: PublicKeys | None = None) -> Verdict:
    """Check a bundle offline: form, digest, commitment, shuffle, chain, replay and money, and its anchor.

    The anchor (``anchors.check_anchor``): the signed tree head the bundle carries, checked with
    ``keys``. Without a head or without keys the verdict warns that the bundle is *unanchored*
    (with keys, a missing head or a bad signature fails it).
    """
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
    try:
        problem = shape_problem(bundle)
    except (KeyError, TypeError, AttributeError) as error:
        problem = f"missing or malformed field: {error}"
    if not verdict.add("shape", problem is None, problem or "the documented fields, each wallet once"):
        return verdict
    body = {k: v for k, v in bundle.items() if k != "bundle_digest"}
    digest = hashlib.sha256(canonical_json(body).encode()).hexdigest()
    if not verdict.add("bundle digest", digest == bundle.get("bundle_digest"), "SHA-256 of the bundle body"):
        return verdict
    try:
        events = [RecordedEvent(**e) for e in bundle["events"]]
        shuffle = bundle["shuffle"]
        withheld = not shuffle["server_seed"] and voided_without_seed(core_facts(events))
        seed = None if withheld else bytes.fromhex(shuffle["server_seed"])
        if seed is not None:
            verdict.add("commitment", commitment(seed) == shuffle["commitment"], "SHA-256 of the server seed")
            _check_shuffle(verdict, shuffle, seed, recorded_client_seed(events))
        last = check_chain(verdict, bundle["round_id"], events)
        verdict.add("chain end", last == bundle["chain"]["last"], "the last digest matches the bundle's")
        check_replay(verdict, events, seed)
        again = restated(bundle["round_id"], core_facts(events))
        differ = [k for k, v in again.items() if canonical_json(v) != canonical_json(bundle.get(k))]
        verdict.add(
            "copies",
            not differ,
            f"not what its events say: {_differences(differ, again, bundle)}"
            if differ
            else "every field the bundle restates is what its events say",
        )
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
        check_anchor(verdict, bundle["round_id"], bundle["chain"]["last"], bundle.get("log"), keys)
    except (KeyError, TypeError, ValueError) as error:
        verdict.add("form", False, f"missing or malformed field: {error}")
    return verdict


def _differences(fields: Sequence[str], again: dict[str, Any], bundle: dict[str, Any]) -> str:
    """The restated fields that differ: of a list its first differing element, of an object its members."""
    named = []
    for name in fields:
        mine, theirs = again[name], bundle.get(name)
        if isinstance(mine, list) and isinstance(theirs, list):
            pairs = zip(mine, theirs, strict=False)
            at = next((i for i, (a, b) in enumerate(pairs) if canonical_json(a) != canonical_json(b)), None)
            name += f"[{at}]" if at is not None else f" ({len(theirs)} where the events give {len(mine)})"
        elif isinstance(mine, dict) and isinstance(theirs, dict):
            keys = [k for k in sorted({*mine, *theirs}) if canonical_json(mine.get(k)) != canonical_json(theirs.get(k))]
            name += f" ({', '.join(k if k in mine else k + ': a member the events do not give' for k in keys)})"
        named.append(name)
    return "; ".join(named)


def for_player(bundle: dict[str, Any], player: str) -> dict[str, Any]:
    """The bundle as a player may have it: its own wallet's balances only (least disclosure), with the
    bundle digest taken anew over what remains. Everything that proves the round stays."""
    body = {k: v for k, v in bundle.items() if k != "bundle_digest"}
    body["balances"] = [b for b in bundle.get("balances", ()) if b.get("wallet") == player]
    body["bundle_digest"] = hashlib.sha256(canonical_json(body).encode()).hexdigest()
    return body
