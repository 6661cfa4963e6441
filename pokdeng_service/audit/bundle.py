"""Round bundles: export one closed round as a self-contained document, and verify it offline.

A *round bundle* (docs/audit.md) is a canonical JSON document: the round's seeds and deck
order, decisions, payouts, settlement, wallet balances, stored events, chain ends and
checkpoint inclusion proof, the store log's signed tree head that covers the round with the
round's inclusion proof under it (``log``, docs/checkpoints.md), whom it was made for (``made_for``),
with a digest of it all. ``audit/export.py`` exports it (``export_bundle`` reads it from an application,
``for_recipient`` makes a player's or an auditor's); ``verify_bundle`` here checks one
with no server and no database, and never raises: whatever
a file holds, its verdict is PASS, UNANCHORED or FAIL naming the check.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from pokdeng_core.errors import DomainError
from pokdeng_core.shuffle import commitment, shuffled_deck
from pokdeng_service.audit.anchors import check_anchor
from pokdeng_service.audit.audience import balances_problem
from pokdeng_service.audit.export import bundle_bytes, restated
from pokdeng_service.audit.forms import bundle_types_problem, domain_problem
from pokdeng_service.audit.replay import (
    check_chain,
    check_money,
    check_replay,
    core_facts,
    recorded_client_seed,
    voided_without_seed,
)
from pokdeng_service.audit.verdicts import Verdict
from pokdeng_service.store import merkle
from pokdeng_service.store.codec import canonical_json
from pokdeng_service.store.facts import Recorded, RecordedEvent
from pokdeng_service.store.signing import HEAD_FORMAT, HEAD_VERSION, PublicKeys
from pokdeng_service.version import BUNDLE_FORMAT as BUNDLE_FORMAT  # (the format's one place, re-exported)
from pokdeng_service.version import BUNDLE_VERSION as BUNDLE_VERSION
from pokdeng_service.version import BUNDLE_VERSIONS_READ as BUNDLE_VERSIONS_READ


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
    bundle = _parsed(verdict, raw)
    if bundle is None:
        return
    checks = _Checks(verdict)
    if not checks.run("form", lambda: _check_form(verdict, raw, bundle)):
        return
    if not checks.run("shape", lambda: _check_shape(verdict, bundle)):
        return
    body = {k: v for k, v in bundle.items() if k != "bundle_digest"}
    digest = hashlib.sha256(canonical_json(body).encode()).hexdigest()
    if not verdict.add("bundle digest", digest == bundle["bundle_digest"], "SHA-256 of the bundle body"):
        return
    _check_contents(verdict, checks, bundle, keys)
    _warn_of_age(verdict, bundle)


def _parsed(verdict: Verdict, raw: bytes) -> dict[str, Any] | None:
    """The bundle ``raw`` holds (its subject named on the verdict), or None with the form failed: not JSON, a
    number that is not an integer, not a pokdeng round bundle."""
    try:
        bundle = parse_bundle(raw)
    except _NotAnInteger as error:
        verdict.add("form", False, f"the number {str(error)[:40]} is not an integer: a bundle's numbers are integers")
        return None
    except Exception as error:  # (not JSON, not UTF-8, nested beyond the parser's depth)
        verdict.add("form", False, f"not JSON: {_said(error)}")
        return None
    if not isinstance(bundle, dict) or bundle.get("format") != BUNDLE_FORMAT:
        verdict.add("form", False, "not a pokdeng round bundle")
        return None
    if isinstance(bundle.get("round_id"), str):
        verdict.subject = f"bundle of round {bundle['round_id']}"
    return bundle


def _check_contents(verdict: Verdict, checks: _Checks, bundle: dict[str, Any], keys: PublicKeys | None) -> None:
    """The checks of a bundle of the documented shape and digest, each run whatever the others found:
    commitment and shuffle, chain, replay, copies, money, checkpoint, balances, platform transactions, log."""
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


def _warn_of_age(verdict: Verdict, bundle: dict[str, Any]) -> None:
    """A bundle of an older format version: what it cannot show."""
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
