"""A client in another language: Node.js (``@grpc/grpc-js`` + ``@grpc/proto-loader``) plays every profile.

``tests/node/play.js`` loads the packaged ``pokdeng_client/pokdeng.proto`` at run time (no generated
code), connects to a real server on 127.0.0.1 with bearer tokens and plays one whole round of
classic, ante, room and kingmaker: wallets, a table, seats, the room's banker bid, bets with the
players' own tokens, the deal, the players' turns, the kingmaker side bets, the banker's turn (the
operator for the house, the room's player-banker with its own token), until the round closes;
every command is retried with its request_id and must answer the same; each closed round must
balance, verify and export, and its events arrive typed. It prints one JSON line per profile.
Here the same rounds are read back through the Python client: they exist, they are what the
Node client reported, and they verify (on the server and offline, from the bundle).

The npm packages are installed by ``npm ci`` on first use and kept while they match the lock
(``tests/node/packages.py``); without node/npm the test is skipped, except under ``CI=true``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

import pokdeng_client
from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_service import audit
from tests.node.packages import NodePackages, install

from .client import PLAYERS, TOKENS, kind_of
from .conftest import Served

pytestmark = pytest.mark.node

PACKAGED_PROTO = Path(pokdeng_client.__file__).resolve().parent / "pokdeng.proto"
PROFILES = ("classic", "ante", "room", "kingmaker")
RUN_TIMEOUT = 120.0


@pytest.fixture(scope="module")
def node_packages() -> NodePackages:
    return install()


def play(
    packages: NodePackages, target: str, *extra: str, operator: str = TOKENS["operator"]
) -> subprocess.CompletedProcess[str]:
    players = [arg for p in PLAYERS for arg in ("--player", f"{p}={TOKENS[p]}")]
    command = [str(packages.node), str(packages.play), target, "--proto", str(PACKAGED_PROTO)]
    command += ["--operator", operator, *players, *extra]
    return subprocess.run(command, capture_output=True, text=True, timeout=RUN_TIMEOUT, cwd=packages.play.parent)


def test_the_node_client_plays_a_round_of_every_profile(node_packages: NodePackages, local: Served) -> None:
    result = play(node_packages, local.target, "--prefix", "node")  # (RUN_TIMEOUT ends a hang)
    assert result.returncode == 0, f"play.js exited {result.returncode}:\n{result.stderr}\n{result.stdout}"
    lines: list[dict[str, Any]] = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert [line["profile"] for line in lines] == list(PROFILES), result.stdout

    ops, auditor = local.api("operator"), local.api("auditor")
    for line in lines:
        profile = line["profile"]
        assert line["phase"] == "ROUND_PHASE_CLOSED" and line["outcome"] == "ROUND_OUTCOME_SETTLED", line
        assert line["verified"] is True and line["round_id"] == f"node-{profile}#1", line
        assert sum(line["nets"].values()) + line["house_net"] + line["commission"] == 0, line

        # the round exists and is what the Node client reported
        closed = ops.round(line["round_id"])
        assert closed.profile == pb.Profile.Value(f"PROFILE_{profile.upper()}")
        assert closed.phase == pb.ROUND_PHASE_CLOSED and closed.outcome == pb.ROUND_OUTCOME_SETTLED
        assert {r.player: r.net for r in closed.results} == line["nets"]
        assert (closed.house_net, closed.commission) == (line["house_net"], line["commission"])
        assert len(closed.events) == line["events"]
        settled = [e.bet_settled for e in closed.events if kind_of(e) == "bet_settled"]
        assert [
            {
                "seat": s.seat,
                "player": s.player,
                "outcome": pb.BetOutcome.Name(s.outcome),
                "multiplier": f"{s.multiplier.numerator}/{s.multiplier.denominator}",
                "net": s.net,
            }
            for s in settled
        ] == line["bet_settled"]
        # every command of the round came from the Node client (its request ids)
        assert all(e.request_id.startswith("node-") for e in closed.events if e.request_id), profile
        table = ops.table(closed.table_id)
        assert table.turn_timeout.seconds == 30 and table.currency.code == "THB"
        if profile == "room":
            assert closed.banker_player == "dave" and "dave" in line["nets"]
        if profile == "ante":
            assert not table.seated and {s.player for s in settled} == {"alice", "bob"}

        # and it verifies through the Python side: on the server, and offline from its bundle
        verdict = auditor.get("AuditService", "VerifyRound", pb.VerifyRoundRequest(round_id=line["round_id"]))
        assert verdict.ok, verdict.first_difference
        bundle = auditor.get("AuditService", "ExportRound", pb.ExportRoundRequest(round_id=line["round_id"]))
        offline = audit.verify_bundle(bundle.bundle_json.encode())
        assert offline.ok, offline.first_difference

    for name in ("alice", "bob", "carol", "dave", "erin"):
        wallet = ops.wallet(name)
        assert wallet.reserved == 0 and wallet.currency.code == "THB", name


def test_the_node_client_fails_loudly(node_packages: NodePackages, local: Served) -> None:
    """A refused call ends the run with exit 1 and says which call failed and why."""
    refused = play(node_packages, local.target, "--profiles", "ante", operator="not-a-token")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "FAILED" in refused.stderr and "UNAUTHENTICATED" in refused.stderr, refused.stderr
    assert refused.stdout == ""
    usage = subprocess.run(
        [str(node_packages.node), str(node_packages.play), local.target], capture_output=True, text=True, timeout=30
    )
    assert usage.returncode == 2 and "--proto FILE is missing" in usage.stderr, usage.stderr
