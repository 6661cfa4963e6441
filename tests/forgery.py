"""What a forger without any key can do to a round bundle, with the documentation's own verifier
(``docs/examples/worked_round.py``, passed as ``wr``): recompute the chain and the bundle digest after an
edit. Shared by the docs tests (tests/test_audit_docs.py) and the browser page tests (tests/cli/pages.py)."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any


def redigest(bundle: dict[str, Any], wr: ModuleType) -> bytes:
    """The bundle file after an edit: its ``bundle_digest`` recomputed, canonical JSON and a newline."""
    body = {k: v for k, v in bundle.items() if k != "bundle_digest"}
    bundle["bundle_digest"] = hashlib.sha256(wr.canonical(body)).hexdigest()
    return bytes(wr.canonical(bundle)) + b"\n"


def rechain(bundle: dict[str, Any], wr: ModuleType) -> None:
    """Recompute every link of the round's chain, and the chain's last digest."""
    previous = wr.genesis(bundle["round_id"])
    for event in bundle["events"]:
        event["digest"] = wr.link(
            previous, event["kind"], event["data"], event["position"], event["command_id"], event["timestamp"]
        )
        previous = event["digest"]
    bundle["chain"]["last"] = previous


def event_of(bundle: dict[str, Any], kind: str, n: int = 0) -> dict[str, Any]:
    """The bundle's ``n``-th event of ``kind`` (the first by default)."""
    found: dict[str, Any] = [e for e in bundle["events"] if e["kind"] == kind][n]
    return found


# --- what rides along: members no check used to read (found by a verifier written from the docs alone) ---


def _unknown_event(chained: bool) -> Callable[[dict[str, Any]], None]:
    def change(bundle: dict[str, Any]) -> None:
        last = bundle["events"][-1]
        bundle["events"].append(
            {
                "position": last["position"] + 1 if chained else 999,
                "kind": "payout_adjusted",
                "data": {"player": "ann", "amount": 500000},
                "command_id": "extra",
                "timestamp": last["timestamp"],
                "digest": "",
            }
        )

    return change


def _member(*path: str, name: str = "note") -> Callable[[dict[str, Any]], None]:
    def change(bundle: dict[str, Any]) -> None:
        target: Any = bundle
        for step in path:
            target = target[step]
        target[name] = "added"

    return change


def _wallet_twice(bundle: dict[str, Any]) -> None:
    bundle["balances"].append(dict(bundle["balances"][0]))


def _net(bundle: dict[str, Any]) -> None:
    bundle["balances"][0]["net"] += 100000


def _another_table(bundle: dict[str, Any]) -> None:
    bundle["inclusion"]["table_id"] = "another"


def _version(bundle: dict[str, Any]) -> None:
    bundle["format_version"] = 3


def _deal_by(bundle: dict[str, Any]) -> None:
    event_of(bundle, "cards_dealt")["data"]["by"] = ""


# name: (the edit, whether every digest is recomputed after it)
RIDE_ALONG: dict[str, tuple[Callable[[dict[str, Any]], None], bool]] = {
    "an event of an unknown kind without a digest": (_unknown_event(False), False),
    "an event of an unknown kind, every digest recomputed": (_unknown_event(True), True),
    "a member the bundle does not have": (_member(), False),
    "a member the head does not have": (_member("log", "head"), False),
    "a member the log does not have": (_member("log"), False),
    "a member the inclusion does not have": (_member("inclusion"), False),
    "a member an event does not have": (lambda bundle: bundle["events"][0].update(note="added"), False),
    "a wallet twice in balances": (_wallet_twice, False),
    "a balance's stated net": (_net, False),
    "the checkpoint of another table": (_another_table, False),
    "format_version 3": (_version, False),
    "the deal's sender emptied, every digest recomputed": (_deal_by, True),
}


def ride_along(raw: bytes, wr: ModuleType, name: str) -> bytes:
    """The bundle file ``raw`` with the ``RIDE_ALONG`` edit ``name``, its digests recomputed as a forger would."""
    change, chained = RIDE_ALONG[name]
    bundle = json.loads(raw)
    change(bundle)
    if chained:
        rechain(bundle, wr)
    return redigest(bundle, wr)


# --- what a bundle restates, compared whole (found by an outside attacker: the docs' verifier and the page
# compared only each decision's command name, read chain and shuffle member by member and never an event's data
# members, while `pokdeng verify` refused these). Outside the chain a signed bundle stays signed; a rewritten
# chain is for an unanchored bundle (``unanchored``: no signed head, no checkpoint, verified without a key).


def _decision(command: str, **changes: Any) -> Callable[[dict[str, Any]], None]:
    def change(bundle: dict[str, Any]) -> None:
        decision = next(d for d in bundle["decisions"] if d["command"] == command)
        for name, value in changes.items():
            decision[name] = value(decision.get(name)) if callable(value) else value

    return change


