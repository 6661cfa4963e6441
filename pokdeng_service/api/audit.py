"""The Audit service: replay, verify and export a round; its checkpoint's inclusion proof."""

from __future__ import annotations

from typing import Any

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_core.errors import WrongPhase
from pokdeng_service import audit
from pokdeng_service.api import convert
from pokdeng_service.api.observe import verification_failed
from pokdeng_service.api.requests import Fields
from pokdeng_service.api.rounds import readable_round
from pokdeng_service.api.rpcs import READERS, Call, Env, Rpc, query
from pokdeng_service.application.errors import NotFound
from pokdeng_service.application.principal import Role
from pokdeng_service.audit.export import for_recipient


def _auditable(env: Env, call: Call, request: Any) -> str:
    f = Fields()
    f.ident("round_id", request.round_id)
    f.done()
    if call.principal.role is Role.PLAYER:
        view = readable_round(env, call, request.round_id)
        if view.phase != "closed":
            raise WrongPhase(f"round {request.round_id} is still open: a player audits closed rounds")
    return str(request.round_id)


def replay_round(env: Env, call: Call, request: pb.ReplayRoundRequest) -> pb.ReplayRoundResponse:
    round_id = _auditable(env, call, request)
    verdict, replayed = audit.replay_round(env.service.app_for(round_id, "round"), round_id)
    return convert.replay(round_id, verdict, replayed)


def verify_round(env: Env, call: Call, request: pb.VerifyRoundRequest) -> pb.VerifyRoundResponse:
    round_id = _auditable(env, call, request)
    verdict = audit.verify_round(env.service.app_for(round_id, "round"), round_id, check_wallets=True)
    if not verdict.ok:
        verification_failed("round")
    return convert.verdict(round_id, verdict)


def export_round(env: Env, call: Call, request: pb.ExportRoundRequest) -> pb.ExportRoundResponse:
    round_id = _auditable(env, call, request)
    bundle = audit.export_bundle(env.service.app_for(round_id, "round"), round_id)
    principal = call.principal
    if principal.role is Role.PLAYER and principal.player:  # its own money only
        bundle = for_recipient(bundle, f"player:{principal.player}")
    elif principal.role is Role.AUDITOR:  # (an operator's is the export as made: made for the operator)
        bundle = for_recipient(bundle, "auditor")
    return pb.ExportRoundResponse(
        round_id=round_id,
        bundle_json=audit.bundle_bytes(bundle).decode("utf-8"),
        bundle_digest=str(bundle.get("bundle_digest", "")),
    )


def get_inclusion_proof(env: Env, call: Call, request: pb.GetInclusionProofRequest) -> pb.GetInclusionProofResponse:
    round_id = _auditable(env, call, request)
    proof = env.service.app_for(round_id, "round").inclusion_proof(round_id)
    if proof is None:
        raise NotFound(f"no checkpoint covers round {round_id!r} yet", round=round_id)
    return pb.GetInclusionProofResponse(
        round_id=round_id,
        table_id=str(proof["table_id"]),
        period=str(proof["period"]),
        checkpoint_position=int(proof["checkpoint_position"]),
        checkpoint_digest=str(proof["checkpoint_digest"]),
        root=str(proof["root"]),
        size=int(proof["size"]),
        index=int(proof["index"]),
        leaf=str(proof["leaf"]),
        path=[str(h) for h in proof["path"]],
    )


RPCS: tuple[Rpc, ...] = (
    query("AuditService", "ReplayRound", READERS, replay_round, costly=True),
    query("AuditService", "VerifyRound", READERS, verify_round, costly=True),
    query("AuditService", "ExportRound", READERS, export_round, costly=True),
    query("AuditService", "GetInclusionProof", READERS, get_inclusion_proof, costly=True),
)
