"""The Audit service's signed tree heads: SignTreeHead (a command), GetSignedTreeHead, GetConsistencyProof."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_service.application import PokdengApp
from pokdeng_service.audit.anchors import verify_consistency
from pokdeng_service.store.notes import Checkpoint, Verifier, open_note, origin_of
from pokdeng_service.store.signing import KeyRing, SigningKey, TreeHead
from pokdeng_service.store.vault import SeedVault
from pokdeng_testkit.keys import VAULT_KEY

from ..service import play
from .client import error_of
from .conftest import Served, StartServer, sqlite_env

RING = KeyRing.of(SigningKey.from_hex("3c" * 32))


@pytest.fixture
def signing(tmp_path: Path, start_server: StartServer) -> Iterator[Served]:
    app = PokdengApp(sqlite_env(tmp_path), vault=SeedVault.from_hex(VAULT_KEY), signing_keys=RING)
    try:
        yield start_server(app)
    finally:
        app.close()


def _close_rounds(app: PokdengApp, rounds: int, prefix: str) -> None:
    d = play.Driver(app, prefix=prefix, chooser=play.Chooser(random.Random(rounds)))
    try:
        app.get_table("t")
    except Exception:
        play.open_wallets(d, ["t-a", "t-b"])
        play.open_table(d, "t", "classic", [(1, "t-a"), (2, "t-b")])
    for _ in range(rounds):
        round_id = play.start_round(d, "t")
        play.seat_bets(d, round_id, 100)
        play.drive_round(d, round_id)


def test_sign_read_and_prove_over_grpc(signing: Served) -> None:
    ops = signing.api("operator", twice=True)
    empty = error_of(lambda: ops.cmd("AuditService", "SignTreeHead", pb.SignTreeHeadRequest()))
    assert empty.code() == grpc.StatusCode.FAILED_PRECONDITION and "no round has closed" in (empty.details() or "")
    _close_rounds(signing.app, 3, "first")
    first = ops.cmd(
        "AuditService", "SignTreeHead", pb.SignTreeHeadRequest()
    ).head  # twice: the retry answers the same head
    assert first.tree_size == 3 and first.key_id == RING.current.key_id  # type: ignore[union-attr]
    head = TreeHead.from_dict(json.loads(first.head_json))
    assert RING.public.check(head)[0] and head.signature == first.signature
    _close_rounds(signing.app, 2, "second")
    second = ops.cmd("AuditService", "SignTreeHead", pb.SignTreeHeadRequest()).head
    latest = ops.get("AuditService", "GetSignedTreeHead", pb.GetSignedTreeHeadRequest()).head
    assert latest == second and latest.tree_size == 5
    assert ops.get("AuditService", "GetSignedTreeHead", pb.GetSignedTreeHeadRequest(tree_size=3)).head == first
    proof = ops.get("AuditService", "GetConsistencyProof", pb.GetConsistencyProofRequest(first=3, second=5))
    assert (proof.first, proof.second, proof.log_id) == (3, 5, head.log_id)
    verdict = verify_consistency(
        json.loads(first.head_json), json.loads(second.head_json), list(proof.path), RING.public
    )
    assert verdict.ok, verdict.render()
    bad = error_of(
        lambda: ops.get("AuditService", "GetConsistencyProof", pb.GetConsistencyProofRequest(first=6, second=5))
    )
    assert bad.code() == grpc.StatusCode.INVALID_ARGUMENT
    empty_tree = error_of(  # RFC 9162 defines no proof from the empty tree
        lambda: ops.get("AuditService", "GetConsistencyProof", pb.GetConsistencyProofRequest(first=0, second=5))
    )
    assert empty_tree.code() == grpc.StatusCode.INVALID_ARGUMENT and "empty" in (empty_tree.details() or "")
    # each head is also a C2SP checkpoint note, signed by the same key under the log's origin
    verifier = Verifier(origin_of("", head.log_id), bytes.fromhex(RING.public.hex(head.key_id)))
    for answer in (first, second):
        opened = open_note(answer.note, [verifier])
        checkpoint = Checkpoint.parse(opened.text)
        assert (checkpoint.origin, checkpoint.size, checkpoint.root.hex()) == (
            f"pokdeng.example/{head.log_id}",
            answer.tree_size,
            answer.root_hash,
        )
    missing = error_of(lambda: ops.get("AuditService", "GetSignedTreeHead", pb.GetSignedTreeHeadRequest(tree_size=4)))
    assert missing.code() == grpc.StatusCode.NOT_FOUND
    for who in ("auditor", "alice"):
        denied = error_of(
            lambda who=who: signing.api(who).cmd("AuditService", "SignTreeHead", pb.SignTreeHeadRequest())
        )
        assert denied.code() == grpc.StatusCode.PERMISSION_DENIED


def test_sign_tree_head_without_a_key_is_refused(local: Served) -> None:
    _close_rounds(local.app, 1, "keyless")
    error = error_of(lambda: local.api("operator").cmd("AuditService", "SignTreeHead", pb.SignTreeHeadRequest()))
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION and "no signing key" in (error.details() or "")