def _bet_sender(bundle: dict[str, Any]) -> None:
    event_of(bundle, "bet_placed")["data"]["by"] = "operator:someone-else"


def _no_stake_limit(bundle: dict[str, Any]) -> None:
    """A round opened with a lower limit of 0, restated alike in its decision (so that only the limits are wrong)."""
    event_of(bundle, "round_opened")["data"]["min_stake"] = 0
    next(d for d in bundle["decisions"] if d["command"] == "open_round")["min_stake"] = 0


def _event_member(bundle: dict[str, Any]) -> None:
    bundle["events"][0]["data"]["note"] = "added"


def _time(text: str) -> Callable[[dict[str, Any]], None]:
    """The deal's time replaced by ``text`` (found by a verifier written in Node from the docs: pokdeng took a
    ``.000000`` fraction, which the stored form never has, and a 13th month)."""

    def change(bundle: dict[str, Any]) -> None:
        event_of(bundle, "cards_dealt")["timestamp"] = text

    return change


def _platform_contribution_unsent(bundle: dict[str, Any]) -> None:
    """A ``ContributeSeed`` of the platform's with no sender (events.md: it always names its sender) after the
    opening, the opening's own contribution again (so the client seed stays), restated in the decisions."""
    opened = event_of(bundle, "round_opened")
    events = bundle["events"]
    at = next(i for i, e in enumerate(events) if e["command_id"] != opened["command_id"])
    seed = next(e["data"]["client_seed"] for e in events[:at] if e["kind"] == "client_seed_contributed")
    events.insert(
        at,
        {
            "position": 0,
            "kind": "client_seed_contributed",
            "data": {"contributor": "", "client_seed": seed, "by": ""},
            "command_id": "unsent-contribution",
            "timestamp": events[at - 1]["timestamp"],
            "digest": "",
        },
    )
    for position, event in enumerate(events, start=2):
        event["position"] = position
    decision = {"command": "contribute_seed", "name": "contribute_seed", "player": None, "client_seed": seed}
    bundle["decisions"].insert(1, decision)


@dataclass(frozen=True)
class Restated:
    change: Callable[[dict[str, Any]], None]
    rechained: bool  # every digest recomputed, on an unanchored bundle (``unanchored``) verified without a key
    check: str  # the one check the docs' verifier and the page fail (docs/audit.md names them)
    service: str  # the one check `pokdeng verify` fails


RESTATED: dict[str, Restated] = {
    "a stake's decision x10": Restated(
        _decision("place_bet", stake=lambda stake: stake * 10), False, "copies", "copies"
    ),
    "a stake's decision with its player renamed": Restated(
        _decision("place_bet", player="mallory"), False, "copies", "copies"
    ),
    "a decision's sender changed": Restated(_decision("open_round", by="operator:nobody"), False, "copies", "copies"),
    "a member a decision does not have": Restated(_decision("deal", note="added"), False, "copies", "copies"),
    "a member the chain does not have": Restated(_member("chain"), False, "copies", "copies"),
    "a member the shuffle does not have": Restated(_member("shuffle"), False, "copies", "copies"),
    "a member an event's data does not have, every digest recomputed": Restated(_event_member, True, "form", "shape"),
    "bet_placed's sender changed, every digest recomputed": Restated(_bet_sender, True, "copies", "copies"),
    "a stake limit of 0, every digest recomputed": Restated(_no_stake_limit, True, "money", "replay"),
    "a time with a fraction of zeros, every digest recomputed": Restated(
        _time("2026-03-14T15:09:27.000000+00:00"), True, "copies", "record"
    ),
    "a time that does not exist, every digest recomputed": Restated(
        _time("2026-13-45T99:99:99.000001+00:00"), True, "copies", "record"
    ),
    "the platform's ContributeSeed without its sender, every digest recomputed": Restated(
        _platform_contribution_unsent, True, "record", "record"
    ),
}


def unanchored(bundle: dict[str, Any]) -> None:
    """No signed head and no checkpoint: nothing outside the bundle vouches for its chain."""
    bundle["log"] = None
    bundle["inclusion"] = None


def restated(raw: bytes, wr: ModuleType, name: str, *, edit: bool = True) -> bytes:
    """The bundle file ``raw`` with the ``RESTATED`` edit ``name`` (or, ``edit`` false, the same bundle without
    it: a rechained one made unanchored), its digests recomputed as a forger would."""
    case = RESTATED[name]
    bundle = json.loads(raw)
    if case.rechained:
        unanchored(bundle)
    if edit:
        case.change(bundle)
    if case.rechained:
        rechain(bundle, wr)
    return redigest(bundle, wr)


