"""The Queries service: a table, a round, what a seat may do, the last rounds."""

from __future__ import annotations

from pokdeng_core.limits import MAX_RECENT_ROUNDS
from pokdeng_service.api import convert
from pokdeng_service.api.replies import viewer
from pokdeng_service.api.requests import Fields
from pokdeng_service.api.rpcs import READERS, Call, Env, Rpc, query
from pokdeng_service.api.v1 import pokdeng_pb2 as pb
from pokdeng_service.application import access
from pokdeng_service.application.errors import FieldViolation, NotFound, PermissionDenied, RequestInvalid
from pokdeng_service.application.principal import Role
from pokdeng_service.application.views import RoundView


def readable_round(env: Env, call: Call, round_id: str) -> RoundView:
    """The round, if the caller may read it: a player only a round it takes part in."""
    view = env.service.app_for(round_id, "round").get_round(round_id)
    access.require_round_reader(call.principal, view)
    return view


def get_table(env: Env, call: Call, request: pb.GetTableRequest) -> pb.Table:
    f = Fields()
    f.ident("table_id", request.table_id)
    f.done()
    view = env.service.app_for(request.table_id).get_table(request.table_id)
    return convert.table(access.table_for(call.principal, view))


def get_round(env: Env, call: Call, request: pb.GetRoundRequest) -> pb.Round:
    f = Fields()
    f.ident("round_id", request.round_id)
    f.done()
    view = readable_round(env, call, request.round_id)
    return convert.round_(view, convert.visibility_for(viewer(call), view))


def get_legal_commands(env: Env, call: Call, request: pb.GetLegalCommandsRequest) -> pb.LegalCommands:
    f = Fields()
    f.ident("round_id", request.round_id)
    seat = f.seat("seat", request.seat, banker=True) if request.HasField("seat") else None
    f.done()
    principal = call.principal
    app = env.service.app_for(request.round_id, "round")
    state = app.round_state(request.round_id)
    if principal.role is Role.PLAYER:
        if seat is None:
            raise PermissionDenied(f"{principal.describe()} may ask only about its own seats", round=request.round_id)
        holder = state.banker_player if seat == 0 else dict(state.seats).get(seat)
        if holder != principal.player:
            raise PermissionDenied(f"seat {seat} is not held by {principal.describe()}", seat=str(seat))
    answer = pb.LegalCommands(
        round_id=request.round_id,
        phase=convert.PHASE_TO_PB.get(state.phase.value, pb.ROUND_PHASE_UNSPECIFIED),
        commands=list(app.legal_commands(request.round_id, seat)),
    )
    if seat is not None:
        answer.seat = seat
    return answer


def list_recent_rounds(env: Env, call: Call, request: pb.ListRecentRoundsRequest) -> pb.ListRecentRoundsResponse:
    f = Fields()
    f.ident("table_id", request.table_id, required=False)
    f.ident("player", request.player, required=False)
    limit = f.between("limit", request.limit, 1, MAX_RECENT_ROUNDS, default=10)
    f.done()
    principal = call.principal
    player = request.player or None
    if principal.role is Role.PLAYER:
        if player is not None and player != principal.player:
            raise PermissionDenied(f"{principal.describe()} may list only its own rounds", player=player)
        player = principal.player
    views = _recent(env, request.table_id or None, player, limit)
    who = viewer(call)
    return pb.ListRecentRoundsResponse(rounds=[convert.round_(v, convert.visibility_for(who, v)) for v in views])


def _recent(env: Env, table_id: str | None, player: str | None, limit: int) -> list[RoundView]:
    """The last closed rounds, newest first: from the read models, else by walking the table's rounds."""
    if env.recent is not None:
        summaries = env.recent.last_rounds(table_id=table_id, player=player, limit=limit)
        return [env.service.app_for(s.round_id, "round").get_round(s.round_id) for s in reversed(summaries)]
    if table_id is None:
        raise RequestInvalid([FieldViolation("table_id", "name the table (this server has no round index)")])
    app = env.service.app_for(table_id)
    table = app.get_table(table_id)
    out: list[RoundView] = []
    for number in range(table.round_no, 0, -1):  # a table's rounds are "<table_id>#<n>"
        try:
            view = app.get_round(f"{table_id}#{number}")
        except NotFound:
            continue
        if view.phase != "closed":
            continue
        if player is None or player in convert.stakeholders(view):
            out.append(view)
            if len(out) == limit:
                break
    return out


RPCS: tuple[Rpc, ...] = (
    query("Queries", "GetTable", READERS, get_table),
    query("Queries", "GetRound", READERS, get_round),
    query("Queries", "GetLegalCommands", READERS, get_legal_commands),
    query("Queries", "ListRecentRounds", READERS, list_recent_rounds),
)
