"""Round bundles: export one closed round as a self-contained document, and verify it offline.

A *round bundle* (docs/audit.md) is a canonical JSON document: the round's seeds and deck
order, decisions, payouts, settlement, wallet balances, stored events, chain ends and
checkpoint inclusion proof, the store log's signed tree head that covers the round with the
round's inclusion proof under it (``log``, docs/checkpoints.md), whom it was made for (``made_for``),
with a digest of it all. ``export_bundle`` reads it from an application (``for_recipient`` makes a player's
or an auditor's); ``verify_bundle`` checks one with no server and no database, and never raises: whatever
a file holds, its verdict is PASS, UNANCHORED or FAIL naming the check.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, cast

from pokdeng_core import commands as rc
from pokdeng_core import events as re
from pokdeng_core.errors import DomainError
from pokdeng_core.machine import RoundState, evolve
from pokdeng_core.shuffle import SHUFFLE_ALGORITHM, commitment, shuffled_deck
from pokdeng_service.audit.anchors import check_anchor
from pokdeng_service.audit.audience import balances_problem
from pokdeng_service.audit.forms import bundle_types_problem, domain_problem, recipient_ok
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
    from_data,
    genesis_digest,
)
from pokdeng_service.store.facts import Recorded, RecordedEvent
from pokdeng_service.store.signing import HEAD_FORMAT, HEAD_VERSION, PublicKeys
from pokdeng_service.version import BUNDLE_FORMAT as BUNDLE_FORMAT  # (the format's one place, re-exported)
from pokdeng_service.version import BUNDLE_VERSION as BUNDLE_VERSION
from pokdeng_service.version import BUNDLE_VERSIONS_READ as BUNDLE_VERSIONS_READ

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


class _NotAnInteger(ValueError):
    """A JSON number with a fraction or an exponent (or NaN, Infinity): a bundle's numbers are integers."""


def _not_an_integer(text: str) -> NoReturn:
    raise _NotAnInteger(text)


def parse_bundle(raw: bytes) -> Any:
    """The JSON value of a bundle file, refusing any number that is not an integer (``100.0``, ``1e2``: docs/audit.md,
    "Canonical JSON"; ``_NotAnInteger``)."""
    return json.loads(raw, parse_float=_not_an_integer, parse_constant=_not_an_integer)


def data_problem(kind: str, data: Any) -> str | None:
    """What is wrong with the members of an event's ``data`` (docs/events.md; docs/audit.md, "Types"), or None:
    exactly the fields of its kind, each of its type, of which only the fields added with a default after
    rounds were recorded without them (``by``, ``currency``) may be absent."""
    from pokdeng_service.audit.forms import ADDED_DATA, EVENT_DATA_TYPES, members_problem

    if kind not in EVENT_DATA_TYPES:
        return f"kind {kind!r} is not a round event's"
    return members_problem(data, EVENT_DATA_TYPES[kind], "data", ADDED_DATA.get(kind, frozenset()))


def shape_problem(bundle: dict[str, Any]) -> str | None:
    """What is not of the documented form (docs/audit.md, "Round bundle" and "Types"), or None: exactly the
    documented members of the bundle's version, each of its type (``forms.bundle_types_problem``: every
    event's data by its kind, ``balances``, ``inclusion``, ``log`` and its head), every event after the
    stream's creation (position 2 or later), each wallet once in ``balances`` with ``before`` and ``after``
    both integers with ``net`` = ``after`` - ``before`` or both null, the head of its format, and the
    checkpoint's table the round's. Nothing may ride along that no check reads (what the bundle restates from
    its events, ``decisions``, ``shuffle``, ``chain`` and the rest, is compared whole by the copies check)."""
    problem = bundle_types_problem(bundle)
    if problem is not None:
        return problem
    for event in bundle["events"]:
        if event["position"] < 2:
            return f"event {event['position']} ({event['kind']}) is not after the stream's creation (position 2 on)"
    wallets = [b["wallet"] for b in bundle["balances"]]
    if len(set(wallets)) != len(wallets):
        return "a wallet appears more than once in balances"
    for balance in bundle["balances"]:
        before, after, net = balance["before"], balance["after"], balance["net"]
        if (before is None) != (after is None) or (before is not None and net != after - before):
            return f"balances of {balance['wallet']!r}: not before and after with net = after - before, or both null"
    if "platform_transactions" in bundle and any(b["before"] is not None for b in bundle["balances"]):
        return "platform_transactions in a bundle whose balances are the store's (before and after not null)"
    inclusion, log = bundle.get("inclusion"), bundle.get("log")
    if inclusion is not None and inclusion["table_id"] != bundle["table_id"]:
        return f"inclusion: a checkpoint of table {inclusion['table_id']!r}, not the round's {bundle['table_id']!r}"
    if log is not None and (log["head"]["format"], log["head"]["format_version"]) != (HEAD_FORMAT, HEAD_VERSION):
        return f"log: its head is not a {HEAD_FORMAT} of version {HEAD_VERSION}"
    return None