def restate(bundle: dict[str, Any], wr: ModuleType) -> None:
    """Recompute every member the bundle restates from its events (``profile``, ``shuffle``, ``decisions``,
    ``payouts``, ``settlement``, ``times``, ``chain``, ...) as the docs' verifier computes them: after an edit of
    the events, a forger's bundle that says the same as its events. (Recompute the chain first.)"""
    check = wr.BundleCheck(b"", {}, lambda _text: None)
    check.bundle, check.events = bundle, bundle["events"]
    bundle.update(check._restated())


# --- what the docs rule out and pokdeng verify passed, or where it had no verdict (found by a verifier written
# from the docs alone): edits of the events restated alike everywhere (``restate``), every digest recomputed, on
# an unanchored bundle verified without a key; or the file's text edited, the bundle digest recomputed.


def _data(kind: str, n: int = 0, **changes: Any) -> Callable[[dict[str, Any]], None]:
    def change(bundle: dict[str, Any]) -> None:
        event_of(bundle, kind, n)["data"].update(changes)

    return change


def _drop_balance(bundle: dict[str, Any]) -> None:
    bundle["balances"].pop(0)


def _player_as_operator(bundle: dict[str, Any]) -> None:
    """A player's export relabelled as the operator's: its one balance where the operator's lists them all."""
    bundle["balances"] = bundle["balances"][:1]
    bundle["made_for"] = "operator"


def _for_another_player(bundle: dict[str, Any]) -> None:
    """An operator's export relabelled as a player's, every balance kept."""
    bundle["made_for"] = "player:" + bundle["balances"][0]["wallet"]


@dataclass(frozen=True)
class Outside:
    change: Callable[[dict[str, Any]], None]
    events: bool  # an edit of the events: every digest recomputed and the restated members with them (unanchored)
    checks: frozenset[str]  # what the docs' verifier fails (the page too)
    service: frozenset[str]  # what `pokdeng verify` fails


def _checks(*names: str) -> frozenset[str]:
    return frozenset(names)


OUTSIDE: dict[str, Outside] = {
    "a sender on the opening's own contribution (automatic)": Outside(
        _data("client_seed_contributed", 0, by="service:x"), True, _checks("record"), _checks("record", "replay")
    ),
    "a sender 'x' on the opening's own contribution": Outside(
        _data("client_seed_contributed", 0, by="x"), True, _checks("form", "record"), _checks("shape")
    ),
    "a malformed sender (oaerator:desk-7)": Outside(
        _data("round_opened", by="oaerator:desk-7"), True, _checks("form", "record"), _checks("shape")
    ),
    "engine_version a.1.0": Outside(
        _data("round_opened", engine_version="a.1.0"), True, _checks("form", "record"), _checks("shape")
    ),
    "currency aHB": Outside(_data("round_opened", currency="aHB"), True, _checks("form", "record"), _checks("shape")),
    "a seat the table does not have": Outside(
        _data("round_opened", seats=[[1, "ann"], [3, "bob"]]),
        True,
        _checks("record", "copies"),
        _checks("replay", "copies"),
    ),
    "a banker's draw moved to seat 5": Outside(
        _data("card_drawn", 1, seat=5), True, _checks("cards", "turns", "copies"), _checks("replay", "copies")
    ),
    "an operator's export with a balance dropped": Outside(
        _drop_balance, False, _checks("balances"), _checks("balances")
    ),
    "a player's export relabelled as the operator's": Outside(
        _player_as_operator, False, _checks("balances"), _checks("balances")
    ),
    "an operator's export relabelled as a player's": Outside(
        _for_another_player, False, _checks("balances"), _checks("balances")
    ),
}
"""Each edit of the worked example (tests/test_audit_docs.py; the page: tests/test_page_verifier.py)."""


def outside(raw: bytes, wr: ModuleType, name: str) -> bytes:
    """The bundle file ``raw`` with the ``OUTSIDE`` edit ``name``, as a forger makes it: an edit of the events is
    made on the unanchored bundle, every digest and every restated member recomputed (what restating cannot
    compute, a seat no holder has, is left as it was); any other edit has its bundle digest recomputed."""
    case = OUTSIDE[name]
    bundle = json.loads(raw)
    if case.events:
        unanchored(bundle)
    case.change(bundle)
    if case.events:
        rechain(bundle, wr)
        with contextlib.suppress(KeyError, IndexError, TypeError, ValueError):
            restate(bundle, wr)
    return redigest(bundle, wr)


# the numbers written otherwise than as integers, in the file itself (the bundle digest is over the value)
NUMBERS: dict[str, tuple[bytes, bytes]] = {
    "100.0": (b'"min_stake":100,', b'"min_stake":100.0,'),
    "1e2": (b'"min_stake":100,', b'"min_stake":1e2,'),
    "1E2": (b'"min_stake":100,', b'"min_stake":1E2,'),
    "-0": (b'"index":0,', b'"index":-0,'),
}
