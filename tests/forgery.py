"""What a forger without any key can do to a round bundle, with the documentation's own verifier
(``docs/examples/worked_round.py``, passed as ``wr``): recompute the chain and the bundle digest after an
edit. Shared by the docs tests (tests/test_audit_docs.py) and the browser page tests (tests/cli/pages.py)."""

from __future__ import annotations

import hashlib
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