class _Checks:
    """Runs a bundle's checks one by one: an error inside one (a malformed member it reads) fails that check,
    naming it, and the checks after it still run."""

    def __init__(self, verdict: Verdict) -> None:
        self.verdict = verdict

    def run(self, name: str, check: Callable[[], object]) -> bool:
        """Run ``check`` (which adds ``name`` and perhaps the checks that follow it); whether all it added passed."""
        before = len(self.verdict.checks)
        try:
            check()
        except Exception as error:  # (never raises: a member this check reads is missing or malformed)
            self.verdict.add(name, False, f"missing or malformed: {_said(error)}")
            return False
        return all(c.ok for c in self.verdict.checks[before:])


def _said(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    return text if isinstance(error, ValueError | DomainError) else f"{type(error).__name__}: {text}"


def verify_bundle(raw: bytes, keys: PublicKeys | None = None) -> Verdict:
    """Check a bundle offline: form, shape, digest, commitment, shuffle, chain, replay, copies, money, balances,
    the checkpoint and the log, and its anchor. Never raises: whatever ``raw`` holds, the verdict is ``PASS``,
    ``UNANCHORED`` or ``FAIL`` naming the failed checks (``Verdict.status``).

    The anchor (``anchors.check_anchor``): the signed tree head the bundle carries, checked with ``keys``.
    Without keys, or without a head, nothing outside the bundle vouches for its events: the verdict is
    ``UNANCHORED`` when every check passed (with keys, a missing head or a bad signature fails it).
    """
    verdict = Verdict("bundle")
    try:
        _verify(verdict, raw, keys)
    except Exception as error:  # (a last resort: every check is run by _Checks, which fails it instead)
        verdict.add("form", False, f"the bundle could not be checked: {_said(error)}")
    return verdict


def _verify(verdict: Verdict, raw: bytes, keys: PublicKeys | None) -> None:
    try:
        bundle = parse_bundle(raw)
    except _NotAnInteger as error:
        verdict.add("form", False, f"the number {str(error)[:40]} is not an integer: a bundle's numbers are integers")
        return
    except Exception as error:  # (not JSON, not UTF-8, nested beyond the parser's depth)
        verdict.add("form", False, f"not JSON: {_said(error)}")
        return
    if not isinstance(bundle, dict) or bundle.get("format") != BUNDLE_FORMAT:
        verdict.add("form", False, "not a pokdeng round bundle")
        return
    if isinstance(bundle.get("round_id"), str):
        verdict.subject = f"bundle of round {bundle['round_id']}"
    checks = _Checks(verdict)
    if not checks.run("form", lambda: _check_form(verdict, raw, bundle)):
        return
    if not checks.run("shape", lambda: _check_shape(verdict, bundle)):
        return
    body = {k: v for k, v in bundle.items() if k != "bundle_digest"}
    digest = hashlib.sha256(canonical_json(body).encode()).hexdigest()
    if not verdict.add("bundle digest", digest == bundle["bundle_digest"], "SHA-256 of the bundle body"):
        return
    events = [RecordedEvent(**e) for e in bundle["events"]]  # (their members and types as shape checked them)
    facts = core_facts(events)
    found: dict[str, Any] = {"seed": None, "nets": {}}

    def seeds() -> None:
        shuffle = bundle["shuffle"]
        withheld = not shuffle["server_seed"] and voided_without_seed(facts)
        found["seed"] = seed = None if withheld else bytes.fromhex(shuffle["server_seed"])
        if seed is not None:
            verdict.add("commitment", commitment(seed) == shuffle["commitment"], "SHA-256 of the server seed")
            _check_shuffle(verdict, shuffle, seed, recorded_client_seed(events))

    checks.run("commitment", seeds)
    checks.run("chain", lambda: _check_chain(verdict, bundle, events))
    checks.run("record", lambda: check_replay(verdict, events, found["seed"]))
    checks.run("copies", lambda: _check_copies(verdict, bundle, facts))
    checks.run("money", lambda: found["nets"].update(check_money(verdict, events)))
    if bundle.get("inclusion") is not None:
        checks.run("inclusion", lambda: _check_inclusion(verdict, bundle))
    checks.run("balances", lambda: _check_balances(verdict, bundle, facts))
    if "platform_transactions" in bundle:
        checks.run("platform transactions", lambda: _check_transactions(verdict, bundle, facts))
    elif any(b["before"] is None for b in bundle["balances"]):
        verdict.warn(
            "its balances are a platform's and it carries no platform_transactions (exported before bundles "
            "carried them): its money with the platform is not checked; export the round again"
        )
    checks.run(
        "log inclusion",
        lambda: check_anchor(verdict, bundle["round_id"], bundle["chain"]["last"], bundle.get("log"), keys),
    )
    if bundle["format_version"] < BUNDLE_VERSION:
        verdict.warn(
            f"format version {bundle['format_version']}: its balances may leave wallets out (it does not say whom "
            "it was made for) and its checkpoint's period, position and digest are not checked (nothing offline "
            "can): export the round again for the current version"
        )


def _check_form(verdict: Verdict, raw: bytes, bundle: dict[str, Any]) -> None:
    """The canonical domain (integers below 2^53, no lone surrogate), and the file is the canonical JSON of what
    it holds and a newline, byte for byte."""
    problem = domain_problem(bundle)
    if problem is not None:
        verdict.add("form", False, problem)
        return
    verdict.add("form", raw == bundle_bytes(bundle), "canonical JSON, as exported")


def _check_shape(verdict: Verdict, bundle: dict[str, Any]) -> None:
    problem = shape_problem(bundle)
    detail = f"the documented members of version {bundle['format_version']}, each of its type, each wallet once"
    verdict.add("shape", problem is None, problem or detail)


def _check_chain(verdict: Verdict, bundle: dict[str, Any], events: Sequence[RecordedEvent]) -> None:
    last = check_chain(verdict, bundle["round_id"], events)
    verdict.add("chain end", last == bundle["chain"]["last"], "the last digest matches the bundle's")


def _check_copies(verdict: Verdict, bundle: dict[str, Any], facts: Sequence[Recorded]) -> None:
    again = restated(bundle["round_id"], facts)
    differ = [k for k, v in again.items() if canonical_json(v) != canonical_json(bundle.get(k))]
    verdict.add(
        "copies",
        not differ,
        f"not what its events say: {_differences(differ, again, bundle)}"
        if differ
        else "every field the bundle restates is what its events say",
    )


def _check_inclusion(verdict: Verdict, bundle: dict[str, Any]) -> None:
    inclusion = bundle["inclusion"]
    leaf = merkle.leaf_hash(bundle["round_id"], bundle["chain"]["last"])
    proven = leaf.hex() == inclusion["leaf"] and merkle.verify_inclusion(
        leaf,
        inclusion["index"],
        inclusion["size"],
        [bytes.fromhex(h) for h in inclusion["path"]],
        bytes.fromhex(inclusion["root"]),
    )
    verdict.add("inclusion", proven, f"leaf {inclusion['index']} of {inclusion['size']} under {inclusion['root']}")


def _check_balances(verdict: Verdict, bundle: dict[str, Any], facts: Sequence[Recorded]) -> None:
    problem = balances_problem(bundle, facts)
    verdict.add(
        "balances",
        problem is None,
        problem
        or f"made for {bundle.get('made_for', 'anyone (version 1)')}: "
        "the balances it holds, each wallet's net the settlement's",
    )


def _check_transactions(verdict: Verdict, bundle: dict[str, Any], facts: Sequence[Recorded]) -> None:
    from pokdeng_service.audit.platform_txs import resolved_transactions, transactions_problem

    made_for = bundle["made_for"]
    txs = bundle["platform_transactions"]
    problem = transactions_problem(bundle["round_id"], made_for, txs, facts)
    debits = sum(1 for t in txs if t["kind"] == "debit")
    verdict.add(
        "platform transactions",
        problem is None,
        problem
        or f"{debits} debits and {len(txs) - debits} credits of {made_for}: the ids the round's, the accepted debits "
        "its stakes, the credits or rollbacks its settlement's or void's, none left open",
    )
    for said in resolved_transactions(txs):
        verdict.warn(f"platform transaction {said}: settled outside the protocol by an operator, not checked")


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
