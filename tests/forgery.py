"""What a forger without any key can do to a round bundle, with the documentation's own verifier
(``docs/examples/worked_round.py``, passed as ``wr``): recompute the chain and the bundle digest after an
edit. Shared by the docs tests (tests/test_audit_docs.py) and the browser page tests (tests/cli/pages.py)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
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
    bundle["format_version"] = 2


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
    "format_version 2": (_version, False),
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
