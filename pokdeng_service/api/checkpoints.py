"""The Audit service's signed tree heads: sign one, read one, prove consistency (docs/checkpoints.md).

All three are the operator's: it signs the heads and publishes them with their consistency
proofs; auditors check what was published offline (``pokdeng checkpoints check``, ``pokdeng
verify BUNDLE --key``), or read a store with ``pokdeng checkpoints show|prove|audit``.
"""

from __future__ import annotations

import json

from google.protobuf.timestamp_pb2 import Timestamp

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_core import limits
from pokdeng_service.api.requests import Fields
from pokdeng_service.api.rpcs import OPERATOR, Call, Env, Rpc, command, query
from pokdeng_service.application import commands as c
from pokdeng_service.application.views import CommandResult
from pokdeng_service.store.roundlog import HEAD_SIGNED
from pokdeng_service.store.signing import TreeHead


def signed_tree_head(head: TreeHead, note: str = "") -> pb.SignedTreeHead:
    """The head as the API gives it, with its C2SP checkpoint note (docs/checkpoints.md)."""
    return pb.SignedTreeHead(
        log_id=head.log_id,
        key_id=head.key_id,
        tree_size=head.tree_size,
        root_hash=head.root_hash,
        timestamp_ms=head.timestamp,
        signature=head.signature,
        head_json=json.dumps(head.as_dict(), sort_keys=True, separators=(",", ":")),
        sign_time=Timestamp(seconds=head.timestamp // 1000, nanos=head.timestamp % 1000 * 1_000_000),
        note=note,
    )


def head_reply(_env: Env, _call: Call, result: CommandResult) -> dict[str, pb.SignedTreeHead]:
    data = next(e.data for e in reversed(result.events) if e.kind == HEAD_SIGNED)
    fields = {k: v for k, v in data.items() if k != "time_ms"}
    head = TreeHead.from_dict({**fields, "timestamp": data["time_ms"]})
    return {"head": signed_tree_head(head, str(data.get("note") or ""))}


def _store_key(f: Fields, shard: str) -> str:
    for violation in c.SignTreeHead(shard).violations():
        f.bad(violation.field, violation.description)
    return c.SignTreeHead(shard).key


def get_signed_tree_head(env: Env, _call: Call, request: pb.GetSignedTreeHeadRequest) -> pb.GetSignedTreeHeadResponse:
    f = Fields()
    key = _store_key(f, request.shard)
    size = f.between("tree_size", request.tree_size, 0, limits.MAX_POSITION)
    f.done()
    head, note = env.service.app_for(key, "log").tree_head_note(size)
    return pb.GetSignedTreeHeadResponse(head=signed_tree_head(head, note))


def get_consistency_proof(
    env: Env, _call: Call, request: pb.GetConsistencyProofRequest
) -> pb.GetConsistencyProofResponse:
    f = Fields()
    key = _store_key(f, request.shard)
    first = f.between("first", request.first, 0, limits.MAX_POSITION)
    second = f.between("second", request.second, 0, limits.MAX_POSITION)
    f.done()
    proof = env.service.app_for(key, "log").consistency_proof(first, second)
    return pb.GetConsistencyProofResponse(
        log_id=str(proof["log_id"]),
        first=int(proof["first"]),
        second=int(proof["second"]),
        path=[str(h) for h in proof["path"]],
    )


RPCS: tuple[Rpc, ...] = (
    command("AuditService", "SignTreeHead", OPERATOR, lambda r: c.SignTreeHead(r.shard), head_reply),
    query("AuditService", "GetSignedTreeHead", OPERATOR, get_signed_tree_head),
    query("AuditService", "GetConsistencyProof", OPERATOR, get_consistency_proof, costly=True),
)
