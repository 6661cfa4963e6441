"""Export a closed round as a round bundle (docs/audit.md): ``export_bundle`` reads it from an application,
``for_recipient`` (``for_player``) makes an operator's bundle a player's or an auditor's, ``restated`` is what a
bundle restates from its events (which the offline verifier, ``audit/bundle.py``, computes again), and
``bundle_bytes`` its one byte form."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from pokdeng_core import commands as rc
from pokdeng_core import events as re
from pokdeng_core.errors import DomainError
from pokdeng_core.round_evolve import evolve
from pokdeng_core.round_state import RoundState
from pokdeng_core.shuffle import SHUFFLE_ALGORITHM, shuffled_deck
from pokdeng_service.audit.forms import recipient_ok
from pokdeng_service.audit.replay import as_json, check_chain, core_facts, decisions, revealed_seed
from pokdeng_service.audit.verdicts import Verdict
from pokdeng_service.store.codec import CHAIN_VERSION, canonical_json, from_data, genesis_digest
from pokdeng_service.store.facts import Recorded, RecordedEvent
from pokdeng_service.version import BUNDLE_FORMAT, BUNDLE_VERSION

if TYPE_CHECKING:  # (what export reads of a store: verify_bundle, offline, loads none of it)
    from pokdeng_service.audit.live import AuditedRecord


def _log_anchor(app: AuditedRecord, round_id: str) -> dict[str, Any] | None:
    """The latest signed head of the store's log covering the round, with its inclusion proof
    (``LogQueries.log_anchor``); None for a record without a log."""
    anchor = getattr(app, "log_anchor", None)
    return None if anchor is None else cast(dict[str, Any] | None, anchor(round_id))


def export_bundle(app: AuditedRecord, round_id: str, made_for: str = "operator") -> dict[str, Any]:
    """A self-contained record of one closed round (docs/audit.md), made for ``made_for``: ``operator`` (the
    default: what the store's holder exports), ``auditor`` or ``player:<wallet id>`` (``for_recipient``: a
    player's holds its own balance only)."""
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
    body: dict[str, Any] = {
        "format": BUNDLE_FORMAT,
        "format_version": BUNDLE_VERSION,
        "made_for": "operator",
        "round_id": round_id,
        **copies,
        "balances": _balances(app, round_id, copies["settlement"]),
        **_platform_transactions(app, round_id, state.currency),
        "events": [_event_dict(e) for e in facts],
        "inclusion": _inclusion(app.inclusion_proof(round_id)),
        "log": _log_anchor(app, round_id),
    }
    body["bundle_digest"] = _digest(body)
    bundle = {k: body[k] for k in _ORDER if k in body}
    return bundle if made_for == "operator" else for_recipient(bundle, made_for)


def _balances(app: AuditedRecord, round_id: str, settlement: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Every wallet the settlement pays, in its order: the balance just after the wallet applied the round
    (``after``) and before (``after - net``); both null for a round whose money is the platform's (pokdeng holds
    no balance of it). A wallet of the store that has no record of the settlement, or applied another net, is
    refused (``StreamForged``): a bundle's balances are complete or it is not made."""
    if settlement is None:
        return []
    from pokdeng_service.application.errors import stream_forged
    from pokdeng_service.store.aggregates import wallet_uuid

    applied = [(player, net, _settled(app, player, round_id)) for player, _reserved, net in settlement["wallets"]]
    if applied and all(found is None for _p, _n, found in applied) and _platform_round(app, round_id):
        return [{"wallet": player, "before": None, "after": None, "net": net} for player, net, _found in applied]
    balances = []
    for player, net, found in applied:
        if found is None or found[0] != net:
            what = "no record of" if found is None else f"net {found[0]} for"
            raise stream_forged("wallet", player, wallet_uuid(player), f"it has {what} round {round_id}'s settlement")
        balances.append({"wallet": player, "before": found[1] - net, "after": found[1], "net": net})
    return balances


def _platform_transactions(app: AuditedRecord, round_id: str, currency: str) -> dict[str, Any]:
    """``platform_transactions`` of a round whose money is a platform's (docs/audit.md): its outbox's transactions in
    the order they were requested; nothing for a round of the store's wallets. A round with a transaction still
    pending (the recovery has not finished it) is refused: its bundle would show money not yet moved."""
    from pokdeng_service.audit.platform_txs import bundle_transactions
    from pokdeng_service.wallet.outbox import load_transactions

    outbox = load_transactions(app, round_id)
    if outbox is None:
        return {}
    pending = outbox.pending()
    if pending:
        listed = ", ".join(f"{t.tx_id} ({t.status})" for t in pending)
        raise DomainError(
            f"round {round_id}'s transactions with the platform are still pending ({listed}): export it once they "
            "are done (the recovery of a server on --wallet remote finishes them; pokdeng wallet pending lists them)"
        )
    return {"platform_transactions": bundle_transactions(outbox.txs.values(), currency)}


def _platform_round(app: AuditedRecord, round_id: str) -> bool:
    """Whether the round's money is a platform's (``--wallet remote``: its transactions stream, docs/wallet.md)."""
    from pokdeng_service.wallet.outbox import load_transactions

    return load_transactions(app, round_id) is not None


def _inclusion(proof: dict[str, Any] | None) -> dict[str, Any] | None:
    """The table checkpoint's proof as a bundle of version 2 carries it: what the check reads, no more (the
    checkpoint's period and its event's position and digest on the table's stream are no part of it: nothing
    offline could check them)."""
    return None if proof is None else {k: proof[k] for k in ("table_id", "root", "size", "index", "leaf", "path")}


def _digest(body: dict[str, Any]) -> str:
    """``bundle_digest``: SHA-256 of the canonical JSON of every other member."""
    return hashlib.sha256(canonical_json({k: v for k, v in body.items() if k != "bundle_digest"}).encode()).hexdigest()


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
    "made_for",
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
    "platform_transactions",
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


def _settled(app: AuditedRecord, wallet_id: str, round_id: str) -> tuple[int, int] | None:
    """(net, balance after) of the round as the wallet applied it (``live.wallet_settlement``), or None."""
    from pokdeng_service.audit.live import wallet_settlement

    return wallet_settlement(app, wallet_id, round_id)


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


def for_recipient(bundle: dict[str, Any], made_for: str) -> dict[str, Any]:
    """An operator's bundle as made for ``made_for`` (``auditor``, or ``player:<wallet id>``: its own wallet's
    balances only, least disclosure), with ``made_for`` and the bundle digest taken anew. Everything that proves
    the round stays."""
    if not recipient_ok(made_for):
        raise ValueError(f"a bundle is made for operator, auditor or player:ID, not {made_for!r}")
    body = {k: v for k, v in bundle.items() if k != "bundle_digest"}
    body["made_for"] = made_for
    if made_for.startswith("player:"):
        player = made_for.removeprefix("player:")
        body["balances"] = [b for b in bundle.get("balances", ()) if b.get("wallet") == player]
        if "platform_transactions" in bundle:
            body["platform_transactions"] = [t for t in bundle["platform_transactions"] if t.get("player") == player]
    body["bundle_digest"] = _digest(body)
    return {k: body[k] for k in _ORDER if k in body}


def for_player(bundle: dict[str, Any], player: str) -> dict[str, Any]:
    """The bundle as a player may have it (``for_recipient`` with ``player:<player>``): its own balances only."""
    return for_recipient(bundle, f"player:{player}")
